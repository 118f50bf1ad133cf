import { errorTypes } from '@gw/errors';
import type { Result } from '@gw/errors';
import { join } from 'node:path';
import type { CompletionEvent, CompletionRequest } from '../src/completion';
import { estimateInputTokens } from '@gw/usage';
import { StubPlans } from '../src/stub-plans';
import {
  completeWithTestStub,
  inputJsonPieces,
  magicText,
  planStubAnswer,
  stubChunks,
  stubToolCall,
} from '../src/test-stub';

function stubRequest(text: string, extra: Record<string, unknown> = {}, requestId = 'req_stub'): CompletionRequest {
  const body = { model: 'claude-sonnet-5', max_tokens: 1024, messages: [{ role: 'user', content: text }], ...extra };
  return {
    requestId,
    accountId: 'account-1',
    environment: 'test',
    residency: 'eu',
    model: 'claude-sonnet-5',
    candidates: [],
    body: Buffer.from(JSON.stringify(body)),
    stream: extra.stream === true,
    headers: {},
    query: '',
  };
}

async function collect(request: CompletionRequest, signal = new AbortController().signal, slowDurationMs = 10_000) {
  const items: Result<CompletionEvent>[] = [];
  for await (const item of completeWithTestStub(request, signal, { slowDurationMs })) items.push(item);
  return items;
}

function sseEvents(items: Result<CompletionEvent>[]) {
  return items.flatMap((item) =>
    item.ok && item.value.kind === 'sse'
      ? [{ event: item.value.event, data: JSON.parse(Buffer.from(item.value.data).toString()) }]
      : [],
  );
}

function streamedText(items: Result<CompletionEvent>[]): string {
  return sseEvents(items)
    .filter((event) => event.event === 'content_block_delta')
    .map((event) => event.data.delta.text)
    .join('');
}

function messageOf(items: Result<CompletionEvent>[]) {
  const message = items.find((item) => item.ok && item.value.kind === 'message');
  if (!message?.ok || message.value.kind !== 'message') throw new Error('no message');
  return JSON.parse(Buffer.from(message.value.json).toString());
}

describe('test-key stub', () => {
  it('answers the same request with the same text, streamed or not, and another request differently', async () => {
    const first = messageOf(await collect(stubRequest('What is the capital of France?')));
    const again = messageOf(await collect(stubRequest('What is the capital of France?', {}, 'req_other')));
    const streamed = streamedText(await collect(stubRequest('What is the capital of France?', { stream: true })));
    const other = messageOf(await collect(stubRequest('What is the capital of Spain?')));
    expect(first.content[0].text.length).toBeGreaterThan(0);
    expect(again.content[0].text).toBe(first.content[0].text);
    expect(streamed).toBe(first.content[0].text);
    expect(other.content[0].text).not.toBe(first.content[0].text);
  });

  it('ignores key order when hashing the request', () => {
    const a = { model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] };
    const b = { messages: [{ content: 'hi', role: 'user' }], max_tokens: 5, model: 'm' };
    expect(stubChunks(a)).toEqual(stubChunks(b));
  });

  it('streams Started, the full event order, then Finished with the usage the events report', async () => {
    const request = stubRequest('Tell me a story', { stream: true });
    const items = await collect(request);
    expect(items.every((item) => item.ok)).toBe(true);
    const kinds = items.map((item) => (item.ok ? item.value.kind : 'error'));
    expect(kinds[0]).toBe('started');
    expect(kinds.at(-1)).toBe('finished');
    const events = sseEvents(items);
    const names = events.map((event) => event.event);
    const deltas = names.filter((name) => name === 'content_block_delta').length;
    expect(deltas).toBeGreaterThanOrEqual(8);
    expect(names).toEqual([
      'message_start',
      'content_block_start',
      'ping',
      ...Array<string>(deltas).fill('content_block_delta'),
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    events.forEach((event) => expect(event.data.type).toBe(event.event));
    expect(events[0]!.data.message).toMatchObject({
      id: expect.stringMatching(/^msg_[0-9A-Za-z]{24}$/),
      role: 'assistant',
      content: [],
      stop_reason: null,
      model: 'claude-sonnet-5',
    });
    expect(events[1]!.data.content_block).toEqual({ type: 'text', text: '' });
    const messageDelta = events.find((event) => event.event === 'message_delta')!.data;
    expect(messageDelta.delta.stop_reason).toBe('end_turn');
    expect(messageDelta.usage.output_tokens).toBe(deltas);
    const finished = items.at(-1)!;
    expect(finished.ok && finished.value.kind === 'finished' && finished.value.usage).toEqual({
      inputTokens: events[0]!.data.message.usage.input_tokens,
      outputTokens: deltas,
      cacheReadInputTokens: 0,
      cacheCreationInputTokens: 0,
    });
  });

  it('answers a non-streamed call with Started, one Message and Finished', async () => {
    const items = await collect(stubRequest('Hello'));
    expect(items.map((item) => item.ok && item.value.kind)).toEqual(['started', 'message', 'finished']);
    const message = messageOf(items);
    expect(message).toMatchObject({ type: 'message', role: 'assistant', stop_reason: 'end_turn', stop_sequence: null });
    const body = JSON.parse(Buffer.from(stubRequest('Hello').body).toString());
    expect(message.usage.input_tokens).toBe(estimateInputTokens(body));
    expect(message.usage.output_tokens).toBe(stubChunks(body).length);
  });

  it('stops at max_tokens', async () => {
    const message = messageOf(await collect(stubRequest('Hello', { max_tokens: 3 })));
    expect(message.stop_reason).toBe('max_tokens');
    expect(message.usage.output_tokens).toBe(3);
  });

  it.each(errorTypes)('gw-test:error:%s fails before the first byte with that type', async (type) => {
    for (const stream of [false, true]) {
      const items = await collect(stubRequest(`gw-test:error:${type}`, { stream }));
      expect(items).toHaveLength(1);
      expect(items[0]).toMatchObject({ ok: false, error: { type } });
    }
  });

  it('gives retryable simulated errors a wait', () => {
    expect(magicText('gw-test:error:overloaded_error')).toMatchObject({ error: { retryAfterMs: 1000 } });
    expect(magicText('gw-test:error:permission_error')).not.toMatchObject({
      error: { retryAfterMs: expect.anything() },
    });
  });

  it('refuses an unknown gw-test error type', async () => {
    const items = await collect(stubRequest('gw-test:error:nonsense'));
    expect(items).toEqual([
      {
        ok: false,
        error: expect.objectContaining({ type: 'invalid_request_error', message: expect.stringContaining('nonsense') }),
      },
    ]);
  });

  it('gw-test:stream-error sends some deltas after Started, then fails', async () => {
    const items = await collect(stubRequest('please gw-test:stream-error now', { stream: true }));
    const names = items.map((item) =>
      item.ok ? (item.value.kind === 'sse' ? item.value.event : item.value.kind) : 'error',
    );
    expect(names).toEqual([
      'started',
      'message_start',
      'content_block_start',
      'ping',
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'error',
    ]);
    expect(items.at(-1)).toMatchObject({ ok: false, error: { type: 'overloaded_error' } });
  });

  it('gw-test:slow spreads the stream over the slow duration and stops at once when cancelled', async () => {
    const began = Date.now();
    const items = await collect(stubRequest('gw-test:slow', { stream: true }), new AbortController().signal, 300);
    expect(Date.now() - began).toBeGreaterThanOrEqual(280);
    expect(items.at(-1)).toMatchObject({ ok: true, value: { kind: 'finished' } });

    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const cancelledAt = Date.now();
    const cancelled = await collect(stubRequest('gw-test:slow', { stream: true }), controller.signal, 10_000);
    expect(Date.now() - cancelledAt).toBeLessThan(1000);
    expect(cancelled.every((item) => item.ok)).toBe(true);
    expect(cancelled.some((item) => item.ok && item.value.kind === 'finished')).toBe(false);
  });

  const weatherTool = {
    name: 'lookup_weather',
    description: 'Weather in a city.',
    input_schema: {
      type: 'object',
      properties: {
        city: { type: 'string' },
        unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
        days: { type: 'integer' },
        hourly: { type: 'boolean' },
      },
      required: ['city'],
    },
  };

  it('gw-test:tool-use streams a tool_use block whose input_json_delta pieces make the input', async () => {
    const request = stubRequest('Weather? gw-test:tool-use', { stream: true, tools: [weatherTool, { name: 'other' }] });
    const items = await collect(request);
    expect(items.every((item) => item.ok)).toBe(true);
    expect(items[0]).toMatchObject({ ok: true, value: { kind: 'started', poolId: 'test-stub' } });
    const events = sseEvents(items);
    const names = events.map((event) => event.event);
    const deltas = events.filter((event) => event.event === 'content_block_delta');
    expect(deltas.length).toBeGreaterThanOrEqual(2);
    expect(names).toEqual([
      'message_start',
      'content_block_start',
      'ping',
      ...Array<string>(deltas.length).fill('content_block_delta'),
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    const block = events[1]!.data.content_block;
    expect(block).toEqual({
      type: 'tool_use',
      id: expect.stringMatching(/^toolu_[0-9A-Za-z]{24}$/),
      name: 'lookup_weather',
      input: {},
    });
    expect(block.id).not.toBe(events[0]!.data.message.id);
    deltas.forEach((event) => expect(event.data.delta.type).toBe('input_json_delta'));
    const input = JSON.parse(deltas.map((event) => event.data.delta.partial_json).join(''));
    expect(input).toEqual({ city: expect.any(String), unit: 'celsius', days: 1, hourly: true });
    const messageDelta = events.find((event) => event.event === 'message_delta')!.data;
    expect(messageDelta.delta.stop_reason).toBe('tool_use');
    expect(messageDelta.usage.output_tokens).toBe(deltas.length);
    expect(items.at(-1)).toMatchObject({
      ok: true,
      value: { kind: 'finished', usage: { outputTokens: deltas.length } },
    });
  });

  it('gw-test:tool-use answers a non-streamed call with the same tool call', async () => {
    const tools = [weatherTool];
    const streamed = sseEvents(await collect(stubRequest('gw-test:tool-use', { stream: true, tools })));
    const message = messageOf(await collect(stubRequest('gw-test:tool-use', { tools })));
    expect(message).toMatchObject({ type: 'message', role: 'assistant', stop_reason: 'tool_use', stop_sequence: null });
    const streamedInput = JSON.parse(
      streamed
        .filter((event) => event.event === 'content_block_delta')
        .map((event) => event.data.delta.partial_json)
        .join(''),
    );
    expect(message.content).toEqual([
      { type: 'tool_use', id: streamed[1]!.data.content_block.id, name: 'lookup_weather', input: streamedInput },
    ]);
  });

  it('gw-test:tool-use calls get_weather with a location when the request has no tools', async () => {
    const message = messageOf(await collect(stubRequest('gw-test:tool-use')));
    expect(message.content).toEqual([
      { type: 'tool_use', id: expect.stringMatching(/^toolu_/), name: 'get_weather', input: { location: 'London' } },
    ]);
    expect(stubToolCall({ tools: [{ name: 'noop', input_schema: { type: 'object' } }] })).toEqual({
      name: 'noop',
      input: {},
    });
    expect(inputJsonPieces({})).toEqual(['{', '}']);
    expect(inputJsonPieces({ location: 'London' }).join('')).toBe('{"location":"London"}');
  });

  it('refuses a body that is not a JSON object', async () => {
    const items = await collect({ ...stubRequest('x'), body: Buffer.from('[1,2]') });
    expect(items).toEqual([{ ok: false, error: expect.objectContaining({ type: 'invalid_request_error' }) }]);
  });
});

/** The thread as tsc builds it (`pnpm exec tsc -b`): worker threads load JavaScript. */
const builtPlanThread = join(__dirname, '../dist/stub-plan-thread.js');
const padding = ' and more words'.repeat(5_000);

describe('test-key stub: what agent clients send', () => {
  const tools = [
    { name: 'Read', input_schema: { type: 'object', properties: { file_path: { type: 'string' } } } },
    { name: 'Glob', input_schema: { type: 'object', properties: { pattern: { type: 'string' } } } },
  ];

  it('streams a signed thinking block before the text when thinking is asked for, and counts it', async () => {
    const items = await collect(
      stubRequest('hi', { stream: true, thinking: { type: 'adaptive', display: 'omitted' } }),
    );
    const events = sseEvents(items);
    const starts = events.filter((event) => event.event === 'content_block_start');
    expect(starts.map((event) => [event.data.index, event.data.content_block.type])).toEqual([
      [0, 'thinking'],
      [1, 'text'],
    ]);
    const thinking = events
      .filter((event) => event.data.delta?.type === 'thinking_delta')
      .map((event) => event.data.delta.thinking as string);
    const signature = events.find((event) => event.data.delta?.type === 'signature_delta')?.data.delta.signature;
    expect(thinking.length).toBeGreaterThan(0);
    expect(signature).toMatch(/^[A-Za-z0-9+/]+=*$/);
    const finished = items.at(-1);
    expect(finished?.ok && finished.value.kind === 'finished' && finished.value.usage.outputTokens).toBe(
      thinking.length + streamedText(items).split(' ').length,
    );
  });

  it('puts the thinking block first in a whole answer too', async () => {
    const message = messageOf(await collect(stubRequest('hi', { thinking: { type: 'enabled', budget_tokens: 1024 } })));
    expect(message.content.map((block: { type: string }) => block.type)).toEqual(['thinking', 'text']);
    expect(message.content[0].signature).toEqual(expect.any(String));
  });

  it('gw-test:tool-use:<name> calls the tool named, with input from its schema', () => {
    const plan = planStubAnswer(stubRequest('gw-test:tool-use:Glob', { tools }).body, 'm');
    expect(plan).toMatchObject({ kind: 'tool-use', name: 'Glob', input: { pattern: expect.any(String) } });
  });

  it.each([
    [{ type: 'tool', name: 'Glob' }, 'Glob'],
    [{ type: 'any' }, 'Read'],
  ])('a forced tool_choice %j calls that tool without a magic text', (toolChoice, name) => {
    const plan = planStubAnswer(stubRequest('plain', { tools, tool_choice: toolChoice }).body, 'm');
    expect(plan).toMatchObject({ kind: 'tool-use', name });
  });

  it('takes a system message mid-conversation and answers the last user text', () => {
    const body = {
      model: 'm',
      max_tokens: 100,
      messages: [
        { role: 'user', content: 'gw-test:tool-use' },
        { role: 'system', content: 'gw-test:error:api_error' },
      ],
    };
    expect(planStubAnswer(Buffer.from(JSON.stringify(body)), 'm')).toMatchObject({ kind: 'tool-use' });
  });
});

describe('StubPlans', () => {
  let plans: StubPlans;
  beforeAll(async () => {
    plans = await StubPlans.start({
      inlineMaxBytes: 16 * 1024,
      threads: 1,
      queuedPerAccount: 2,
      queuedTotal: 4,
      script: builtPlanThread,
      onThreadFailure: () => undefined,
    });
  });
  afterAll(() => plans.close());
  const never = new AbortController().signal;

  it.each([
    ['a text answer cut at max_tokens', stubRequest(`hello${padding}`, { max_tokens: 3 })],
    ['a tool call', stubRequest(`gw-test:tool-use${padding}`, { tools: [{ name: 'lookup', input_schema: {} }] })],
    ['a requested error', stubRequest(`gw-test:error:rate_limit_error${padding}`)],
    ['a stream that fails', stubRequest(`gw-test:stream-error${padding}`)],
  ])('plans %s of a large body on a thread exactly as inline', async (_name, call) => {
    expect(call.body.byteLength).toBeGreaterThan(16 * 1024);
    const inline = planStubAnswer(call.body, call.model);
    expect(await plans.plan(call, never)).toEqual(inline);
    // The body goes on being the caller's: the thread had a copy.
    expect(JSON.parse(Buffer.from(call.body).toString('utf8'))).toHaveProperty('model', 'claude-sonnet-5');
  });

  it('refuses a body that is not a JSON object, as the stub does inline', async () => {
    const call = { ...stubRequest('x'), body: Buffer.from(`[${'1,'.repeat(20_000)}1]`) };
    expect(await plans.plan(call, never)).toEqual({
      kind: 'refused',
      error: { type: 'invalid_request_error', message: 'The request body must be a JSON object.' },
    });
  });
});
