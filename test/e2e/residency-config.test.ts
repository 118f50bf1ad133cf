import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from '@gw/local-stack';

const run = promisify(execFile);

/**
 * Residency to the provider region, as the processes see it: the local stack's gateway YAML with one
 * edit per rule, and the router (and policy, which reads the same file) refusing to start on it with one
 * line naming the place and the rule. A reload reads the file with the same parser, so it refuses the same.
 */
const edits: [string, (yaml: string) => string, string][] = [
  [
    'a region outside the tier',
    (yaml) => yaml.replace('providerRegions: [eu-west-2]', 'providerRegions: [eu-west-1]'),
    'pools.bedrock-uk-london.processingRegions.0: region eu-west-2 is not allowed in tier uk (allowed: eu-west-1)',
  ],
  [
    'a global. profile',
    (yaml) =>
      yaml.replace(
        "{ pool: bedrock-uk-london, upstreamModel: 'anthropic.claude",
        "{ pool: bedrock-uk-london, upstreamModel: 'global.anthropic.claude",
      ),
    'models.claude-sonnet-5.servedBy.3.upstreamModel: "global." profiles may route to any commercial region and are never inside a residency tier',
  ],
  [
    'an eu. profile whose destinations are not declared',
    (yaml) =>
      yaml.replace(
        "{ pool: bedrock-eu-ireland, upstreamModel: 'anthropic.claude",
        "{ pool: bedrock-eu-ireland, upstreamModel: 'eu.anthropic.claude",
      ),
    'models.claude-sonnet-5.servedBy.0.upstreamModel: "eu." profiles may route to eu-central-1, eu-central-2, eu-north-1, eu-south-1, eu-south-2, eu-west-1, eu-west-2, eu-west-3; the pool\'s processingRegions lack eu-central-1, eu-central-2, eu-north-1, eu-south-1, eu-south-2, eu-west-2, eu-west-3',
  ],
  [
    'the Vertex global location',
    (yaml) => yaml.replace('location: europe-west4 }', 'location: global }'),
    'pools.vertex-eu-netherlands.vertex.location: the Vertex location "global" may process anywhere and is never inside a residency tier',
  ],
  [
    'a pool that declares no processing regions',
    (yaml) => yaml.replace('    processingRegions: [europe-west4]\n', ''),
    'pools.vertex-eu-netherlands.processingRegions: a vertex pool must declare every region it may process in',
  ],
];

let dir = '';
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gw-residency-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('residency refusals at start', () => {
  it.each(edits)(
    'refuses %s',
    async (name, edit, message) => {
      const original = await readFile(join(repoRoot, 'deploy/local/gateway.yaml'), 'utf8');
      const edited = edit(original);
      expect(edited).not.toBe(original);
      const path = join(dir, `${name.replace(/\W+/g, '-')}.yaml`);
      await writeFile(path, edited);
      for (const service of ['router', 'policy']) {
        const failure = await run(process.execPath, [join(repoRoot, `services/${service}/dist/main.js`)], {
          env: {
            PATH: process.env.PATH ?? '',
            GATEWAY_CONFIG: path,
            GRPC_INSECURE: 'true',
            GRPC_PORT: '0',
            METRICS_PORT: '0',
          },
          // Generous: on a loaded machine a process takes seconds to load its modules before it reads the file.
          timeout: 30_000,
        }).then(
          () => undefined,
          (error: { code?: number; stderr: string }) => error,
        );
        expect(failure?.code).toBe(2);
        expect(failure?.stderr.trim()).toBe(`invalid gateway configuration: ${message}`);
      }
    },
    90_000,
  );
});
