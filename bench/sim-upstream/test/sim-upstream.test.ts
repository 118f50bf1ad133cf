import { createParser } from 'eventsource-parser';
import type { EventSourceMessage } from 'eventsource-parser';
import { echoChunks, estimateInputTokens, startSimUpstream } from '../src';
import type { RecordedRequest, RunningSimUpstream } from '../src';
import { waitUntil } from '@gw/testing';

const apiKey = 'sim-test-key-0123456789';
let sim: RunningSimUpstream;

beforeAll(async () => {
  sim = await startSimUpstream({ host: '127.0.0.1', port: 0, apiKey });
});
afterAll(() => sim.close());
beforeEach(() => fetch(`${sim.url}/_sim/requests`, { method: 'DELETE' }));

const headers = { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-api-key': apiKey };

function messagesBody(text: string, extra: Record<string, unknown> = {}) {
  return { model: 'claude-sim', max_tokens: 1024, messages: [{ role: 'user', content: text }], ...extra };
}

function post(body: unknown, init: { headers?: Record<string, string>; signal?: AbortSignal; path?: string } = {}) {
  return fetch(`${sim.url}${init.path ?? '/v1/messages'}`, {
    method: 'POST',
    headers: init.headers ?? headers,
    body: typeof body === 'string' ? body : JSON.stringify(body),
    signal: init.signal,
  });
}

function parseEvents(text: string): EventSourceMessage[] {
  const events: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (event) => events.push(event) });
  parser.feed(text);
  return events;
}

/** The parts of the upstream's bodies these tests read. */
interface WireMessage {
  content: { type: string; text: string }[];
  stop_reason: string;
  usage: { output_tokens: number };
}
interface WireError {
  error: { type: string; message: string };
}

async function jsonOf<T>(response: Response): Promise<T> {
  return (await response.json()) as T;
}

async function recorded(): Promise<RecordedRequest[]> {
  return (await (await fetch(`${sim.url}/_sim/requests`)).json()) as RecordedRequest[];
}

describe('non-streamed echo', () => {
  it('answers a Message that repeats the last user text, with usage', async () => {
    const body = {
      model: 'claude-sim',
      max_tokens: 100,
      system: 'Be brief.',
      messages: [
        { role: 'user', content: 'first turn' },
        { role: 'assistant', content: 'ok' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Hello there,' },
            { type: 'text', text: ' world!' },
          ],
        },
      ],
    };
    const response = await post(body);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(response.headers.get('request-id')).toMatch(/^req_[0-9A-Za-z]{24}$/);
    const message = await response.json();
    expect(message).toEqual({
      id: expect.stringMatching(/^msg_[0-9A-Za-z]{24}$/),
      type: 'message',
      role: 'assistant',
      model: 'claude-sim',
      content: [{ type: 'text', text: 'Hello there, world!' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: {
        input_tokens: estimateInputTokens(body),
        output_tokens: 3,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
      },
    });
  });

  it('cuts the echo at max_tokens and says so', async () => {
    const response = await post(messagesBody('one two three four', { max_tokens: 2 }));
    const message = await jsonOf<WireMessage>(response);
    expect(message.content[0]!.text).toBe('one two');
    expect(message.stop_reason).toBe('max_tokens');
    expect(message.usage.output_tokens).toBe(2);
  });

  it('tolerates ?beta=true', async () => {
    const response = await post(messagesBody('hi'), { path: '/v1/messages?beta=true' });
    expect(response.status).toBe(200);
  });
});

describe('streamed echo', () => {
  it('sends the full event order, each event named like its type and whole', async () => {
    const body = messagesBody('Hello there, world!', { stream: true });
    const response = await post(body);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(response.headers.get('request-id')).toMatch(/^req_/);
    const text = await response.text();
    expect(text).toMatch(/^(event: [a-z_]+\ndata: \{.*\}\n\n)+$/);

    const events = parseEvents(text);
    expect(events.map((event) => event.event)).toEqual([
      'message_start',
      'content_block_start',
      'ping',
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    const data = events.map((event) => JSON.parse(event.data));
    data.forEach((item, index) => expect(item.type).toBe(events[index]!.event));
    expect(data[0].message).toMatchObject({
      content: [],
      stop_reason: null,
      usage: { input_tokens: estimateInputTokens(body) },
    });
    expect(data[1]).toEqual({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
    const deltas = data.filter((item) => item.type === 'content_block_delta').map((item) => item.delta.text);
    expect(deltas).toEqual(['Hello', ' there,', ' world!']);
    expect(data[7]).toEqual({
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { output_tokens: 3 },
    });
  });

  it('stops with max_tokens when the echo is longer', async () => {
    const events = parseEvents(await (await post(messagesBody('a b c d e', { stream: true, max_tokens: 3 }))).text());
    const final = JSON.parse(events.find((event) => event.event === 'message_delta')!.data);
    expect(final.delta.stop_reason).toBe('max_tokens');
    expect(final.usage.output_tokens).toBe(3);
    expect(events.filter((event) => event.event === 'content_block_delta')).toHaveLength(3);
  });
});

describe('sim:tool-call and tool results', () => {
  const text = 'What is the weather in Oslo? sim:tool-call';
  const tools = [{ name: 'lookup', description: 'Looks up.', input_schema: { type: 'object' } }];

  it('answers with a tool_use block calling the first tool with {"echo": text}', async () => {
    const message = await jsonOf<{ content: unknown[]; stop_reason: string; usage: { output_tokens: number } }>(
      await post(messagesBody(text, { tools })),
    );
    expect(message.stop_reason).toBe('tool_use');
    expect(message.content).toEqual([
      { type: 'tool_use', id: expect.stringMatching(/^toolu_/), name: 'lookup', input: { echo: text } },
    ]);
    expect(message.usage.output_tokens).toBe(echoChunks(`{"echo": ${JSON.stringify(text)}}`).length);
  });

  it('streams the input as an empty input_json_delta, then several fragments', async () => {
    const events = parseEvents(await (await post(messagesBody(text, { tools, stream: true }))).text());
    const data = events.map(
      (event) =>
        JSON.parse(event.data) as {
          type: string;
          delta: { type: string; partial_json: string; stop_reason?: string };
        },
    );
    expect(data[1]).toEqual({
      type: 'content_block_start',
      index: 0,
      content_block: { type: 'tool_use', id: expect.stringMatching(/^toolu_/), name: 'lookup', input: {} },
    });
    const deltas = data.filter((event) => event.type === 'content_block_delta').map((event) => event.delta);
    expect(deltas.every((delta) => delta.type === 'input_json_delta')).toBe(true);
    expect(deltas[0]?.partial_json).toBe('');
    expect(deltas.length).toBeGreaterThan(3);
    expect(JSON.parse(deltas.map((delta) => delta.partial_json).join(''))).toEqual({ echo: text });
    expect(data.find((event) => event.type === 'message_delta')?.delta.stop_reason).toBe('tool_use');
  });

  it('just echoes without tools', async () => {
    const message = await jsonOf<WireMessage>(await post(messagesBody(text)));
    expect(message.content).toEqual([{ type: 'text', text }]);
  });

  it('echoes the tool result when the conversation ends with one', async () => {
    const body = {
      model: 'claude-sim',
      max_tokens: 100,
      tools,
      messages: [
        { role: 'user', content: text },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'lookup', input: { echo: text } }] },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'Sunny, 21 degrees' }] },
          ],
        },
      ],
    };
    const message = await jsonOf<WireMessage>(await post(body));
    expect(message.stop_reason).toBe('end_turn');
    expect(message.content).toEqual([{ type: 'text', text: 'Sunny, 21 degrees' }]);
  });
});

describe('validation like the real API', () => {
  const cases: [string, unknown, string][] = [
    ['invalid JSON', '{"model":', 'not valid JSON'],
    ['missing model', { max_tokens: 1, messages: [{ role: 'user', content: 'x' }] }, 'model: Field required'],
    ['missing max_tokens', { model: 'm', messages: [{ role: 'user', content: 'x' }] }, 'max_tokens: Field required'],
    [
      'fractional max_tokens',
      { model: 'm', max_tokens: 1.5, messages: [] },
      'max_tokens: Input should be a valid integer',
    ],
    ['missing messages', { model: 'm', max_tokens: 1 }, 'messages: Field required'],
    ['empty messages', { model: 'm', max_tokens: 1, messages: [] }, 'messages: at least one message is required'],
    [
      'bad role',
      { model: 'm', max_tokens: 1, messages: [{ role: 'bot', content: 'x' }] },
      "messages.0.role: Input should be 'user', 'assistant' or 'system'",
    ],
    [
      'temperature above 1',
      { ...messagesBody('x'), temperature: 2 },
      'temperature: Input should be less than or equal to 1',
    ],
    [
      'an unknown tool_choice',
      { ...messagesBody('x'), tool_choice: { type: 'sometimes' } },
      "tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'",
    ],
    [
      'a forced tool not offered',
      { ...messagesBody('x'), tool_choice: { type: 'tool', name: 'nope' } },
      "Tool 'nope' not found in provided tools",
    ],
    ['unknown directive', messagesBody('sim:latencyy=5'), 'unknown directive'],
  ];
  it.each(cases)('%s → 400 invalid_request_error', async (_name, body, message) => {
    const response = await post(body);
    expect(response.status).toBe(400);
    const envelope = await response.json();
    expect(envelope).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: expect.stringContaining(message) },
      request_id: response.headers.get('request-id'),
    });
  });

  it('requires anthropic-version', async () => {
    const response = await post(messagesBody('x'), { headers: { 'x-api-key': apiKey } });
    expect(response.status).toBe(400);
    expect((await jsonOf<WireError>(response)).error.message).toBe('anthropic-version: header is required');
  });

  it('requires the configured x-api-key', async () => {
    const response = await post(messagesBody('x'), { headers: { ...headers, 'x-api-key': 'wrong' } });
    expect(response.status).toBe(401);
    expect((await jsonOf<WireError>(response)).error).toEqual({
      type: 'authentication_error',
      message: 'invalid x-api-key',
    });
  });

  it('answers unknown routes with not_found_error', async () => {
    const response = await fetch(`${sim.url}/v1/nothing`);
    expect(response.status).toBe(404);
    expect((await jsonOf<WireError>(response)).error.type).toBe('not_found_error');
  });
});

describe('misbehaviour on request', () => {
  it.each([
    [529, 'overloaded_error'],
    [500, 'api_error'],
    [400, 'invalid_request_error'],
    [401, 'authentication_error'],
    [429, 'rate_limit_error'],
  ])('sim:error=%i answers that status with %s', async (status, type) => {
    const response = await post(messagesBody(`sim:error=${status} sim:retry-after=7`, { stream: true }));
    expect(response.status).toBe(status);
    expect(response.headers.get('retry-after')).toBe('7');
    expect(response.headers.get('content-type')).toBe('application/json');
    expect((await jsonOf<WireError>(response)).error.type).toBe(type);
  });

  it('sim:latency delays the headers', async () => {
    const started = Date.now();
    const response = await post(messagesBody('sim:latency=300 hi'));
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(response.status).toBe(200);
  });

  it('sim:pace spaces the deltas', async () => {
    const started = Date.now();
    const events = parseEvents(await (await post(messagesBody('sim:pace=100 a b c', { stream: true }))).text());
    expect(Date.now() - started).toBeGreaterThanOrEqual(390);
    expect(events.filter((event) => event.event === 'content_block_delta')).toHaveLength(4);
  });

  it('sim:stream-error-after sends n deltas, then an error event, then ends', async () => {
    const response = await post(messagesBody('a b c d sim:stream-error-after=2', { stream: true }));
    expect(response.status).toBe(200);
    const events = parseEvents(await response.text());
    expect(events.map((event) => event.event)).toEqual([
      'message_start',
      'content_block_start',
      'ping',
      'content_block_delta',
      'content_block_delta',
      'error',
    ]);
    expect(JSON.parse(events[5]!.data)).toMatchObject({ type: 'error', error: { type: 'overloaded_error' } });
  });

  it('sim:drop-after sends n deltas, then destroys the socket', async () => {
    const response = await post(messagesBody('a b c d sim:drop-after=1', { stream: true }));
    expect(response.status).toBe(200);
    await expect(response.text()).rejects.toThrow();
    const log = await waitUntil(
      recorded,
      { what: 'a request recorded as dropped', timeoutMs: 2000 },
      (requests) => requests.at(-1)?.outcome === 'dropped',
    );
    expect(log.at(-1)!.outcome).toBe('dropped');
  });

  it('sim:drop-after on a non-streamed request resets without a response', async () => {
    await expect(post(messagesBody('sim:drop-after=0'))).rejects.toThrow();
  });
});

describe('request log', () => {
  it('records method, path, headers without credentials and the parsed body, newest last', async () => {
    await post(messagesBody('first'));
    await post(messagesBody('second'), {
      headers: { ...headers, authorization: 'Bearer secret', 'anthropic-beta': 'b1' },
    });
    const log = await recorded();
    expect(log).toHaveLength(2);
    expect(log[1]).toMatchObject({
      method: 'POST',
      path: '/v1/messages',
      body: messagesBody('second'),
      outcome: 'completed',
      requestId: expect.stringMatching(/^req_/),
    });
    expect(log[1]!.headers['anthropic-beta']).toBe('b1');
    expect(log[1]!.headers['x-api-key']).toBeUndefined();
    expect(log[1]!.headers.authorization).toBeUndefined();
    expect(log[0]!.body).toEqual(messagesBody('first'));
  });

  it('keeps the last 100 and clears on DELETE', async () => {
    for (let i = 0; i < 105; i += 1) await post(messagesBody(`n${i}`, { max_tokens: 0 }));
    const log = await recorded();
    expect(log).toHaveLength(100);
    expect((log[0]!.body as { messages: { content: string }[] }).messages[0]!.content).toBe('n5');
    expect((await fetch(`${sim.url}/_sim/requests`, { method: 'DELETE' })).status).toBe(204);
    expect(await recorded()).toEqual([]);
  });

  it('records a client that goes away mid-stream as client_closed', async () => {
    const controller = new AbortController();
    const response = await post(messagesBody('sim:pace=200 a b c d e f g h', { stream: true }), {
      signal: controller.signal,
    });
    const reader = response.body!.getReader();
    await reader.read();
    controller.abort();
    const log = await waitUntil(
      recorded,
      { what: 'a request recorded as client_closed', timeoutMs: 2000 },
      (requests) => requests.at(-1)?.outcome === 'client_closed',
    );
    expect(log.at(-1)!.outcome).toBe('client_closed');
  });
});

describe('count_tokens', () => {
  const countPath = '/v1/messages/count_tokens';

  function countBody(text: string, extra: Record<string, unknown> = {}) {
    return { model: 'claude-sim', messages: [{ role: 'user', content: text }], ...extra };
  }

  it('answers the same input tokens /v1/messages reports for the same prompt', async () => {
    const prompt = {
      system: [{ type: 'text', text: 'You are terse.' }],
      messages: [
        { role: 'user', content: 'What is the weather like in Paris today, roughly?' },
        {
          role: 'assistant',
          content: [{ type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Paris' } }],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'Sunny, 21 C' }] },
      ],
      tools: [{ name: 'weather', description: 'Looks the weather up.', input_schema: { type: 'object' } }],
    };
    const counted = await post({ model: 'claude-sim', ...prompt }, { path: countPath });
    expect(counted.status).toBe(200);
    expect(counted.headers.get('content-type')).toBe('application/json');
    expect(counted.headers.get('request-id')).toMatch(/^req_[0-9A-Za-z]{24}$/);
    const count = await jsonOf<{ input_tokens: number }>(counted);
    expect(count).toEqual({ input_tokens: estimateInputTokens(prompt) });
    expect(count.input_tokens).toBeGreaterThan(10);

    const message = await jsonOf<{ usage: { input_tokens: number } }>(
      await post({ model: 'claude-sim', max_tokens: 5, ...prompt }),
    );
    expect(message.usage.input_tokens).toBe(count.input_tokens);
  });

  it('counts at least 1 and tolerates ?beta=true', async () => {
    const response = await post(countBody(''), { path: `${countPath}?beta=true` });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ input_tokens: estimateInputTokens(countBody('')) });
  });

  const invalid: [string, unknown, string][] = [
    ['invalid JSON', '{"model":', 'not valid JSON'],
    ['a body that is not an object', '[1]', 'must be a JSON object'],
    ['missing model', { messages: [{ role: 'user', content: 'x' }] }, 'model: Field required'],
    ['empty model', countBody('x', { model: '' }), 'model: Input should be a non-empty string'],
    ['missing messages', { model: 'm' }, 'messages: Field required'],
    ['empty messages', { model: 'm', messages: [] }, 'messages: at least one message is required'],
    ['bad role', { model: 'm', messages: [{ role: 'bot', content: 'x' }] }, "messages.0.role: Input should be 'user'"],
    ['max_tokens', countBody('x', { max_tokens: 10 }), 'max_tokens: Extra inputs are not permitted'],
    ['stream', countBody('x', { stream: false }), 'stream: Extra inputs are not permitted'],
    ['temperature', countBody('x', { temperature: 0.5 }), 'temperature: Extra inputs are not permitted'],
    ['unknown directive', countBody('sim:latencyy=5'), 'unknown directive'],
  ];
  it.each(invalid)('%s → 400 invalid_request_error', async (_name, body, message) => {
    const response = await post(body, { path: countPath });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: expect.stringContaining(message) },
      request_id: response.headers.get('request-id'),
    });
  });

  it('needs no max_tokens, but anthropic-version and the configured key', async () => {
    expect((await post(countBody('x'), { path: countPath })).status).toBe(200);
    const unversioned = await post(countBody('x'), { path: countPath, headers: { 'x-api-key': apiKey } });
    expect(unversioned.status).toBe(400);
    expect((await jsonOf<WireError>(unversioned)).error.message).toBe('anthropic-version: header is required');
    const wrongKey = await post(countBody('x'), { path: countPath, headers: { ...headers, 'x-api-key': 'wrong' } });
    expect(wrongKey.status).toBe(401);
    expect((await jsonOf<WireError>(wrongKey)).error.type).toBe('authentication_error');
  });

  it.each([
    [529, 'overloaded_error'],
    [500, 'api_error'],
    [400, 'invalid_request_error'],
    [429, 'rate_limit_error'],
  ])('sim:error=%i answers that status with %s', async (status, type) => {
    const response = await post(countBody(`sim:error=${status} sim:retry-after=3`), { path: countPath });
    expect(response.status).toBe(status);
    expect(response.headers.get('retry-after')).toBe('3');
    expect(await response.json()).toMatchObject({
      type: 'error',
      error: { type, message: `sim: error status ${status} on request` },
    });
  });

  it('sim:latency delays the answer; sim:pace and sim:stream-error-after change nothing', async () => {
    const started = Date.now();
    const response = await post(countBody('sim:latency=300 sim:pace=1000 sim:stream-error-after=0 a b'), {
      path: countPath,
    });
    const elapsed = Date.now() - started;
    expect(response.status).toBe(200);
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(1000);
  });

  it('sim:drop-after resets the connection before any response', async () => {
    await expect(post(countBody('sim:drop-after=0'), { path: countPath })).rejects.toThrow();
    const log = await waitUntil(
      recorded,
      { what: 'a request recorded as dropped', timeoutMs: 2000 },
      (requests) => requests.at(-1)?.outcome === 'dropped',
    );
    expect(log.at(-1)).toMatchObject({ path: countPath, outcome: 'dropped' });
  });

  it('is recorded in the request log like /v1/messages, without credentials', async () => {
    await post(messagesBody('first'));
    await post(countBody('second'), {
      path: `${countPath}?beta=true`,
      headers: { ...headers, 'anthropic-beta': 'b2' },
    });
    const log = await recorded();
    expect(log.map((entry) => entry.path)).toEqual(['/v1/messages', `${countPath}?beta=true`]);
    expect(log[1]).toMatchObject({
      method: 'POST',
      body: countBody('second'),
      outcome: 'completed',
      requestId: expect.stringMatching(/^req_/),
    });
    expect(log[1]!.headers['anthropic-beta']).toBe('b2');
    expect(log[1]!.headers['x-api-key']).toBeUndefined();
  });

  it('answers GET with not_found_error', async () => {
    const response = await fetch(`${sim.url}${countPath}`);
    expect(response.status).toBe(404);
    expect((await jsonOf<WireError>(response)).error.type).toBe('not_found_error');
  });
});

describe('echoChunks', () => {
  it('splits word by word and joins back to the exact text', () => {
    const text = '  Hello,\tthere\n world!  ';
    const chunks = echoChunks(text);
    expect(chunks).toHaveLength(3);
    expect(chunks.join('')).toBe(text);
    expect(echoChunks('   ')).toEqual([]);
  });
});

describe('what newer clients send', () => {
  const tools = [
    { name: 'first', input_schema: { type: 'object' } },
    { name: 'second', input_schema: { type: 'object' } },
  ];

  it("takes a system message mid-conversation and Claude Code's betas, echoing the user's text", async () => {
    const betas =
      'claude-code-20250219,interleaved-thinking-2025-05-14,mid-conversation-system-2026-04-07,effort-2025-11-24,' +
      'thinking-token-count-2026-05-13,prompt-caching-scope-2026-01-05,structured-outputs-2025-11-13';
    const response = await post(
      {
        ...messagesBody('hello there'),
        messages: [...messagesBody('hello there').messages, { role: 'system', content: 'Be brief.' }],
      },
      { headers: { ...headers, 'anthropic-beta': betas } },
    );
    expect(response.status).toBe(200);
    expect((await jsonOf<WireMessage>(response)).content[0]!.text).toBe('hello there');
  });

  it.each([
    [{ type: 'tool', name: 'second' }, 'second'],
    [{ type: 'any' }, 'first'],
  ])('calls the tool a tool_choice of %j forces, whatever the text', async (toolChoice, name) => {
    const response = await post(messagesBody('no magic here', { tools, tool_choice: toolChoice }));
    const message = await jsonOf<{ content: { type: string; name: string }[]; stop_reason: string }>(response);
    expect(message.stop_reason).toBe('tool_use');
    expect(message.content.at(-1)).toMatchObject({ type: 'tool_use', name });
  });

  it('answers JSON of the schema output_config.format asks for', async () => {
    const schema = {
      type: 'object',
      properties: { answer: { type: 'string' }, confident: { type: 'boolean' }, score: { type: 'number' } },
      required: ['answer', 'confident', 'score'],
      additionalProperties: false,
    };
    const response = await post(messagesBody('hi', { output_config: { format: { type: 'json_schema', schema } } }));
    const message = await jsonOf<WireMessage>(response);
    expect(JSON.parse(message.content[0]!.text)).toEqual({ answer: 'hi', confident: false, score: 0 });
  });
});
