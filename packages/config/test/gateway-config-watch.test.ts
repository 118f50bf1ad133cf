import { mkdtemp, readFile, rename, rm, symlink, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitUntil } from '@gw/testing';
import { parseGatewayConfig, readGatewayConfigFile, watchGatewayConfig } from '../src';
import type { GatewayConfig, GatewayConfigReload, GatewayConfigWatch } from '../src';

const yaml = (models: string[]) => `
regions: [{ id: eu-west, jurisdiction: eu }]
pools: [{ id: p1, region: eu-west, adapter: anthropic, endpoints: [{ url: "http://127.0.0.1:9101" }] }]
models:
${models
  .map(
    (alias) => `  - alias: ${alias}
    displayName: ${alias}
    createdAt: '2025-01-01T00:00:00Z'
    pricing: { inputGbpPerMtok: 1, outputGbpPerMtok: 2 }
    servedBy: [{ pool: p1, upstreamModel: ${alias} }]`,
  )
  .join('\n')}
plans:
  - id: pro
    residency: [eu]
    models: all
    limits: { requestsPerMinute: 10, concurrency: 2, monthlyTokens: 1000 }
    overage: { enabled: false, gbpPerMtok: 0 }
`;

/** Writes a file whole (a rename), as an editor or the kubelet does: the watch never reads it half-written. */
async function replaceFile(path: string, text: string): Promise<void> {
  await writeFile(`${path}.tmp`, text);
  await rename(`${path}.tmp`, path);
}

const aliases = (config: GatewayConfig | undefined) => config?.models.map((model) => model.alias);

describe('duplicate ids in the gateway YAML', () => {
  const valid = yaml(['m1', 'm2']);

  it.each([
    [
      'region',
      valid.replace(
        'regions: [{ id: eu-west, jurisdiction: eu }]',
        'regions: [{ id: eu-west, jurisdiction: eu }, { id: eu-west, jurisdiction: uk }]',
      ),
      'regions.eu-west.id: duplicate region id "eu-west": regions[0] and regions[1] both use it',
    ],
    [
      'pool',
      valid.replace(
        'pools: [{ id: p1,',
        'pools: [{ id: p1, region: eu-west, adapter: openai, endpoints: [{ url: "http://127.0.0.1:9102" }] }, { id: p1,',
      ),
      'pools.p1.id: duplicate pool id "p1": pools[0] and pools[1] both use it',
    ],
    [
      'model',
      yaml(['m1', 'm2', 'm1']),
      'models.m1.alias: duplicate model alias "m1": models[0] and models[2] both use it',
    ],
    [
      'plan',
      valid + valid.slice(valid.indexOf('  - id: pro')),
      'plans.pro.id: duplicate plan id "pro": plans[0] and plans[1] both use it',
    ],
  ])('refuses a duplicate %s id, naming both entries', (_kind, text, message) => {
    expect(() => parseGatewayConfig(text, {})).toThrow(`invalid gateway configuration: ${message}`);
  });

  it('takes the same ids in different lists', () => {
    const text = valid.replace('plans:\n  - id: pro', 'plans:\n  - id: p1');
    expect(parseGatewayConfig(text, {}).plans[0]!.id).toBe('p1');
  });
});

describe('watchGatewayConfig', () => {
  let dir: string;
  let watch: GatewayConfigWatch | undefined;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gateway-config-'));
  });

  afterEach(async () => {
    watch?.close();
    await rm(dir, { recursive: true, force: true });
  });

  function follow(path: string, initial: Awaited<ReturnType<typeof readGatewayConfigFile>>) {
    const applied: GatewayConfig[] = [];
    const reports: GatewayConfigReload[] = [];
    watch = watchGatewayConfig(path, initial, {
      apply: (config) => applied.push(config),
      report: (reload) => reports.push(reload),
      env: {},
      pollIntervalMs: 60_000,
      settleMs: 10,
    });
    return { applied, reports, watch };
  }

  it('puts a valid new file in force, and nothing happens while the text is the same', async () => {
    const path = join(dir, 'gateway.yaml');
    await writeFile(path, yaml(['m1']));
    const initial = await readGatewayConfigFile(path, {});
    const { applied, reports, watch } = follow(path, initial);

    await watch.check();
    expect(applied).toEqual([]);

    await replaceFile(path, yaml(['m1', 'm2']));
    await watch.check();
    expect(aliases(applied[0])).toEqual(['m1', 'm2']);
    expect(reports).toEqual([{ outcome: 'applied', loaded: expect.objectContaining({ hash: expect.any(String) }) }]);
    const applied1 = reports[0] as Extract<GatewayConfigReload, { outcome: 'applied' }>;
    expect(applied1.loaded.hash).not.toBe(initial.hash);
    await watch.check();
    expect(applied).toHaveLength(1);
  });

  it('keeps the configuration in force when the new file is invalid, says why once, and takes the next good one', async () => {
    const path = join(dir, 'gateway.yaml');
    await writeFile(path, yaml(['m1']));
    const { applied, reports, watch } = follow(path, await readGatewayConfigFile(path, {}));

    await replaceFile(path, yaml(['m1', 'm1']));
    await watch.check();
    await watch.check();
    expect(applied).toEqual([]);
    expect(reports).toEqual([
      {
        outcome: 'rejected',
        hash: expect.any(String),
        reason: expect.stringContaining('duplicate model alias "m1": models[0] and models[1]'),
      },
    ]);

    await replaceFile(path, 'regions: [');
    await watch.check();
    expect(reports[1]).toMatchObject({ outcome: 'rejected', reason: expect.stringContaining('not valid YAML') });

    await replaceFile(path, yaml(['m1', 'm3']));
    await watch.check();
    expect(aliases(applied[0])).toEqual(['m1', 'm3']);
    expect(reports.map((report) => report.outcome)).toEqual(['rejected', 'rejected', 'applied']);
  });

  it('refuses on reload what residency refuses at start, keeping the configuration in force', async () => {
    // The local stack's YAML, whose Bedrock and Vertex pools are inside their tiers, edited against each rule.
    const local = await readFile(join(__dirname, '../../../deploy/local/gateway.yaml'), 'utf8');
    const path = join(dir, 'gateway.yaml');
    await writeFile(path, local);
    const { applied, reports, watch } = follow(path, await readGatewayConfigFile(path, {}));
    const edits: [(text: string) => string, string][] = [
      [
        (text) => text.replace('providerRegions: [eu-west-2]', 'providerRegions: [eu-west-1]'),
        'not allowed in tier uk',
      ],
      [
        (text) => text.replace("upstreamModel: 'anthropic.claude", "upstreamModel: 'global.anthropic.claude"),
        '"global."',
      ],
      [(text) => text.replace("upstreamModel: 'anthropic.claude", "upstreamModel: 'eu.anthropic.claude"), '"eu."'],
      [(text) => text.replace('location: europe-west4 }', 'location: global }'), 'location "global"'],
      [(text) => text.replace('    processingRegions: [europe-west4]\n', ''), 'must declare every region'],
    ];
    for (const [edit, reason] of edits) {
      const edited = edit(local);
      expect(edited).not.toBe(local);
      await replaceFile(path, edited);
      await watch.check();
      expect(reports.at(-1)).toMatchObject({ outcome: 'rejected', reason: expect.stringContaining(reason) });
    }
    expect(applied).toEqual([]);
  });

  it('refuses a file its consumer cannot apply, as a bad file', async () => {
    const path = join(dir, 'gateway.yaml');
    await writeFile(path, yaml(['m1']));
    const reports: GatewayConfigReload[] = [];
    watch = watchGatewayConfig(path, await readGatewayConfigFile(path, {}), {
      apply: () => {
        throw new Error('no such adapter');
      },
      report: (reload) => reports.push(reload),
      env: {},
      pollIntervalMs: 60_000,
    });
    await replaceFile(path, yaml(['m1', 'm2']));
    await watch.check();
    expect(reports).toEqual([
      { outcome: 'rejected', hash: expect.any(String), reason: 'could not apply: no such adapter' },
    ]);
  });

  it('follows a ConfigMap update, which swaps a symlink in the directory, without being asked', async () => {
    // The layout the kubelet writes: gateway.yaml -> ..data/gateway.yaml, ..data -> a timestamped directory.
    await mkdir(join(dir, '..v1'));
    await writeFile(join(dir, '..v1', 'gateway.yaml'), yaml(['m1']));
    await symlink('..v1', join(dir, '..data'));
    await symlink(join('..data', 'gateway.yaml'), join(dir, 'gateway.yaml'));
    const path = join(dir, 'gateway.yaml');
    const { applied } = follow(path, await readGatewayConfigFile(path, {}));

    await mkdir(join(dir, '..v2'));
    await writeFile(join(dir, '..v2', 'gateway.yaml'), yaml(['m1', 'm4']));
    await symlink('..v2', join(dir, '..data_tmp'));
    await rename(join(dir, '..data_tmp'), join(dir, '..data'));

    await waitUntil(() => applied.length, { what: 'the swapped file to be applied' });
    expect(aliases(applied[0])).toEqual(['m1', 'm4']);
  });
});
