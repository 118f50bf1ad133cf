import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Result } from '@gw/errors';
import { createServiceClient, isServing } from '@gw/grpc';
import type { MethodsOf, ServiceClient } from '@gw/grpc';
import { commonv1, routerv1 } from '@gw/proto';
import type { MessageInitShape } from '@gw/proto';
import { echoChunks, estimateChatInputTokens, startSimUpstream } from '../../../bench/sim-upstream/src';
import type { RecordedRequest, RunningSimUpstream } from '../../../bench/sim-upstream/src';
import { estimateInputTokens } from '@gw/usage';
import { spawnRouter } from './router-process';

/**
 * The compiled router as a real process (build first: `pnpm exec tsc -b services/router`) with an
 * `openai` pool on an in-process simulated upstream, called over real gRPC: what reaches the
 * upstream is chat completions, what comes back is Anthropic.
 */

const upstreamKey = 'sim-openai-key-for-router-int';
const promptMarker = 'okapi2718';

let sim: RunningSimUpstream;
let router: ChildProcess;
let routerLogs: string[];
let configDir: string;
let client: ServiceClient<MethodsOf<typeof routerv1.RouterService>> & { close(): void };

function gatewayYaml(simUrl: string): string {
  return `
regions:
  - { id: eu-west, jurisdiction: eu }
pools:
  - { id: openai-eu, region: eu-west, adapter: openai, endpoints: [{ url: '${simUrl}' }], credentialEnv: ROUTER_OPENAI_INT_KEY }
models:
  - alias: llama-int
    displayName: Llama Int
    createdAt: '2025-04-05T00:00:00Z'
    pricing: { inputGbpPerMtok: 0.2, outputGbpPerMtok: 0.6 }
    servedBy:
      - { pool: openai-eu, upstreamModel: meta-llama/Llama-int }
plans:
  - id: int
    residency: [eu]
    models: all
    limits: { requestsPerMinute: 100, concurrency: 10, monthlyTokens: 1000000 }
    overage: { enabled: false, gbpPerMtok: 0 }
`;
}

async function startRouter(configPath: string): Promise<string> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    GATEWAY_CONFIG: configPath,
    GRPC_PORT: '0',
    GRPC_INSECURE: 'true',
    METRICS_PORT: '0',
    LOG_LEVEL: 'info',
    ROUTER_OPENAI_INT_KEY: upstreamKey,
  };
  const started = await spawnRouter(env);
  router = started.process;
  routerLogs = started.logs;
  return started.address;
}

beforeAll(async () => {
  sim = await startSimUpstream({ host: '127.0.0.1', port: 0, apiKey: upstreamKey });
  configDir = await mkdtemp(join(tmpdir(), 'router-openai-int-'));
  const configPath = join(configDir, 'gateway.yaml');
  await writeFile(configPath, gatewayYaml(sim.url));
  const address = await startRouter(configPath);
  expect(await isServing(address, { kind: 'plaintext' })).toBe(true);
  client = createServiceClient(routerv1.RouterService, {
    address,
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
  await sim?.close();
  if (configDir) await rm(configDir, { recursive: true, force: true });
});

beforeEach(() => fetch(`${sim.url}/_sim/requests`, { method: 'DELETE' }));

async function chatRequests(): Promise<RecordedRequest[]> {
  const log = (await (await fetch(`${sim.url}/_sim/requests`)).json()) as RecordedRequest[];
  return log.filter((entry) => entry.path === '/v1/chat/completions');
}

type CompleteRequestInit = MessageInitShape<typeof routerv1.CompleteRequestSchema>;

function completeRequest(
  body: Record<string, unknown>,
  stream = false,
): CompleteRequestInit & { body: Record<string, unknown> } {
  const full = { model: 'llama-int', max_tokens: 256, ...body, ...(stream ? { stream: true } : {}) };
  return {
    body: full,
    requestId: `req_oai${Math.random().toString(36).slice(2, 12)}`,
    key: {
      keyId: 'key_int',
      accountId: 'acct_int',
      environment: commonv1.Environment.LIVE,
      residency: commonv1.Residency.EU,
    },
    model: 'llama-int',
    pools: [{ poolId: 'openai-eu', upstreamModel: 'meta-llama/Llama-int' }],
    bodyJson: Buffer.from(JSON.stringify(full)),
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

/* eslint-disable @typescript-eslint/no-explicit-any -- Anthropic wire JSON read field by field */
function sseData(items: Result<routerv1.CompleteResponse>[]): { event: string; data: any }[] {
  return items.flatMap((item) =>
    item.ok && item.value.event.case === 'sse'
      ? [{ event: item.value.event.value.event, data: JSON.parse(Buffer.from(item.value.event.value.data).toString()) }]
      : [],
  );
}

function messageOf(items: Result<routerv1.CompleteResponse>[]): any {
  const item = items.find((entry) => entry.ok && entry.value.event.case === 'message');
  if (!item?.ok || item.value.event.case !== 'message') throw new Error(`no message: ${kinds(items).join(',')}`);
  return JSON.parse(Buffer.from(item.value.event.value.json).toString());
}

function finishedUsage(items: Result<routerv1.CompleteResponse>[]) {
  const last = items.at(-1);
  if (!last?.ok || last.value.event.case !== 'finished') throw new Error(`no Finished: ${kinds(items).join(',')}`);
  const usage = last.value.event.value.usage!;
  return { input: Number(usage.inputTokens), output: Number(usage.outputTokens) };
}

const lookup = { name: 'lookup', description: 'Looks up.', input_schema: { type: 'object' } };

describe('router over gRPC with an openai pool', () => {
  it('completes: chat completions upstream, an Anthropic Message back, usage in Finished', async () => {
    const text = `Hello ${promptMarker}, echo me.`;
    const request = completeRequest({ system: 'Be brief.', messages: [{ role: 'user', content: text }] });
    const items = await complete(request);
    expect(kinds(items)).toEqual(['started', 'message', 'finished']);
    const started = items[0]!;
    expect(started.ok && started.value.event.case === 'started' && started.value.event.value).toMatchObject({
      poolId: 'openai-eu',
      region: 'eu-west',
    });
    expect(messageOf(items)).toMatchObject({
      type: 'message',
      role: 'assistant',
      // The alias the caller asked for, not the upstream's id.
      model: 'llama-int',
      content: [{ type: 'text', text }],
      stop_reason: 'end_turn',
    });
    const [upstream] = await chatRequests();
    expect(upstream!.body).toEqual({
      model: 'meta-llama/Llama-int',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: text },
      ],
      max_tokens: 256,
    });
    expect(upstream!.headers['anthropic-version']).toBeUndefined();
    expect(upstream!.headers['x-request-id']).toBe(request.requestId);
    expect(finishedUsage(items)).toEqual({
      input: estimateChatInputTokens(upstream!.body as Record<string, unknown>),
      output: echoChunks(text).length,
    });
  });

  it('streams the Anthropic event order, translated as the chunks come', async () => {
    const text = `Streaming ${promptMarker} words back`;
    const items = await complete(completeRequest({ messages: [{ role: 'user', content: text }] }, true));
    expect(kinds(items)).toEqual([
      'started',
      'message_start',
      'content_block_start',
      'ping',
      ...Array<string>(echoChunks(text).length).fill('content_block_delta'),
      'content_block_stop',
      'message_delta',
      'message_stop',
      'finished',
    ]);
    const events = sseData(items);
    events.forEach(({ event, data }) => expect(data.type).toBe(event));
    const echoed = events
      .filter((item) => item.event === 'content_block_delta')
      .map((item) => item.data.delta.text)
      .join('');
    expect(echoed).toBe(text);
    expect(events.find((item) => item.event === 'message_delta')!.data.usage.output_tokens).toBe(
      echoChunks(text).length,
    );
    const [upstream] = await chatRequests();
    expect(upstream!.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    expect(finishedUsage(items).output).toBe(echoChunks(text).length);
  });

  it('answers a tool call as tool_use, streamed, and takes the tool result back', async () => {
    const question = `Weather ${promptMarker}? sim:tool-call`;
    const items = await complete(
      completeRequest({ tools: [lookup], messages: [{ role: 'user', content: question }] }, true),
    );
    const events = sseData(items);
    const start = events.find((item) => item.event === 'content_block_start')!;
    expect(start.data).toEqual({
      type: 'content_block_start',
      index: 0,
      content_block: { type: 'tool_use', id: expect.stringMatching(/^toolu_call_/), name: 'lookup', input: {} },
    });
    const json = events
      .filter((item) => item.event === 'content_block_delta')
      .map((item) => item.data.delta.partial_json)
      .join('');
    expect(JSON.parse(json)).toEqual({ echo: question });
    expect(events.find((item) => item.event === 'message_delta')!.data.delta.stop_reason).toBe('tool_use');

    const reply = await complete(
      completeRequest({
        tools: [lookup],
        messages: [
          { role: 'user', content: question },
          { role: 'assistant', content: [{ ...start.data.content_block, input: JSON.parse(json) }] },
          {
            role: 'user',
            content: [{ type: 'tool_result', tool_use_id: start.data.content_block.id, content: 'Rain' }],
          },
        ],
      }),
    );
    expect(messageOf(reply)).toMatchObject({ content: [{ type: 'text', text: 'Rain' }], stop_reason: 'end_turn' });
  });

  it('maps an upstream 400 to invalid_request_error with its message, and saturation to overloaded_error', async () => {
    expect(await complete(completeRequest({ messages: [{ role: 'user', content: 'sim:error=400' }] }, true))).toEqual([
      {
        ok: false,
        error: expect.objectContaining({ type: 'invalid_request_error', message: 'sim: error status 400 on request' }),
      },
    ]);
    expect(
      await complete(completeRequest({ messages: [{ role: 'user', content: 'sim:error=429 sim:retry-after=2' }] })),
    ).toEqual([{ ok: false, error: expect.objectContaining({ type: 'overloaded_error', retryAfterMs: 2000 }) }]);
  });

  it('ends with the upstream error after Started when it fails mid-stream', async () => {
    const items = await complete(
      completeRequest({ messages: [{ role: 'user', content: 'one two three sim:stream-error-after=2' }] }, true),
    );
    expect(kinds(items)).toEqual([
      'started',
      'message_start',
      'content_block_start',
      'ping',
      'content_block_delta',
      'content_block_delta',
      'error:overloaded_error',
    ]);
  });

  it('answers count_tokens with the estimate: the protocol cannot count', async () => {
    const { requestId, key, model, pools, headers } = completeRequest({});
    const body = { model: 'llama-int', messages: [{ role: 'user', content: `Count ${promptMarker}` }] };
    const counted = await client.countTokens({
      requestId,
      key,
      model,
      pools,
      headers,
      bodyJson: Buffer.from(JSON.stringify(body)),
    });
    expect(counted).toEqual({ ok: true, value: expect.objectContaining({ estimated: true, poolId: '', region: '' }) });
    expect(counted.ok && Number(counted.value.inputTokens)).toBe(estimateInputTokens(body));
    expect(await chatRequests()).toEqual([]);
  });

  it('never logs a prompt, a completion or the upstream key', () => {
    expect(routerLogs.length).toBeGreaterThan(0);
    expect(routerLogs.join('\n')).not.toContain(promptMarker);
    expect(routerLogs.join('\n')).not.toContain(upstreamKey);
  });
});
