import { createParser } from 'eventsource-parser';
import { echoChunks, estimateChatInputTokens, startSimUpstream } from '../src';
import type { RecordedRequest, RunningSimUpstream } from '../src';

const apiKey = 'sim-openai-key-0123456789';
let sim: RunningSimUpstream;

beforeAll(async () => {
  sim = await startSimUpstream({ host: '127.0.0.1', port: 0, apiKey });
});
afterAll(() => sim.close());
beforeEach(() => fetch(`${sim.url}/_sim/requests`, { method: 'DELETE' }));

const headers = { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` };

function chatBody(text: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { model: 'llama-sim', messages: [{ role: 'user', content: text }], ...extra };
}

function post(body: unknown, init: { headers?: Record<string, string>; signal?: AbortSignal } = {}) {
  return fetch(`${sim.url}/v1/chat/completions`, {
    method: 'POST',
    headers: init.headers ?? headers,
    body: typeof body === 'string' ? body : JSON.stringify(body),
    signal: init.signal,
  });
}

/** The `data:` payloads of a stream, in order; `[DONE]` included. */
function dataLines(text: string): string[] {
  const lines: string[] = [];
  const parser = createParser({ onEvent: (event) => lines.push(event.data) });
  parser.feed(text);
  return lines;
}

/* eslint-disable @typescript-eslint/no-explicit-any -- wire JSON read field by field */
function chunksOf(text: string): any[] {
  return dataLines(text)
    .filter((line) => line !== '[DONE]')
    .map((line) => JSON.parse(line));
}

/** A JSON body, read field by field. */
async function json(response: Response): Promise<any> {
  return response.json();
}

async function recorded(): Promise<RecordedRequest[]> {
  return (await (await fetch(`${sim.url}/_sim/requests`)).json()) as RecordedRequest[];
}

const lookup = {
  type: 'function',
  function: { name: 'lookup', description: 'Looks up.', parameters: { type: 'object' } },
};

describe('chat completions: echo', () => {
  it('answers a chat completion that repeats the last user text, with usage', async () => {
    const body = {
      model: 'llama-sim',
      messages: [
        { role: 'system', content: 'Be brief.' },
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
      max_tokens: 100,
    };
    const response = await post(body);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(response.headers.get('x-request-id')).toMatch(/^req_/);
    expect(await json(response)).toEqual({
      id: expect.stringMatching(/^chatcmpl-[0-9A-Za-z]{24}$/),
      object: 'chat.completion',
      created: expect.any(Number),
      model: 'llama-sim',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'Hello there, world!', tool_calls: [] },
          logprobs: null,
          finish_reason: 'stop',
          stop_reason: null,
        },
      ],
      usage: {
        prompt_tokens: estimateChatInputTokens(body),
        completion_tokens: 3,
        total_tokens: estimateChatInputTokens(body) + 3,
        prompt_tokens_details: null,
      },
    });
  });

  it('cuts at max_tokens (finish length) and at the first stop string (vLLM stop_reason)', async () => {
    const long = await json(await post(chatBody('one two three four', { max_tokens: 2 })));
    expect(long.choices[0]).toMatchObject({ message: { content: 'one two' }, finish_reason: 'length' });
    expect(long.usage.completion_tokens).toBe(2);

    const stopped = await json(await post(chatBody('alpha beta END gamma', { stop: ['gamma', 'END'] })));
    expect(stopped.choices[0]).toMatchObject({
      message: { content: 'alpha beta ' },
      finish_reason: 'stop',
      stop_reason: 'END',
    });
  });

  it('streams data chunks, usage null on each but a final usage chunk, then [DONE]', async () => {
    const body = chatBody('Hello there, world!', { stream: true, stream_options: { include_usage: true } });
    const response = await post(body);
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const text = await response.text();
    expect(text).toMatch(/^(data: .*\n\n)+$/);
    expect(text).not.toContain('event:');
    const lines = dataLines(text);
    expect(lines.at(-1)).toBe('[DONE]');
    const chunks = chunksOf(text);
    expect(new Set(chunks.map((chunk) => chunk.id)).size).toBe(1);
    expect(chunks.every((chunk) => chunk.object === 'chat.completion.chunk' && chunk.model === 'llama-sim')).toBe(true);
    expect(chunks[0].choices[0].delta).toEqual({ role: 'assistant', content: '' });
    expect(chunks.slice(1, 4).map((chunk) => chunk.choices[0].delta.content)).toEqual(['Hello', ' there,', ' world!']);
    expect(chunks[4].choices[0]).toMatchObject({ delta: {}, finish_reason: 'stop' });
    expect(chunks.slice(0, 5).every((chunk) => chunk.usage === null)).toBe(true);
    expect(chunks[5]).toMatchObject({
      choices: [],
      usage: { prompt_tokens: estimateChatInputTokens(body), completion_tokens: 3, total_tokens: expect.any(Number) },
    });
    expect(chunks).toHaveLength(6);
  });

  it('sends no usage at all without include_usage', async () => {
    const chunks = chunksOf(await (await post(chatBody('a b c', { stream: true }))).text());
    expect(chunks.some((chunk) => 'usage' in chunk)).toBe(false);
    expect(chunks.at(-1).choices[0].finish_reason).toBe('stop');
  });

  it('echoes the tool results when the conversation ends with them', async () => {
    const body = {
      model: 'llama-sim',
      tools: [lookup],
      messages: [
        { role: 'user', content: 'Look it up sim:tool-call' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'Sunny and 21 degrees' },
      ],
    };
    const completion = await json(await post(body));
    expect(completion.choices[0]).toMatchObject({
      message: { content: 'Sunny and 21 degrees', tool_calls: [] },
      finish_reason: 'stop',
    });
  });
});

describe('chat completions: sim:tool-call', () => {
  const text = 'What is the weather in Oslo? sim:tool-call';

  it('calls the first tool with {"echo": text} when tools are offered', async () => {
    const completion = await json(await post(chatBody(text, { tools: [lookup] })));
    const [choice] = completion.choices;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBeNull();
    expect(choice.message.tool_calls).toEqual([
      {
        id: expect.stringMatching(/^call_/),
        type: 'function',
        function: { name: 'lookup', arguments: expect.any(String) },
      },
    ]);
    expect(JSON.parse(choice.message.tool_calls[0].function.arguments)).toEqual({ echo: text });
    expect(completion.usage.completion_tokens).toBe(echoChunks(`{"echo": ${JSON.stringify(text)}}`).length);
  });

  it('streams the arguments in several fragments', async () => {
    const chunks = chunksOf(await (await post(chatBody(text, { tools: [lookup], stream: true }))).text());
    expect(chunks[0].choices[0].delta).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [
        {
          index: 0,
          id: expect.stringMatching(/^call_/),
          type: 'function',
          function: { name: 'lookup', arguments: '' },
        },
      ],
    });
    const fragments = chunks.slice(1, -1).map((chunk) => chunk.choices[0].delta.tool_calls[0].function.arguments);
    expect(fragments.length).toBeGreaterThan(3);
    expect(JSON.parse(fragments.join(''))).toEqual({ echo: text });
    expect(chunks.at(-1).choices[0].finish_reason).toBe('tool_calls');
  });

  it('just echoes without tools', async () => {
    const completion = await json(await post(chatBody(text)));
    expect(completion.choices[0].message.content).toBe(text);
  });
});

describe('chat completions: checks like the OpenAI API', () => {
  const cases: [string, unknown, number, string][] = [
    ['invalid JSON', '{"model":', 400, 'parse the JSON'],
    ['a missing model', { messages: [{ role: 'user', content: 'x' }] }, 400, 'model parameter'],
    ['no messages', { model: 'm', messages: [] }, 400, 'empty array'],
    [
      'an unknown field (an Anthropic one leaking)',
      chatBody('x', { top_k: 5 }),
      400,
      'Unrecognized request argument supplied: top_k',
    ],
    [
      'an Anthropic system field',
      chatBody('x', { system: 'Be brief.' }),
      400,
      'Unrecognized request argument supplied: system',
    ],
    ['a bad role', { model: 'm', messages: [{ role: 'bot', content: 'x' }] }, 400, "Invalid value: 'bot'"],
    ['max_tokens 0', chatBody('x', { max_tokens: 0 }), 400, 'max_tokens'],
    [
      'stream_options without stream',
      chatBody('x', { stream_options: { include_usage: true } }),
      400,
      'stream_options',
    ],
    ['tool_choice without tools', chatBody('x', { tool_choice: 'auto' }), 400, 'tool_choice'],
    [
      'a tool message answering nothing',
      {
        model: 'm',
        messages: [
          { role: 'user', content: 'x' },
          { role: 'tool', tool_call_id: 'call_9', content: 'r' },
        ],
      },
      400,
      "role 'tool' must be a response",
    ],
    [
      'an unanswered tool call',
      {
        model: 'm',
        messages: [
          { role: 'user', content: 'x' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } }],
          },
          { role: 'user', content: 'y' },
        ],
      },
      400,
      'did not have response messages: call_1',
    ],
    ['an unknown directive', chatBody('sim:latencyy=5'), 400, 'unknown directive'],
  ];
  it.each(cases)('refuses %s', async (_name, body, status, message) => {
    const response = await post(body);
    expect(response.status).toBe(status);
    const envelope = await json(response);
    expect(Object.keys(envelope)).toEqual(['error']);
    expect(envelope.error).toMatchObject({
      message: expect.stringContaining(message),
      type: 'invalid_request_error',
      code: 400,
    });
    expect('param' in envelope.error).toBe(true);
  });

  it('takes the key as a Bearer token or as Azure api-key, and refuses anything else with 401', async () => {
    expect(
      (await post(chatBody('x'), { headers: { 'content-type': 'application/json', 'api-key': apiKey } })).status,
    ).toBe(200);
    const refused = await post(chatBody('x'), { headers: { 'content-type': 'application/json', 'x-api-key': apiKey } });
    expect(refused.status).toBe(401);
    expect((await json(refused)).error).toMatchObject({ type: 'authentication_error', code: 401 });
  });

  it('records requests without credentials, with the path', async () => {
    await post(chatBody('record me'), { headers: { ...headers, 'api-key': apiKey } });
    const [entry] = await recorded();
    expect(entry).toMatchObject({ method: 'POST', path: '/v1/chat/completions', outcome: 'completed' });
    expect(entry!.body).toEqual(chatBody('record me'));
    expect(entry!.headers.authorization).toBeUndefined();
    expect(entry!.headers['api-key']).toBeUndefined();
  });
});

describe('chat completions: misbehaviour on request', () => {
  it('answers sim:error with the status, the error body and retry-after', async () => {
    const response = await post(chatBody('sim:error=529 sim:retry-after=3'));
    expect(response.status).toBe(529);
    expect(response.headers.get('retry-after')).toBe('3');
    expect(await json(response)).toEqual({
      error: { message: 'sim: error status 529 on request', type: 'server_error', param: null, code: 529 },
    });
  });

  it('fails mid-stream with an error data line after n chunks', async () => {
    const text = await (await post(chatBody('one two three four sim:stream-error-after=2', { stream: true }))).text();
    const lines = dataLines(text);
    expect(lines).toHaveLength(4);
    expect(lines.slice(1, 3).map((line) => JSON.parse(line).choices[0].delta.content)).toEqual(['one', ' two']);
    expect(JSON.parse(lines[3]!)).toEqual({
      error: { message: 'Overloaded', type: 'server_error', param: null, code: 503 },
    });
  });

  it('drops the connection after n chunks', async () => {
    const response = await post(chatBody('one two three sim:drop-after=1', { stream: true }));
    await expect(response.text()).rejects.toThrow();
    const [entry] = await recorded();
    expect(entry!.outcome).toBe('dropped');
  });

  it('waits sim:latency before the headers', async () => {
    const began = Date.now();
    await post(chatBody('slow sim:latency=200'));
    expect(Date.now() - began).toBeGreaterThanOrEqual(190);
  });
});
