import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Catalogue } from '@gw/catalogue';
import { parseGatewayConfig } from '@gw/config';
import { createServiceClient } from '@gw/grpc';
import { policyv1 } from '@gw/proto';
import { createLogger } from '@gw/telemetry';
import { waitUntil } from '@gw/testing';
import { CatalogueFollower, catalogueStreamOf } from '../../src/catalogue/catalogue-snapshot';

/**
 * The follower against the real policy process: it receives the catalogue, keeps it while policy is
 * away, and resubscribes to the policy that comes back on the same address. Policy's graceful shutdown
 * ends the open catalogue stream instead of waiting out its grace for it.
 */

const repoRoot = join(__dirname, '../../../..');
const localYaml = readFileSync(join(repoRoot, 'deploy/local/gateway.yaml'), 'utf8');
/** Policy's shutdown grace (services/policy/src/main.ts): an open stream must not make it wait that long. */
const policyShutdownGraceMs = 5_000;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

describe('CatalogueFollower against the policy process', () => {
  let configDir: string;
  let grpcPort: number;
  let policy: ChildProcess | undefined;

  function startPolicy(configFile: string): ChildProcess {
    const child = spawn(process.execPath, [join(repoRoot, 'services/policy/dist/main.js')], {
      env: {
        PATH: process.env.PATH,
        LOG_LEVEL: 'info',
        GRPC_PORT: String(grpcPort),
        GRPC_INSECURE: 'true',
        METRICS_PORT: '0',
        GATEWAY_CONFIG: configFile,
      },
      // Its log lines stay out of the way; a crash still shows.
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    return child;
  }

  beforeAll(async () => {
    configDir = mkdtempSync(join(tmpdir(), 'catalogue-follower-'));
    writeFileSync(join(configDir, 'first.yaml'), localYaml);
    // The second policy serves another catalogue, so that the follower's switch to it shows.
    writeFileSync(
      join(configDir, 'second.yaml'),
      localYaml.replace('displayName: Claude Sonnet 5', 'displayName: Claude Sonnet 5 (second)'),
    );
    // Kept for the restart: the follower's client goes on dialling the same address.
    grpcPort = await freePort();
  });

  afterAll(() => {
    policy?.kill('SIGKILL');
    rmSync(configDir, { recursive: true, force: true });
  });

  it('receives the snapshot, keeps it while policy restarts, and follows the policy that comes back', async () => {
    const expected = (file: string) =>
      Catalogue.fromConfig(parseGatewayConfig(readFileSync(join(configDir, file), 'utf8'), {})).version;
    const [firstVersion, secondVersion] = [expected('first.yaml'), expected('second.yaml')];
    expect(firstVersion).not.toBe(secondVersion);

    policy = startPolicy(join(configDir, 'first.yaml'));
    const policyClient = createServiceClient(policyv1.PolicyService, {
      address: `127.0.0.1:${grpcPort}`,
      callee: 'policy',
      defaultTimeoutMs: 2_000,
      transport: { kind: 'plaintext' },
    });
    const follower = new CatalogueFollower({
      watch: catalogueStreamOf(policyClient),
      logger: createLogger('ingress-test', 'silent'),
    });
    try {
      const first = await waitUntil(() => follower.current(), { what: 'the first snapshot', timeoutMs: 20_000 });
      expect(first?.version).toBe(firstVersion);
      expect(first?.authorize({ plan: 'pro', residency: 'uk', allowedModels: null }, 'claude-sonnet-5')).toEqual({
        ok: true,
        value: [
          expect.objectContaining({ poolId: 'bedrock-uk-london', jurisdiction: 'uk' }),
          expect.objectContaining({ poolId: 'anthropic-uk-south', jurisdiction: 'uk' }),
        ],
      });

      const stoppingAt = Date.now();
      policy.kill('SIGTERM');
      const [exitCode] = (await once(policy, 'exit')) as [number | null];
      expect(exitCode).toBe(0);
      expect(Date.now() - stoppingAt).toBeLessThan(policyShutdownGraceMs);
      expect(follower.current()?.version).toBe(firstVersion);

      policy = startPolicy(join(configDir, 'second.yaml'));
      await waitUntil(
        () => follower.current()?.version,
        { what: 'the snapshot of the restarted policy', timeoutMs: 30_000 },
        (version) => version === secondVersion,
      );
    } finally {
      await follower.close();
      policyClient.close();
    }
  });
});
