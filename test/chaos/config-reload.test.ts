import { readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { waitUntil } from '@gw/testing';
import { chaosGatewayConfig, chaosStack, chaosState, startWhatStopped } from './chaos-stack';
import type { ChaosStack } from './chaos-stack';

/**
 * A platform team edits the gateway YAML of a running stack (the stack's own copy, as a ConfigMap
 * update would): a model added is served without a restart, and a bad edit is refused by every
 * service, logged and counted, while the configuration in force keeps serving.
 */

let stack: ChaosStack;
let original: string;

const print = (line: string) => process.stdout.write(`${line}\n`);
const services = ['ingress', 'auth', 'policy', 'quota', 'router', 'metering'] as const;

beforeAll(async () => {
  stack = chaosStack();
  original = await readFile(chaosGatewayConfig, 'utf8');
  await startWhatStopped(stack);
}, 180_000);

/** Replaces the file whole, as the kubelet's symlink swap or an editor's rename does. */
async function replaceConfig(text: string): Promise<void> {
  await writeFile(`${chaosGatewayConfig}.tmp`, text);
  await rename(`${chaosGatewayConfig}.tmp`, chaosGatewayConfig);
}

/** `gateway_config_reload_total` of each service, by outcome. */
async function reloads(outcome: 'applied' | 'rejected'): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const service of services) {
    const response = await fetch(`http://127.0.0.1:${stack.ports.metrics[service]}/metrics`);
    const line = (await response.text())
      .split('\n')
      .find(
        (candidate) =>
          candidate.startsWith('gateway_config_reload_total{') && candidate.includes(`outcome="${outcome}"`),
      );
    counts[service] = Number(line?.slice(line.lastIndexOf(' ') + 1) ?? NaN);
  }
  return counts;
}

const everyService = (before: Record<string, number>) => (after: Record<string, number>) =>
  services.every((service) => after[service]! > before[service]!);

async function admin<T>(method: string, path: string, body: unknown): Promise<T> {
  const response = await fetch(`${stack.adminUrl}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${stack.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(201);
  return (await response.json()) as T;
}

function ask(key: string, model: string): Promise<Response> {
  return fetch(`${stack.baseUrl}/v1/messages`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model, max_tokens: 50, messages: [{ role: 'user', content: 'hello there' }] }),
  });
}

const newModel = `  - alias: claude-sonnet-6
    displayName: Claude Sonnet 6
    createdAt: '2026-01-01T00:00:00Z'
    pricing: { inputGbpPerMtok: 2.4, outputGbpPerMtok: 12 }
    servedBy:
      - { pool: anthropic-eu-west, upstreamModel: claude-sonnet-6 }
`;

describe('the gateway YAML changed while the stack runs', () => {
  afterAll(async () => {
    // Later tests run on the file the stack started with.
    if ((await readFile(chaosGatewayConfig, 'utf8')) === original) return;
    const before = await reloads('applied');
    await replaceConfig(original);
    await waitUntil(
      () => reloads('applied'),
      { what: 'the original file back in force', timeoutMs: 30_000 },
      everyService(before),
    );
  });

  it('serves a model added to the file without a restart, and keeps serving through a bad edit', async () => {
    const account = await admin<{ id: string }>('POST', '/accounts', { name: 'config-reload', plan: 'pro' });
    const { key } = await admin<{ key: string }>('POST', '/keys', {
      account_id: account.id,
      name: 'config-reload',
      environment: 'live',
      residency: 'eu',
      privacy_mode: 'off',
    });
    const unknown = await ask(key, 'claude-sonnet-6');
    expect(unknown.status).toBe(404);

    const applied = await reloads('applied');
    const editedAt = Date.now();
    await replaceConfig(original.replace('\nplans:\n', `\n${newModel}\nplans:\n`));
    const served = await waitUntil(
      () => ask(key, 'claude-sonnet-6'),
      {
        what: 'the new model to be served',
        timeoutMs: 30_000,
        intervalMs: 200,
      },
      (response) => response.status === 200,
    );
    print(`  new model served ${Date.now() - editedAt} ms after the edit`);
    expect(((await served.json()) as { model: string }).model).toBe('claude-sonnet-6');
    const listed = (await (await fetch(`${stack.baseUrl}/v1/models`, { headers: { 'x-api-key': key } })).json()) as {
      data: { id: string }[];
    };
    expect(listed.data.map((model) => model.id)).toContain('claude-sonnet-6');
    // Every service took the file, not only those the request above needed.
    await waitUntil(
      () => reloads('applied'),
      { what: 'every service to reload', timeoutMs: 30_000 },
      everyService(applied),
    );

    // A bad edit: the model added twice. Refused everywhere, said why, and nothing stops serving.
    const rejected = await reloads('rejected');
    const withModel = await readFile(chaosGatewayConfig, 'utf8');
    await replaceConfig(withModel.replace('\nplans:\n', `\n${newModel}\nplans:\n`));
    await waitUntil(
      () => reloads('rejected'),
      { what: 'every service to refuse the bad file', timeoutMs: 30_000 },
      everyService(rejected),
    );
    const policyLog = await readFile(join(chaosState.logs, 'policy.log'), 'utf8');
    const refusal = policyLog.split('\n').find((line) => line.includes('gateway configuration file refused'));
    expect(refusal).toContain('duplicate model alias \\"claude-sonnet-6\\"');
    expect((await ask(key, 'claude-sonnet-6')).status).toBe(200);
    expect((await ask(key, 'claude-sonnet-5')).status).toBe(200);
  });
});
