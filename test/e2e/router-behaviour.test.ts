import Anthropic from '@anthropic-ai/sdk';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { waitUntil } from '@gw/testing';
import { harness } from './harness';
import { admin } from './http';

/**
 * The router's behaviour as a client of the gateway sees it, through the whole stack with the
 * official SDK: the test-key stub's magic texts (services/router/README.md) and a client that goes
 * away mid-stream.
 */

const h = harness();
const model = 'claude-sonnet-5';
const sdk = (apiKey: string) => new Anthropic({ baseURL: h.baseUrl, apiKey, maxRetries: 0 });

interface Created {
  id: string;
  key?: string;
}

async function liveKey(plan: string, residency: 'uk' | 'eu'): Promise<string> {
  const account = await admin<Created>(h, 'POST', '/accounts', { name: `router-${plan}-${residency}`, plan });
  expect(account.status).toBe(201);
  const key = await admin<Created>(h, 'POST', '/keys', {
    account_id: account.body.id,
    name: 'router-behaviour',
    environment: 'live',
    residency,
    privacy_mode: 'off',
  });
  expect(key.status).toBe(201);
  return key.body.key!;
}

type ErrorClass = new (...args: never[]) => InstanceType<typeof Anthropic.APIError>;

/** Every error type of the catalogue, with the HTTP status and the SDK class a client gets. */
const errorCases: [string, number, ErrorClass][] = [
  ['authentication_error', 401, Anthropic.AuthenticationError],
  ['permission_error', 403, Anthropic.PermissionDeniedError],
  ['not_found_error', 404, Anthropic.NotFoundError],
  ['invalid_request_error', 400, Anthropic.BadRequestError],
  ['request_too_large', 413, Anthropic.APIError],
  ['rate_limit_error', 429, Anthropic.RateLimitError],
  ['quota_exceeded', 429, Anthropic.RateLimitError],
  ['residency_unavailable', 422, Anthropic.UnprocessableEntityError],
  ['overloaded_error', 503, Anthropic.InternalServerError],
  ['api_error', 500, Anthropic.InternalServerError],
];

describe('the test-key stub through the gateway', () => {
  it.each(errorCases)('gw-test:error:%s gives HTTP %d and the SDK class', async (type, status, errorClass) => {
    const params = { model, max_tokens: 16, messages: [{ role: 'user' as const, content: `gw-test:error:${type}` }] };
    for (const call of [
      () => sdk(h.testKey).messages.create(params),
      () => sdk(h.testKey).messages.stream(params).finalMessage(),
    ]) {
      const error = await call().catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(errorClass);
      const apiError = error as InstanceType<typeof Anthropic.APIError>;
      expect(apiError.status).toBe(status);
      expect(apiError.type).toBe(type);
      expect(apiError.error).toEqual({
        type: 'error',
        error: { type, message: expect.stringContaining(`gw-test:error:${type}`) },
        request_id: apiError.requestID,
      });
    }
  });

  it('gw-test:stream-error sends deltas, then an error event the SDK stream throws as overloaded_error', async () => {
    const stream = sdk(h.testKey).messages.stream({
      model,
      max_tokens: 64,
      messages: [{ role: 'user', content: 'Tell me something gw-test:stream-error' }],
    });
    const texts: string[] = [];
    stream.on('text', (text) => texts.push(text));
    const error = await stream.finalMessage().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Anthropic.APIError);
    const apiError = error as InstanceType<typeof Anthropic.APIError>;
    expect(apiError.type).toBe('overloaded_error');
    expect(apiError.error).toEqual(
      expect.objectContaining({ type: 'error', error: expect.objectContaining({ type: 'overloaded_error' }) }),
    );
    expect(texts).toHaveLength(3);
  });

  it('gw-test:tool-use answers a tool call the SDK assembles, and the tool result goes back', async () => {
    const client = sdk(h.testKey);
    const tools: Anthropic.Tool[] = [
      {
        name: 'get_forecast',
        description: 'The weather forecast for a city.',
        input_schema: {
          type: 'object',
          properties: {
            city: { type: 'string' },
            unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
            days: { type: 'integer' },
          },
          required: ['city'],
        },
      },
    ];
    const question: Anthropic.MessageParam = { role: 'user', content: 'Forecast for Oslo? gw-test:tool-use' };
    const stream = client.messages.stream({ model, max_tokens: 256, tools, messages: [question] });
    const partials: string[] = [];
    stream.on('inputJson', (partial) => partials.push(partial));
    const final = await stream.finalMessage();
    expect(final.stop_reason).toBe('tool_use');
    expect(final.content).toEqual([
      {
        type: 'tool_use',
        id: expect.stringMatching(/^toolu_[0-9A-Za-z]{24}$/),
        name: 'get_forecast',
        input: { city: expect.any(String), unit: 'celsius', days: 1 },
      },
    ]);
    expect(partials.length).toBeGreaterThan(1);
    expect(JSON.parse(partials.join(''))).toEqual((final.content[0] as Anthropic.ToolUseBlock).input);
    expect(final.usage.output_tokens).toBe(partials.length);

    const created = await client.messages.create({ model, max_tokens: 256, tools, messages: [question] });
    expect(created.stop_reason).toBe('tool_use');
    expect(created.content).toEqual([
      expect.objectContaining({
        type: 'tool_use',
        name: 'get_forecast',
        input: (final.content[0] as Anthropic.ToolUseBlock).input,
      }),
    ]);

    const toolUse = final.content[0] as Anthropic.ToolUseBlock;
    const answer = await client.messages.create({
      model,
      max_tokens: 256,
      tools,
      messages: [
        question,
        { role: 'assistant', content: final.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUse.id, content: 'Sunny, 21 degrees' }] },
      ],
    });
    expect(answer.stop_reason).toBe('end_turn');
    expect(answer.content).toEqual([expect.objectContaining({ type: 'text', text: expect.any(String) })]);
  });
});

describe('a client that goes away mid-stream', () => {
  // Claude Sonnet 5's first EU pool is Bedrock in Ireland (an event stream); Claude Haiku's the Anthropic API (SSE).
  it.each([
    ['the Anthropic API', 'claude-haiku-4-5', 0],
    ['Bedrock', model, 4],
  ])('makes %s see its connection closed within 100 ms', async (_pool, streamModel, simIndex) => {
    const key = await liveKey('pro', 'eu');
    const simEu = h.simUrls[simIndex]!;
    const marker = `disconnect-${Date.now()}`;
    // The log is polled below: bodies of earlier tests (some of tens of MiB) would make each poll slow.
    await fetch(`${simEu}/_sim/requests`, { method: 'DELETE' });
    const stream = sdk(key).messages.stream({
      model: streamModel,
      max_tokens: 256,
      messages: [{ role: 'user', content: `sim:pace=200 ${marker} one two three four five six seven eight` }],
    });
    const firstDelta = new Promise<void>((resolve) => stream.once('text', () => resolve()));
    const outcome = stream.finalMessage().catch((caught: unknown) => caught);
    await firstDelta;
    const abortedAt = Date.now();
    stream.abort();
    expect(await outcome).toBeInstanceOf(Anthropic.APIUserAbortError);

    // The simulator records no close time: poll its log closely; the instant the close is seen is an
    // upper bound of when it happened.
    interface Recorded {
      body: { messages?: { content?: unknown }[] } | null;
      outcome: string;
      closedAt?: string;
    }
    const record = await waitUntil(
      async () => {
        const log = (await (await fetch(`${simEu}/_sim/requests`)).json()) as Recorded[];
        return log.find((entry) => JSON.stringify(entry.body ?? {}).includes(marker));
      },
      { what: "the simulator's record of the closed request", timeoutMs: 3000, intervalMs: 2 },
      (found) => found !== undefined && found.outcome !== 'in_progress',
    );
    const seenAt = Date.now();
    expect(record?.outcome).toBe('client_closed');
    const closedAfterMs = record?.closedAt !== undefined ? Date.parse(record.closedAt) - abortedAt : seenAt - abortedAt;
    expect(closedAfterMs).toBeLessThan(100);

    // The router's side: its call ended as cancelled (it aborts the upstream request at that moment).
    const requestId = stream.request_id;
    expect(requestId).toMatch(/^req_/);
    const ended = await waitUntil(
      async () =>
        (await readFile(join(h.logsDir, 'router.log'), 'utf8'))
          .split('\n')
          .filter((line) => line.includes(requestId!) && line.includes('"completion ended"'))
          .map((line) => JSON.parse(line) as { time: string; outcome: string })[0],
      { what: "the router's line for the ended call", timeoutMs: 3000 - (Date.now() - abortedAt) },
    );
    expect(ended?.outcome).toBe('cancelled');
    expect(Date.parse(ended!.time) - abortedAt).toBeLessThan(100);
  });
});
