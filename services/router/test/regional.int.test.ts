import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import type { AddressInfo, Server, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Result } from '@gw/errors';
import { createServiceClient } from '@gw/grpc';
import type { MethodsOf, ServiceClient } from '@gw/grpc';
import { commonv1, routerv1 } from '@gw/proto';
import type { MessageInitShape } from '@gw/proto';
import { waitUntil } from '@gw/testing';
import { SimAwsIdentities, startSimUpstream } from '../../../bench/sim-upstream/src';
import type { RecordedRequest, RunningSimUpstream } from '../../../bench/sim-upstream/src';
import { spawnRouter } from './router-process';

/**
 * The compiled router against the regional providers' simulators with short upstream timeouts: its AWS
 * chain assumes a role at the simulated STS with a service-account token file, as on EKS (IRSA), and
 * fetches new credentials before the old ones expire; Google's chain reads the simulated metadata
 * server. Timeouts before and after the first byte through Bedrock and Vertex pools.
 */

/** STS credentials that last five minutes: inside the AWS SDK's refresh window, so every call fetches new ones. */
const identities = new SimAwsIdentities(300);
let sim: RunningSimUpstream;
/** Accepts connections and never answers: a Bedrock endpoint that hangs before its first byte. */
let silent: Server;
const silentSockets = new Set<Socket>();
let router: ChildProcess;
let dir: string;
let client: ServiceClient<MethodsOf<typeof routerv1.RouterService>> & { close(): void };

const timeouts = {
  UPSTREAM_STREAM_HEADERS_TIMEOUT_MS: '400',
  UPSTREAM_MESSAGE_TIMEOUT_MS: '600',
  UPSTREAM_BODY_SILENCE_TIMEOUT_MS: '500',
};

function gatewayYaml(simUrl: string, silentUrl: string): string {
  return `
regions:
  - { id: uk-south, jurisdiction: uk }
tiers:
  - { id: uk, providerRegions: [eu-west-2, europe-west2] }
pools:
  - id: bedrock-london
    region: uk-south
    adapter: bedrock
    endpoints: [{ url: '${simUrl}' }]
    bedrock: { region: eu-west-2 }
    processingRegions: [eu-west-2]
  - id: bedrock-london-hanging
    region: uk-south
    adapter: bedrock
    endpoints: [{ url: '${silentUrl}' }]
    bedrock: { region: eu-west-2 }
    processingRegions: [eu-west-2]
  - id: vertex-london
    region: uk-south
    adapter: vertex
    endpoints: [{ url: '${simUrl}' }]
    vertex: { project: demo-project, location: europe-west2 }
    processingRegions: [europe-west2]
models:
  - alias: claude-regional
    displayName: Claude Regional
    createdAt: '2025-01-01T00:00:00Z'
    pricing: { inputGbpPerMtok: 1, outputGbpPerMtok: 5 }
    servedBy:
      - { pool: bedrock-london, upstreamModel: 'anthropic.claude-sonnet-4-5-20250929-v1:0' }
      - { pool: bedrock-london-hanging, upstreamModel: 'anthropic.claude-sonnet-4-5-20250929-v1:0' }
      - { pool: vertex-london, upstreamModel: 'claude-sonnet-4-5@20250929' }
plans:
  - id: int
    residency: [uk]
    models: all
    limits: { requestsPerMinute: 100, concurrency: 10, monthlyTokens: 1000000 }
    overage: { enabled: false, gbpPerMtok: 0 }
`;
}

beforeAll(async () => {
  sim = await startSimUpstream({ host: '127.0.0.1', port: 0, awsIdentities: identities });
  silent = createServer((socket) => {
    silentSockets.add(socket);
    socket.on('close', () => silentSockets.delete(socket));
  });
  await new Promise<void>((done) => silent.listen(0, '127.0.0.1', done));
  dir = await mkdtemp(join(tmpdir(), 'router-regional-'));
  const configPath = join(dir, 'gateway.yaml');
  await writeFile(configPath, gatewayYaml(sim.url, `http://127.0.0.1:${(silent.address() as AddressInfo).port}`));
  // A projected service-account token's shape: a JWT (the simulated STS does not check its signature).
  const tokenFile = join(dir, 'token');
  await writeFile(tokenFile, 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6Z3c6cm91dGVyIn0.c2ln');
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH ?? '',
    GATEWAY_CONFIG: configPath,
    GRPC_PORT: '0',
    GRPC_INSECURE: 'true',
    METRICS_PORT: '0',
    LOG_LEVEL: 'info',
    ...timeouts,
    // The AWS chain's web identity step, as EKS sets it for a pod whose service account names a role.
    AWS_WEB_IDENTITY_TOKEN_FILE: tokenFile,
    AWS_ROLE_ARN: 'arn:aws:iam::123456789012:role/gateway-router',
    AWS_ROLE_SESSION_NAME: 'gateway-router',
    AWS_REGION: 'eu-west-2',
    AWS_ENDPOINT_URL_STS: sim.url,
    // No shared AWS files of the machine may take part.
    AWS_CONFIG_FILE: join(dir, 'no-aws-config'),
    AWS_SHARED_CREDENTIALS_FILE: join(dir, 'no-aws-credentials'),
    GCE_METADATA_HOST: new URL(sim.url).host,
  };
  const started = await spawnRouter(env);
  router = started.process;
  client = createServiceClient(routerv1.RouterService, {
    address: started.address,
    callee: 'router',
    defaultTimeoutMs: 20_000,
    transport: { kind: 'plaintext' },
  });
});

afterAll(async () => {
  client?.close();
  if (router && router.exitCode === null) {
    router.kill('SIGTERM');
    await once(router, 'exit');
  }
  for (const socket of silentSockets) socket.destroy();
  await new Promise<void>((done) => (silent ? silent.close(() => done()) : done()));
  await sim?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

beforeEach(() => fetch(`${sim.url}/_sim/requests`, { method: 'DELETE' }));

async function simRequests(): Promise<RecordedRequest[]> {
  return (await (await fetch(`${sim.url}/_sim/requests`)).json()) as RecordedRequest[];
}

type CompleteRequestInit = MessageInitShape<typeof routerv1.CompleteRequestSchema>;

function completeRequest(text: string, pools: string[], stream: boolean): CompleteRequestInit {
  const upstreamModels: Record<string, string> = {
    'bedrock-london': 'anthropic.claude-sonnet-4-5-20250929-v1:0',
    'bedrock-london-hanging': 'anthropic.claude-sonnet-4-5-20250929-v1:0',
    'vertex-london': 'claude-sonnet-4-5@20250929',
  };
  const body = { model: 'claude-regional', max_tokens: 256, messages: [{ role: 'user', content: text }] };
  return {
    requestId: `req_reg${Math.random().toString(36).slice(2, 12)}`,
    key: {
      keyId: 'key_int',
      accountId: 'acct_int',
      environment: commonv1.Environment.LIVE,
      residency: commonv1.Residency.UK,
    },
    model: 'claude-regional',
    pools: pools.map((poolId) => ({ poolId, upstreamModel: upstreamModels[poolId]! })),
    bodyJson: Buffer.from(JSON.stringify(stream ? { ...body, stream: true } : body)),
    stream,
    headers: { 'anthropic-version': '2023-06-01' },
  };
}

async function complete(request: CompleteRequestInit): Promise<Result<routerv1.CompleteResponse>[]> {
  const items: Result<routerv1.CompleteResponse>[] = [];
  for await (const item of client.complete(request)) items.push(item);
  return items;
}

function kinds(items: Result<routerv1.CompleteResponse>[]): string[] {
  return items.map((item) => {
    if (!item.ok) return `error:${item.error.type}`;
    const { event } = item.value;
    return event.case === 'sse' ? event.value.event : (event.case ?? 'empty');
  });
}

function startedPool(items: Result<routerv1.CompleteResponse>[]): string | undefined {
  const first = items[0];
  return first?.ok && first.value.event.case === 'started' ? first.value.event.value.poolId : undefined;
}

describe("the router's AWS chain with web identity (EKS service accounts)", () => {
  it('signs Bedrock with credentials from STS, and fetches new ones before they expire', async () => {
    // The simulator accepts only credentials its STS issued (with their session token) or its long-term
    // key, which the router was not given. Five-minute credentials are within the SDK's refresh window from
    // the start, so each use renews them: in the background while the ones held are still valid (the SDK
    // signs with those meanwhile, and a use during a renewal starts none), so each renewal is waited for.
    const before = identities.issuedCount;
    for (const [index, text] of ['Signed once', 'Signed again'].entries()) {
      const items = await complete(completeRequest(text, ['bedrock-london'], false));
      expect(kinds(items)).toEqual(['started', 'message', 'finished']);
      await waitUntil(
        () => identities.issuedCount - before,
        { what: `credentials renewed after use ${index + 1}`, timeoutMs: 5_000 },
        (renewals) => renewals >= index + 1,
      );
    }
    expect((await simRequests()).map((request) => request.outcome)).toEqual(['completed', 'completed']);
  });
});

describe('timeouts through the regional pools', () => {
  it('moves on from a Bedrock endpoint that sends no headers in time to the Vertex pool, streamed', async () => {
    const startedAt = Date.now();
    const items = await complete(completeRequest('Hanging London', ['bedrock-london-hanging', 'vertex-london'], true));
    expect(startedPool(items)).toBe('vertex-london');
    expect(kinds(items).at(-1)).toBe('finished');
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(Number(timeouts.UPSTREAM_STREAM_HEADERS_TIMEOUT_MS));
    expect((await simRequests()).map((request) => request.path)).toEqual([
      '/v1/projects/demo-project/locations/europe-west2/publishers/anthropic/models/claude-sonnet-4-5%4020250929:streamRawPredict',
    ]);
  });

  it('says the model service did not answer in time when every pool timed out', async () => {
    const items = await complete(completeRequest('Nobody answers', ['bedrock-london-hanging'], false));
    expect(items).toEqual([
      { ok: false, error: expect.objectContaining({ type: 'api_error', message: expect.stringMatching(/in time/) }) },
    ]);
  });

  it.each([
    ['Bedrock', 'bedrock-london'],
    ['Vertex', 'vertex-london'],
  ])('ends a %s stream that goes silent after its first events, and closes the upstream call', async (_name, pool) => {
    const items = await complete(completeRequest('one two three sim:pace=3000', [pool], true));
    expect(kinds(items).slice(0, 2)).toEqual(['started', 'message_start']);
    expect(kinds(items).at(-1)).toBe('error:api_error');
    expect(items.at(-1)).toEqual({
      ok: false,
      error: expect.objectContaining({ message: expect.stringMatching(/went silent/) }),
    });
    const [upstream] = await waitUntil(
      () => simRequests(),
      { what: 'the upstream call closed by the router' },
      (requests) => requests[0]?.outcome !== 'in_progress',
    );
    expect(upstream!.outcome).toBe('client_closed');
  });
});
