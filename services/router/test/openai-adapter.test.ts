import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { err, ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import type { AdapterCall } from '../src/adapters';
import { createAdapterRegistry } from '../src/adapters';
import { createOpenAIAdapter, openAIAdapterConfig } from '../src/adapters/openai';
import type { OpenAIAdapterConfig } from '../src/adapters/openai';
import { upstreamRequest } from '../src/adapters/openai/api';
import { parseErrorBody } from '../src/adapters/openai/errors';
import { toChatCompletionRequest } from '../src/adapters/openai/request';
import {
  messageIdOf,
  stopOf,
  thinkingRequested,
  toAnthropicMessage,
  toolUseIdOf,
} from '../src/adapters/openai/response';
import { ChatStreamTranslator } from '../src/adapters/openai/stream';
import type { CompletionEvent, JsonObject } from '../src/completion';
import type { TransportFailure, UpstreamBody } from '../src/upstream-http';

function call(body: JsonObject, extra: Partial<AdapterCall> = {}): AdapterCall {
  const full = { model: 'llama-4-maverick', max_tokens: 64, ...body };
  return {
    endpointUrl: 'https://vllm.example/prefix',
    upstreamModel: 'meta-llama/Llama-4-Maverick',
    body: full,
    rawBody: Buffer.from(JSON.stringify(full)),
    stream: false,
    headers: { 'anthropic-version': '2023-06-01', 'anthropic-beta': 'b1' },
    query: '',
    credential: 'sk-upstream',
    requestId: 'req_abc',
    ...extra,
  };
}

const translate = (body: JsonObject, config: OpenAIAdapterConfig = openAIAdapterConfig, stream = false) =>
  toChatCompletionRequest(config, call(body, { stream }));

/** The caller's alias and request as the relay sees them: a 13-token estimate (the 52 characters of its strings). */
const alias = 'llama-4-maverick';
const callerBody: JsonObject = { messages: [{ role: 'user', content: 'x'.repeat(48) }] };
const answer = { model: alias, thinking: false, estimatedInputTokens: 13 };
const relayCall = (stream: boolean) => ({ stream, model: alias, body: callerBody });

const weatherTool = {
  name: 'get_weather',
  description: 'The weather in a city.',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

describe('request: Messages → chat completions', () => {
  it('maps model, system, text and the sampling fields', () => {
    const { request, refusal } = translate({
      system: 'Be brief.',
      temperature: 0.2,
      top_p: 0.9,
      top_k: 40,
      stop_sequences: ['END', 'STOP'],
      metadata: { user_id: 'user-7f3a' },
      thinking: { type: 'enabled', budget_tokens: 2048 },
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(refusal).toBeUndefined();
    expect(request).toEqual({
      model: 'meta-llama/Llama-4-Maverick',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
      ],
      max_tokens: 64,
      temperature: 0.2,
      top_p: 0.9,
      stop: ['END', 'STOP'],
      user: 'user-7f3a',
    });
  });

  it('joins system text blocks into one leading system message', () => {
    const { request } = translate({
      system: [
        { type: 'text', text: 'You are terse.', cache_control: { type: 'ephemeral' } },
        { type: 'text', text: 'Answer in French.' },
      ],
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(request.messages[0]).toEqual({ role: 'system', content: 'You are terse.\nAnswer in French.' });
  });

  it('keeps one text block a string and several as parts', () => {
    const { request } = translate({
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'one block' }] },
        { role: 'assistant', content: [{ type: 'text', text: 'ok' }] },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'first' },
            { type: 'text', text: 'second' },
          ],
        },
      ],
    });
    expect(request.messages).toEqual([
      { role: 'user', content: 'one block' },
      { role: 'assistant', content: 'ok' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'first' },
          { type: 'text', text: 'second' },
        ],
      },
    ]);
  });

  it('asks for the usage in the stream when streaming', () => {
    const { request } = translate({ messages: [{ role: 'user', content: 'Hi' }] }, openAIAdapterConfig, true);
    expect(request).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    const quiet = translate({ messages: [] }, { ...openAIAdapterConfig, streamUsage: false }, true).request;
    expect(quiet.stream).toBe(true);
    expect('stream_options' in quiet).toBe(false);
    expect('stream' in translate({ stream: true, messages: [] }).request).toBe(false);
  });

  it('maps assistant tool_use to tool_calls and user tool_result to tool messages before the user text', () => {
    const { request, refusal } = translate({
      messages: [
        { role: 'user', content: 'Weather in Paris and Berlin?' },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'Two cities.', signature: 'sig' },
            { type: 'text', text: 'Checking.' },
            { type: 'tool_use', id: 'toolu_01A', name: 'get_weather', input: { city: 'Paris' } },
            { type: 'tool_use', id: 'call_b', name: 'get_weather', input: { city: 'Berlin' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Thanks, and be quick.' },
            { type: 'tool_result', tool_use_id: 'toolu_01A', content: 'Sunny, 21 °C' },
            {
              type: 'tool_result',
              tool_use_id: 'call_b',
              is_error: true,
              content: [{ type: 'text', text: 'Service down' }],
            },
          ],
        },
      ],
    });
    expect(refusal).toBeUndefined();
    expect(request.messages).toEqual([
      { role: 'user', content: 'Weather in Paris and Berlin?' },
      {
        role: 'assistant',
        content: 'Checking.',
        tool_calls: [
          { id: 'toolu_01A', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
          { id: 'call_b', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Berlin"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'toolu_01A', content: 'Sunny, 21 °C' },
      { role: 'tool', tool_call_id: 'call_b', content: 'Service down' },
      { role: 'user', content: 'Thanks, and be quick.' },
    ]);
  });

  it('gives an assistant turn of tool calls only a null content, and a turn of tool results only no user message', () => {
    const { request } = translate({
      messages: [
        { role: 'user', content: 'Go' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1' }] },
      ],
    });
    expect(request.messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'toolu_1', content: '' },
    ]);
  });

  it('maps tools and every tool_choice', () => {
    const base = { tools: [weatherTool], messages: [{ role: 'user', content: 'Hi' }] };
    expect(translate(base).request.tools).toEqual([
      {
        type: 'function',
        function: {
          name: 'get_weather',
          description: 'The weather in a city.',
          parameters: weatherTool.input_schema,
        },
      },
    ]);
    const choice = (tool_choice: JsonObject) => {
      const { request } = translate({ ...base, tool_choice });
      return { tool_choice: request.tool_choice, parallel_tool_calls: request.parallel_tool_calls };
    };
    expect(choice({ type: 'auto' })).toEqual({ tool_choice: 'auto', parallel_tool_calls: undefined });
    expect(choice({ type: 'any' })).toEqual({ tool_choice: 'required', parallel_tool_calls: undefined });
    expect(choice({ type: 'none' })).toEqual({ tool_choice: 'none', parallel_tool_calls: undefined });
    expect(choice({ type: 'tool', name: 'get_weather', disable_parallel_tool_use: true })).toEqual({
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      parallel_tool_calls: false,
    });
    // Without tools the upstreams refuse tool_choice: it is not sent.
    expect('tool_choice' in translate({ messages: [], tool_choice: { type: 'auto' } }).request).toBe(false);
  });

  it('turns images into image_url parts when the upstream takes images', () => {
    const config = { ...openAIAdapterConfig, images: true };
    const { request, refusal } = translate(
      {
        messages: [
          {
            role: 'user',
            content: [
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
              { type: 'image', source: { type: 'url', url: 'https://img.example/cat.jpg' } },
              { type: 'text', text: 'What are these?' },
            ],
          },
        ],
      },
      config,
    );
    expect(refusal).toBeUndefined();
    expect(request.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
          { type: 'image_url', image_url: { url: 'https://img.example/cat.jpg' } },
          { type: 'text', text: 'What are these?' },
        ],
      },
    ]);
  });

  it.each([
    [
      'an image for a text-only upstream',
      {
        messages: [
          { role: 'user', content: 'Hi' },
          {
            role: 'user',
            content: [
              { type: 'text', text: 'Look' },
              { type: 'image', source: { type: 'url', url: 'https://img.example/a.png' } },
            ],
          },
        ],
      },
      'messages.1.content.1: image input is not supported by the upstream serving this model.',
    ],
    [
      'an image by file id',
      { messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'file', file_id: 'file_1' } }] }] },
      'messages.0.content.0: an image by file_id is not supported',
    ],
    [
      'a PDF document',
      {
        messages: [
          {
            role: 'user',
            content: [{ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBE' } }],
          },
        ],
      },
      'messages.0.content.0: a document other than plain text is not supported',
    ],
    [
      'a server tool',
      { tools: [weatherTool, { type: 'web_search_20250305', name: 'web_search' }], messages: [] },
      'tools.1: the server tool "web_search_20250305" is not supported',
    ],
    [
      'an image in a tool result',
      {
        messages: [
          {
            role: 'user',
            content: [
              {
                type: 'tool_result',
                tool_use_id: 'toolu_1',
                content: [{ type: 'image', source: { type: 'url', url: 'https://x/y.png' } }],
              },
            ],
          },
        ],
      },
      'messages.0.content.0.content.0: an image inside a tool result is not supported',
    ],
    [
      'an unknown block',
      { messages: [{ role: 'user', content: [{ type: 'search_result', source: 's', title: 't', content: [] }] }] },
      'messages.0.content.0: "search_result" blocks are not supported',
    ],
  ])('refuses %s with invalid_request_error naming the field', (_name, body, message) => {
    const { refusal } = translate(body as JsonObject);
    expect(refusal).toEqual(expect.objectContaining({ type: 'invalid_request_error' }));
    expect(refusal!.message.startsWith(message)).toBe(true);
    const adapter = createOpenAIAdapter();
    expect(adapter.checkRequest!({ body: body as JsonObject, stream: false })).toEqual(err(refusal));
  });

  it('passes a plain-text document on as text, and the check accepts what it can carry', () => {
    const body = {
      messages: [
        {
          role: 'user',
          content: [{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'The memo.' } }],
        },
      ],
    };
    expect(translate(body).request.messages).toEqual([{ role: 'user', content: 'The memo.' }]);
    expect(createOpenAIAdapter().checkRequest!({ body, stream: true })).toEqual(ok(undefined));
  });
});

describe('the upstream request', () => {
  it('posts JSON to {endpoint}/v1/chat/completions with a Bearer credential and no Anthropic header', () => {
    const built = createOpenAIAdapter().buildRequest(call({ messages: [{ role: 'user', content: 'Hi' }] }));
    expect(built.url).toBe('https://vllm.example/prefix/v1/chat/completions');
    expect(built.headers).toEqual({
      'content-type': 'application/json',
      accept: 'application/json',
      'x-request-id': 'req_abc',
      authorization: 'Bearer sk-upstream',
    });
    expect(JSON.parse(String(built.body))).toEqual({
      model: 'meta-llama/Llama-4-Maverick',
      messages: [{ role: 'user', content: 'Hi' }],
      max_tokens: 64,
    });
  });

  it('speaks Azure when configured: api-key header and ?api-version=', () => {
    const config: OpenAIAdapterConfig = {
      ...openAIAdapterConfig,
      credentialStyle: 'api-key',
      apiVersion: '2024-10-21',
    };
    const built = upstreamRequest(
      config,
      call({}, { endpointUrl: 'https://res.openai.azure.com/openai', stream: true }),
      toChatCompletionRequest(config, call({ messages: [] })).request,
    );
    expect(built.url).toBe('https://res.openai.azure.com/openai/v1/chat/completions?api-version=2024-10-21');
    expect(built.headers).toMatchObject({ 'api-key': 'sk-upstream', accept: 'text/event-stream' });
    expect(built.headers.authorization).toBeUndefined();
  });

  it('sends no credential when the pool has none, and what it can of a refused call', () => {
    const built = createOpenAIAdapter().buildRequest(
      call(
        {
          messages: [
            {
              role: 'user',
              content: [
                { type: 'text', text: 'Hi' },
                { type: 'image', source: { type: 'url', url: 'https://img.example/a.png' } },
                { type: 'image', source: { type: 'file', file_id: 'f' } },
              ],
            },
          ],
        },
        { credential: undefined },
      ),
    );
    expect(built.headers.authorization).toBeUndefined();
    expect(JSON.parse(String(built.body)).messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Hi' },
          { type: 'image_url', image_url: { url: 'https://img.example/a.png' } },
        ],
      },
    ]);
  });

  it('is in the registry, without a count-tokens capability', () => {
    const registry = createAdapterRegistry();
    expect(registry.openai.countTokens).toBeUndefined();
    expect(registry.anthropic.countTokens).toBeDefined();
    expect(registry.openai.acceptsContentType('text/event-stream; charset=utf-8', true)).toBe(true);
    expect(registry.openai.acceptsContentType('application/json', true)).toBe(false);
    expect(registry.openai.acceptsContentType('application/json', false)).toBe(true);
  });
});

describe('upstream error bodies', () => {
  it.each([
    [
      'OpenAI',
      '{"error":{"message":"max_tokens is too large","type":"invalid_request_error","param":"max_tokens","code":null}}',
      { type: 'invalid_request_error', message: 'max_tokens is too large' },
    ],
    [
      'vLLM',
      '{"error":{"message":"The model `x` does not exist.","type":"NotFoundError","param":null,"code":404}}',
      { type: 'NotFoundError', message: 'The model `x` does not exist.' },
    ],
    [
      'older vLLM',
      '{"object":"error","message":"prompt too long","type":"BadRequestError","param":null,"code":400}',
      { type: 'BadRequestError', message: 'prompt too long' },
    ],
    [
      'TGI',
      '{"error":"Input validation error","error_type":"validation"}',
      { type: 'validation', message: 'Input validation error' },
    ],
    ['not JSON', '<html>Bad Gateway</html>', {}],
  ])('reads the %s shape', (_name, text, expected) => {
    expect(parseErrorBody(text)).toEqual(expected);
  });
});

describe('response: chat completion → Message', () => {
  const completion = (message: JsonObject, extra: JsonObject = {}, choice: JsonObject = {}) =>
    JSON.stringify({
      id: 'chatcmpl-9f8e7d6c',
      object: 'chat.completion',
      created: 1743868800,
      model: 'meta-llama/Llama-4-Maverick',
      choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason: 'stop', ...choice }],
      usage: {
        prompt_tokens: 120,
        completion_tokens: 9,
        total_tokens: 129,
        prompt_tokens_details: { cached_tokens: 100 },
      },
      ...extra,
    });

  it('translates text, the id, the model and the usage (cached tokens as cache reads)', () => {
    expect(toAnthropicMessage(completion({ content: 'Bonjour !' }), 'fallback', answer)).toEqual(
      ok({
        message: {
          id: 'msg_9f8e7d6c',
          type: 'message',
          role: 'assistant',
          model: alias,
          content: [{ type: 'text', text: 'Bonjour !' }],
          stop_reason: 'end_turn',
          stop_sequence: null,
          usage: {
            input_tokens: 20,
            output_tokens: 9,
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: 100,
          },
        },
        usage: { inputTokens: 20, outputTokens: 9, cacheReadInputTokens: 100, cacheCreationInputTokens: 0 },
      }),
    );
  });

  it('translates tool calls into tool_use blocks after the text, ids prefixed toolu_', () => {
    const translated = toAnthropicMessage(
      completion(
        {
          content: 'Let me check.',
          tool_calls: [
            { id: 'call_abc', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
            { id: 'toolu_kept', type: 'function', function: { name: 'get_time', arguments: '' } },
            { type: 'function', function: { name: 'noop', arguments: '{}' } },
          ],
        },
        {},
        { finish_reason: 'tool_calls' },
      ),
      'fallback',
      answer,
    );
    expect(translated.ok && translated.value.message).toMatchObject({
      content: [
        { type: 'text', text: 'Let me check.' },
        { type: 'tool_use', id: 'toolu_call_abc', name: 'get_weather', input: { city: 'Paris' } },
        { type: 'tool_use', id: 'toolu_kept', name: 'get_time', input: {} },
        { type: 'tool_use', id: 'toolu_9f8e7d6c_2', name: 'noop', input: {} },
      ],
      stop_reason: 'tool_use',
    });
  });

  it('fails with api_error when tool arguments are not a JSON object', () => {
    for (const args of ['{"city": "Par', '[1, 2]']) {
      const translated = toAnthropicMessage(
        completion({
          content: null,
          tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: args } }],
        }),
        'fallback',
        answer,
      );
      expect(translated).toEqual(err(expect.objectContaining({ type: 'api_error' })));
    }
  });

  it.each([
    ['stop', null, false, { reason: 'end_turn', sequence: null }],
    ['stop', 'END', false, { reason: 'stop_sequence', sequence: 'END' }],
    ['stop', 128009, false, { reason: 'end_turn', sequence: null }],
    ['stop', null, true, { reason: 'tool_use', sequence: null }],
    ['length', null, false, { reason: 'max_tokens', sequence: null }],
    ['tool_calls', null, true, { reason: 'tool_use', sequence: null }],
    ['function_call', null, true, { reason: 'tool_use', sequence: null }],
    ['content_filter', null, false, { reason: 'refusal', sequence: null }],
    ['eos_token', null, false, { reason: 'end_turn', sequence: null }],
  ])('maps finish_reason %s (matched %s, tools %s)', (finish, matched, tools, expected) => {
    expect(stopOf(finish, matched, tools)).toEqual(expected);
  });

  it('sets stop_sequence from the stop string vLLM reports', () => {
    const translated = toAnthropicMessage(completion({ content: 'a b ' }, {}, { stop_reason: 'END' }), 'x', answer);
    expect(translated.ok && translated.value.message).toMatchObject({
      stop_reason: 'stop_sequence',
      stop_sequence: 'END',
    });
  });

  it('makes ids from the upstream id, or the fallback', () => {
    expect(messageIdOf('chatcmpl-3f9b2c7e', 'f')).toBe('msg_3f9b2c7e');
    expect(messageIdOf('cmpl/odd id', 'f')).toBe('msg_cmploddid');
    expect(messageIdOf(undefined, 'f00')).toBe('msg_f00');
    expect(toolUseIdOf('chatcmpl-tool-5e8d', 'msg_x', 0)).toBe('toolu_chatcmpl-tool-5e8d');
    expect(toolUseIdOf(undefined, 'msg_x', 3)).toBe('toolu_x_3');
  });

  it('turns an error body in a 200 into that error, and anything else into api_error', () => {
    expect(
      toAnthropicMessage('{"error":{"message":"Overloaded","type":"server_error","code":503}}', 'x', answer),
    ).toEqual(err(expect.objectContaining({ type: 'overloaded_error', message: 'Overloaded' })));
    expect(toAnthropicMessage('{"object":"list","data":[]}', 'x', answer)).toEqual(
      err(expect.objectContaining({ type: 'api_error' })),
    );
    expect(toAnthropicMessage('not json', 'x', answer)).toEqual(err(expect.objectContaining({ type: 'api_error' })));
  });
});

/** An upstream body from text pieces, one chunk each; `failure` ends it like a broken connection. */
async function* bodyOf(pieces: string[], failure?: TransportFailure): UpstreamBody {
  for (const piece of pieces) yield ok(Buffer.from(piece));
  if (failure) yield err(failure);
}

async function collect(stream: AsyncIterable<Result<CompletionEvent>>) {
  const items: Result<CompletionEvent>[] = [];
  for await (const item of stream) items.push(item);
  return items;
}

/** The relayed SSE events as `{event, data}` with the data parsed; other items as they are. */
function readable(items: Result<CompletionEvent>[]) {
  return items.map((item) => {
    if (!item.ok) return { error: item.error.type, message: item.error.message };
    const value = item.value;
    if (value.kind === 'sse') return { event: value.event, data: JSON.parse(Buffer.from(value.data).toString()) };
    if (value.kind === 'message') return { message: JSON.parse(Buffer.from(value.json).toString()) };
    return value;
  });
}

const fixture = (name: string) => readFileSync(join(__dirname, 'fixtures', name), 'utf8');
const relay = (pieces: string[], failure?: TransportFailure) =>
  collect(createOpenAIAdapter(openAIAdapterConfig, () => 'generated').relay(bodyOf(pieces, failure), relayCall(true)));

/** Cuts text into pieces of `size` characters: chunk boundaries anywhere, even inside a line. */
function pieces(text: string, size: number): string[] {
  const cut: string[] = [];
  for (let at = 0; at < text.length; at += size) cut.push(text.slice(at, at + size));
  return cut;
}

describe('stream: a recorded vLLM transcript → the Anthropic event order', () => {
  it('translates a text answer exactly, with cached prompt tokens', async () => {
    const text = (delta: string) => ({
      event: 'content_block_delta',
      data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: delta } },
    });
    expect(readable(await relay([fixture('vllm-text-stream.sse')]))).toEqual([
      {
        event: 'message_start',
        data: {
          type: 'message_start',
          message: {
            id: 'msg_3f9b2c7e81d54a6b9e0f4c2d1a7b8e65',
            type: 'message',
            role: 'assistant',
            model: alias,
            content: [],
            stop_reason: null,
            stop_sequence: null,
            usage: { input_tokens: 13, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
          },
        },
      },
      {
        event: 'content_block_start',
        data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      },
      { event: 'ping', data: { type: 'ping' } },
      text('The'),
      text(' capital'),
      text(' of'),
      text(' France'),
      text(' is'),
      text(' Paris'),
      text('.'),
      { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
      {
        event: 'message_delta',
        data: {
          type: 'message_delta',
          delta: { stop_reason: 'end_turn', stop_sequence: null },
          usage: { output_tokens: 8, input_tokens: 10, cache_read_input_tokens: 32 },
        },
      },
      { event: 'message_stop', data: { type: 'message_stop' } },
      {
        kind: 'finished',
        usage: { inputTokens: 10, outputTokens: 8, cacheReadInputTokens: 32, cacheCreationInputTokens: 0 },
      },
    ]);
  });

  it('translates text then two tool calls exactly: one block each, indices in start order', async () => {
    const delta = (index: number, value: JsonObject) => ({
      event: 'content_block_delta',
      data: { type: 'content_block_delta', index, delta: value },
    });
    const text = (value: string) => delta(0, { type: 'text_delta', text: value });
    const json = (index: number, value: string) => delta(index, { type: 'input_json_delta', partial_json: value });
    const start = (index: number, block: JsonObject) => ({
      event: 'content_block_start',
      data: { type: 'content_block_start', index, content_block: block },
    });
    const stop = (index: number) => ({ event: 'content_block_stop', data: { type: 'content_block_stop', index } });
    expect(readable(await relay([fixture('vllm-tool-stream.sse')]))).toEqual([
      {
        event: 'message_start',
        data: {
          type: 'message_start',
          message: {
            id: 'msg_a41c0e5d7b2f4e8c9d6b3a1f0e2c4d87',
            type: 'message',
            role: 'assistant',
            model: alias,
            content: [],
            stop_reason: null,
            stop_sequence: null,
            usage: { input_tokens: 13, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
          },
        },
      },
      start(0, { type: 'text', text: '' }),
      { event: 'ping', data: { type: 'ping' } },
      text("I'll"),
      text(' check'),
      text(' both'),
      text(' cities'),
      text('.'),
      stop(0),
      start(1, {
        type: 'tool_use',
        id: 'toolu_chatcmpl-tool-5e8d2b1c9f3a4d7e8b6c0a2f1e3d5c79',
        name: 'get_weather',
        input: {},
      }),
      json(1, ''),
      json(1, '{"city": "'),
      json(1, 'Par'),
      json(1, 'is", "unit": "c'),
      json(1, 'elsius"}'),
      stop(1),
      start(2, {
        type: 'tool_use',
        id: 'toolu_chatcmpl-tool-0b7a6c3e2d1f4e9a8c5b7d3e1f2a4b60',
        name: 'get_weather',
        input: {},
      }),
      json(2, ''),
      json(2, '{"city": "'),
      json(2, 'Ber'),
      json(2, 'lin", "unit": "c'),
      json(2, 'elsius"}'),
      stop(2),
      {
        event: 'message_delta',
        data: {
          type: 'message_delta',
          delta: { stop_reason: 'tool_use', stop_sequence: null },
          usage: { output_tokens: 45, input_tokens: 311, cache_read_input_tokens: 0 },
        },
      },
      { event: 'message_stop', data: { type: 'message_stop' } },
      {
        kind: 'finished',
        usage: { inputTokens: 311, outputTokens: 45, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
      },
    ]);
  });

  it('gives the same events however the bytes are cut', async () => {
    const whole = fixture('vllm-tool-stream.sse');
    const expected = readable(await relay([whole]));
    for (const size of [1, 7, 64, 333]) expect(readable(await relay(pieces(whole, size)))).toEqual(expected);
  });

  it('emits each chunk’s events before reading the next chunk (no buffering)', async () => {
    const lines = fixture('vllm-text-stream.sse').split(/(?<=\n\n)/);
    let pulled = 0;
    async function* upstream(): UpstreamBody {
      for (const line of lines) {
        pulled += 1;
        yield ok(Buffer.from(line));
      }
    }
    const seen: { event: string; pulled: number }[] = [];
    for await (const item of createOpenAIAdapter().relay(upstream(), relayCall(true))) {
      if (item.ok && item.value.kind === 'sse') seen.push({ event: item.value.event, pulled });
    }
    // message_start with the first chunk, the text block and ping with the second, one delta per chunk after.
    expect(seen.slice(0, 5)).toEqual([
      { event: 'message_start', pulled: 1 },
      { event: 'content_block_start', pulled: 2 },
      { event: 'ping', pulled: 2 },
      { event: 'content_block_delta', pulled: 2 },
      { event: 'content_block_delta', pulled: 3 },
    ]);
    expect(seen.at(-1)).toEqual({ event: 'message_stop', pulled: 10 });
  });
});

describe('stream: other upstream behaviour', () => {
  const data = (chunk: JsonObject) => `data: ${JSON.stringify({ id: 'chatcmpl-s1', model: 'm', ...chunk })}\n\n`;
  const content = (text: string, finish: string | null = null, extra: JsonObject = {}) =>
    data({ choices: [{ index: 0, delta: { content: text }, finish_reason: finish, ...extra }] });

  it('estimates output_tokens from the chunks when the upstream sends no usage, at [DONE]', async () => {
    const items = readable(await relay([content('a'), content(' b'), content(' c', 'stop'), 'data: [DONE]\n\n']));
    expect(items.slice(-3)).toEqual([
      {
        event: 'message_delta',
        data: {
          type: 'message_delta',
          delta: { stop_reason: 'end_turn', stop_sequence: null },
          usage: { output_tokens: 3 },
        },
      },
      { event: 'message_stop', data: { type: 'message_stop' } },
      {
        kind: 'finished',
        usage: { inputTokens: 13, outputTokens: 3, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
      },
    ]);
  });

  it('closes at once when usage comes with the finish reason (llama.cpp), and takes input tokens at the start when known', async () => {
    const usage = { prompt_tokens: 12, completion_tokens: 2, total_tokens: 14 };
    const items = readable(
      await relay([
        data({
          choices: [{ index: 0, delta: { role: 'assistant', content: 'Hi' } }],
          usage: { prompt_tokens: 12, completion_tokens: 1 },
        }),
        content(' there', 'stop', {}).replace('"choices"', `"usage":${JSON.stringify(usage)},"choices"`),
        'data: [DONE]\n\n',
      ]),
    );
    expect((items[0] as { data: { message: { usage: JsonObject } } }).data.message.usage.input_tokens).toBe(12);
    expect(items.map((item) => ('event' in item ? item.event : 'kind' in item ? item.kind : 'error'))).toEqual([
      'message_start',
      'content_block_start',
      'ping',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
      'finished',
    ]);
  });

  it('starts a new text block when text follows a tool call, and reports stop_sequence when vLLM names the stop', async () => {
    const items = readable(
      await relay([
        data({
          choices: [
            { index: 0, delta: { tool_calls: [{ index: 0, id: 'call_1', function: { name: 'f', arguments: '{}' } }] } },
          ],
        }),
        content('after'),
        content('', 'stop', { stop_reason: 'END' }),
        'data: [DONE]\n\n',
      ]),
    );
    const events = items.flatMap((item) => ('event' in item ? [item] : []));
    expect(events.filter((item) => item.event === 'content_block_start').map((item) => item.data.index)).toEqual([
      0, 1,
    ]);
    expect(events.find((item) => item.event === 'message_delta')!.data.delta).toEqual({
      stop_reason: 'tool_use',
      stop_sequence: null,
    });
    const named = readable(
      await relay([content('x'), content('', 'stop', { stop_reason: 'END' }), 'data: [DONE]\n\n']),
    );
    expect(named.find((item) => 'event' in item && item.event === 'message_delta')).toMatchObject({
      data: { delta: { stop_reason: 'stop_sequence', stop_sequence: 'END' } },
    });
  });

  it('answers an empty stream ([DONE] only) with a whole, empty message', async () => {
    const items = readable(await relay(['data: [DONE]\n\n']));
    expect(items.map((item) => ('event' in item ? item.event : 'finished'))).toEqual([
      'message_start',
      'message_delta',
      'message_stop',
      'finished',
    ]);
    expect((items[0] as { data: { message: { id: string } } }).data.message.id).toBe('msg_generated');
  });

  it('fails with the upstream error (by its status) when an error chunk comes mid-stream', async () => {
    const items = readable(
      await relay([
        content('one'),
        'data: {"error":{"message":"Overloaded","type":"server_error","param":null,"code":503}}\n\n',
      ]),
    );
    expect(items.at(-1)).toEqual({ error: 'overloaded_error', message: 'Overloaded' });
    const other = readable(await relay([content('one'), 'data: {"error":"boom","error_type":"generation"}\n\n']));
    expect(other.at(-1)).toEqual({ error: 'api_error', message: 'boom' });
  });

  it('fails with api_error when the stream ends early, breaks, or is not JSON', async () => {
    expect(readable(await relay([content('one')])).at(-1)).toMatchObject({
      error: 'api_error',
      message: expect.stringContaining('ended the stream early'),
    });
    expect(readable(await relay([content('one')], { kind: 'reset', code: 'ECONNRESET' })).at(-1)).toMatchObject({
      error: 'api_error',
      message: expect.stringContaining('broke mid-response'),
    });
    expect(readable(await relay([content('one')], { kind: 'cancelled', code: 'ABORTED' })).at(-1)).toMatchObject({
      event: 'content_block_delta',
    });
    expect(readable(await relay(['data: {not json\n\n'])).at(-1)).toMatchObject({ error: 'api_error' });
  });

  it('fails with api_error when streamed tool arguments are not a JSON object', async () => {
    const items = readable(
      await relay([
        data({
          choices: [
            {
              index: 0,
              delta: { tool_calls: [{ index: 0, id: 'call_1', function: { name: 'f', arguments: '{"a":' } }] },
            },
          ],
        }),
        data({ choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] }),
        'data: [DONE]\n\n',
      ]),
    );
    expect(items.at(-1)).toMatchObject({ error: 'api_error', message: expect.stringContaining('tool arguments') });
  });
});

describe('non-streamed relay', () => {
  it('yields one Message, then finished with the usage', async () => {
    const body = JSON.stringify({
      id: 'chatcmpl-n1',
      model: 'm',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hello' }, finish_reason: 'length' }],
      usage: { prompt_tokens: 5, completion_tokens: 1 },
    });
    const items = readable(await collect(createOpenAIAdapter().relay(bodyOf(pieces(body, 10)), relayCall(false))));
    expect(items).toEqual([
      {
        message: expect.objectContaining({
          id: 'msg_n1',
          content: [{ type: 'text', text: 'Hello' }],
          stop_reason: 'max_tokens',
        }),
      },
      {
        kind: 'finished',
        usage: { inputTokens: 5, outputTokens: 1, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
      },
    ]);
  });
});

describe('reasoning (reasoning_content) as thinking, the alias and the input estimate', () => {
  const chunk = (delta: JsonObject, finish: string | null = null, extra: JsonObject = {}) =>
    JSON.stringify({
      id: 'chatcmpl-r1',
      model: 'deepseek-ai/DeepSeek-R1',
      choices: [{ index: 0, delta, finish_reason: finish }],
      ...extra,
    });
  const transcript = [
    chunk({ role: 'assistant', content: '' }),
    chunk({ reasoning_content: 'Think' }),
    chunk({ reasoning: ' harder' }),
    chunk({ content: 'Answer' }),
    chunk({}, 'stop'),
    JSON.stringify({
      id: 'chatcmpl-r1',
      choices: [],
      usage: { prompt_tokens: 40, completion_tokens: 3, prompt_tokens_details: { cached_tokens: 30 } },
    }),
  ];
  const translate = (thinking: boolean) => {
    const translator = new ChatStreamTranslator('f', { ...answer, thinking });
    const events = transcript.flatMap((data) => {
      const step = translator.accept(data);
      return step.ok ? step.value : [];
    });
    return { events, end: translator.end() };
  };

  it('streams the reasoning as a thinking block when the caller asked for thinking', () => {
    const { events, end } = translate(true);
    expect(events).toEqual([
      {
        event: 'message_start',
        data: {
          type: 'message_start',
          message: {
            id: 'msg_r1',
            type: 'message',
            role: 'assistant',
            model: alias,
            content: [],
            stop_reason: null,
            stop_sequence: null,
            usage: { input_tokens: 13, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
          },
        },
      },
      {
        event: 'content_block_start',
        data: {
          type: 'content_block_start',
          index: 0,
          content_block: { type: 'thinking', thinking: '', signature: '' },
        },
      },
      { event: 'ping', data: { type: 'ping' } },
      {
        event: 'content_block_delta',
        data: { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'Think' } },
      },
      {
        event: 'content_block_delta',
        data: { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: ' harder' } },
      },
      { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
      {
        event: 'content_block_start',
        data: { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } },
      },
      {
        event: 'content_block_delta',
        data: { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'Answer' } },
      },
      { event: 'content_block_stop', data: { type: 'content_block_stop', index: 1 } },
      {
        event: 'message_delta',
        data: {
          type: 'message_delta',
          delta: { stop_reason: 'end_turn', stop_sequence: null },
          usage: { output_tokens: 3, input_tokens: 10, cache_read_input_tokens: 30 },
        },
      },
      { event: 'message_stop', data: { type: 'message_stop' } },
    ]);
    expect(end).toEqual(
      ok({
        events: [],
        usage: { inputTokens: 10, outputTokens: 3, cacheReadInputTokens: 30, cacheCreationInputTokens: 0 },
      }),
    );
  });

  it('leaves the reasoning out, still counted, when the caller did not ask for thinking', () => {
    const { events, end } = translate(false);
    expect(events.filter((event) => event.event === 'content_block_start')).toEqual([
      {
        event: 'content_block_start',
        data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      },
    ]);
    expect(JSON.stringify(events)).not.toContain('Think');
    expect(end.ok && end.value.usage.outputTokens).toBe(3);
  });

  it('puts the reasoning first as a thinking block in a whole answer, naming the alias', () => {
    const body = JSON.stringify({
      id: 'chatcmpl-r2',
      model: 'deepseek-ai/DeepSeek-R1',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Answer', reasoning_content: 'Think' } }],
    });
    const withThinking = toAnthropicMessage(body, 'f', { ...answer, thinking: true });
    expect(withThinking.ok && withThinking.value.message).toMatchObject({
      model: alias,
      content: [
        { type: 'thinking', thinking: 'Think', signature: '' },
        { type: 'text', text: 'Answer' },
      ],
      // No usage from the upstream: the input is the router's estimate.
      usage: { input_tokens: 13, output_tokens: 0 },
    });
    const without = toAnthropicMessage(body, 'f', answer);
    expect(without.ok && without.value.message.content).toEqual([{ type: 'text', text: 'Answer' }]);
  });

  it('knows thinking is asked for by thinking.type enabled or adaptive', () => {
    expect(thinkingRequested({ thinking: { type: 'enabled', budget_tokens: 2048 } })).toBe(true);
    expect(thinkingRequested({ thinking: { type: 'adaptive' } })).toBe(true);
    expect(thinkingRequested({ thinking: { type: 'disabled' } })).toBe(false);
    expect(thinkingRequested({})).toBe(false);
  });
});
