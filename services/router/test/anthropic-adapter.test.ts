import { err, ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import { createAnthropicAdapter } from '../src/adapters/anthropic';
import { anthropicAdapterConfig } from '../src/adapters/anthropic/config';
import {
  AnthropicStreamReader,
  acceptsContentType,
  inputTokensOfCount,
  mergeUsage,
  parseErrorBody,
  toCountTokensRequest,
  toUpstreamRequest,
  relayedMessage,
} from '../src/adapters/anthropic/transform';
import type { AdapterCall } from '../src/adapters';
import type { CompletionEvent } from '../src/completion';
import { noUsage } from '../src/completion';
import type { TransportFailure, UpstreamBody } from '../src/upstream-http';

function call(extra: Partial<AdapterCall> = {}): AdapterCall {
  const body = extra.body ?? {
    model: 'claude-sonnet-5',
    max_tokens: 64,
    system: 'Be brief.',
    temperature: 0.2,
    messages: [{ role: 'user', content: 'Hi' }],
  };
  return {
    endpointUrl: 'https://upstream.example/prefix',
    upstreamModel: 'claude-sonnet-5-20250929',
    body,
    rawBody: Buffer.from(JSON.stringify(body)),
    stream: false,
    headers: {},
    query: '',
    credential: undefined,
    requestId: 'req_abc',
    ...extra,
  };
}

describe('toUpstreamRequest', () => {
  it('posts to the endpoint with the pool model and every other field untouched', () => {
    const request = toUpstreamRequest(anthropicAdapterConfig, call());
    expect(request.url).toBe('https://upstream.example/prefix/v1/messages');
    expect(JSON.parse(String(request.body))).toEqual({
      model: 'claude-sonnet-5-20250929',
      max_tokens: 64,
      system: 'Be brief.',
      temperature: 0.2,
      messages: [{ role: 'user', content: 'Hi' }],
    });
  });

  it('defaults anthropic-version, sends no credential when the pool has none', () => {
    const { headers } = toUpstreamRequest(anthropicAdapterConfig, call());
    expect(headers).toEqual({
      'content-type': 'application/json',
      accept: 'application/json',
      'anthropic-version': '2023-06-01',
      'x-request-id': 'req_abc',
    });
  });

  it('forwards anthropic-version and anthropic-beta, and sends the credential as x-api-key', () => {
    const { headers } = toUpstreamRequest(
      anthropicAdapterConfig,
      call({
        headers: { 'anthropic-version': '2024-01-01', 'anthropic-beta': 'b1,b2', 'user-agent': 'not forwarded' },
        credential: 'sk-upstream',
        stream: true,
      }),
    );
    expect(headers).toMatchObject({
      'anthropic-version': '2024-01-01',
      'anthropic-beta': 'b1,b2',
      'x-api-key': 'sk-upstream',
      accept: 'text/event-stream',
    });
    expect(headers['user-agent']).toBeUndefined();
  });

  it('makes the stream field follow the call', () => {
    const streamed = toUpstreamRequest(anthropicAdapterConfig, call({ stream: true }));
    expect(JSON.parse(String(streamed.body)).stream).toBe(true);
    const contradicting = call({ stream: false, body: { ...call().body, stream: true } });
    expect(JSON.parse(String(toUpstreamRequest(anthropicAdapterConfig, contradicting).body)).stream).toBe(false);
  });
});

describe('toCountTokensRequest', () => {
  const countBody = {
    model: 'claude-sonnet-5',
    system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
    messages: [{ role: 'user', content: 'Hi' }],
    tools: [{ name: 'lookup', input_schema: { type: 'object', properties: { q: { type: 'string' } } } }],
    tool_choice: { type: 'auto' },
    thinking: { type: 'enabled', budget_tokens: 2048 },
  };
  const countCall = (extra: Partial<AdapterCall> = {}) => {
    const { stream: _stream, ...rest } = call({ body: countBody, ...extra });
    return rest;
  };

  it('posts to count_tokens under the endpoint, with the pool model and every other field untouched', () => {
    const request = toCountTokensRequest(anthropicAdapterConfig, countCall());
    expect(request.url).toBe('https://upstream.example/prefix/v1/messages/count_tokens');
    expect(JSON.parse(String(request.body))).toEqual({ ...countBody, model: 'claude-sonnet-5-20250929' });
  });

  it('adds no stream field and leaves the caller body alone', () => {
    const request = toCountTokensRequest(anthropicAdapterConfig, countCall());
    expect('stream' in JSON.parse(String(request.body))).toBe(false);
    expect(countBody.model).toBe('claude-sonnet-5');
  });

  it('sends the same headers as a non-streamed Messages call', () => {
    const extra = {
      headers: { 'anthropic-version': '2024-01-01', 'anthropic-beta': 'token-counting-2024-11-01', 'x-other': 'no' },
      credential: 'sk-upstream',
    };
    const counted = toCountTokensRequest(anthropicAdapterConfig, countCall(extra));
    expect(counted.headers).toEqual({
      'content-type': 'application/json',
      accept: 'application/json',
      'anthropic-version': '2024-01-01',
      'anthropic-beta': 'token-counting-2024-11-01',
      'x-api-key': 'sk-upstream',
      'x-request-id': 'req_abc',
    });
    expect(counted.headers).toEqual(toUpstreamRequest(anthropicAdapterConfig, call(extra)).headers);
  });

  it('defaults anthropic-version and sends no credential when the pool has none', () => {
    const { headers } = toCountTokensRequest(anthropicAdapterConfig, countCall());
    expect(headers['anthropic-version']).toBe('2023-06-01');
    expect(headers['x-api-key']).toBeUndefined();
  });

  it('is the adapter count-tokens capability, accepting JSON only', () => {
    const counting = createAnthropicAdapter().countTokens!;
    expect(counting.buildRequest(countCall())).toEqual(toCountTokensRequest(anthropicAdapterConfig, countCall()));
    expect(counting.acceptsContentType('application/json; charset=utf-8')).toBe(true);
    expect(counting.acceptsContentType('text/event-stream')).toBe(false);
  });
});

describe('inputTokensOfCount', () => {
  it('reads input_tokens from the count body', () => {
    expect(inputTokensOfCount('{"input_tokens":2095}')).toEqual(ok(2095));
    expect(inputTokensOfCount('{"input_tokens":0,"context_management":null}')).toEqual(ok(0));
  });

  it.each(['{"input_tokens":-1}', '{"input_tokens":1.5}', '{"input_tokens":"3"}', '{}', '[3]', 'nope', ''])(
    'refuses %s as api_error',
    (text) => {
      expect(inputTokensOfCount(text)).toMatchObject({ ok: false, error: { type: 'api_error' } });
    },
  );
});

describe('response checks', () => {
  it('accepts SSE for streams and JSON for messages only', () => {
    expect(acceptsContentType('text/event-stream; charset=utf-8', true)).toBe(true);
    expect(acceptsContentType('application/json', true)).toBe(false);
    expect(acceptsContentType('application/json', false)).toBe(true);
    expect(acceptsContentType('text/html', false)).toBe(false);
    expect(acceptsContentType(undefined, false)).toBe(false);
  });

  it('reads the upstream error envelope', () => {
    expect(
      parseErrorBody('{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: bad"}}'),
    ).toEqual({ type: 'invalid_request_error', message: 'max_tokens: bad' });
    expect(parseErrorBody('<html>bad gateway</html>')).toEqual({});
  });

  it('reads usage from a Message body, and names the alias in it', () => {
    const usage = { input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 3, cache_creation_input_tokens: null };
    const body = JSON.stringify({ type: 'message', model: 'claude-sonnet-5-20250929', usage });
    expect(relayedMessage(body, 'claude-sonnet-5')).toEqual(
      ok({
        json: JSON.stringify({ type: 'message', model: 'claude-sonnet-5', usage }),
        usage: { inputTokens: 10, outputTokens: 5, cacheReadInputTokens: 3, cacheCreationInputTokens: 0 },
      }),
    );
    expect(relayedMessage('{"type":"error"}', 'm')).toMatchObject({ ok: false, error: { type: 'api_error' } });
  });

  it('keeps known counts where the wire usage has none', () => {
    const known = { ...noUsage, inputTokens: 7 };
    expect(mergeUsage(known, { output_tokens: 2 })).toEqual({ ...known, outputTokens: 2 });
    expect(mergeUsage(known, null)).toBe(known);
  });
});

describe('AnthropicStreamReader', () => {
  it('takes usage from message_start and the cumulative message_delta counts', () => {
    const reader = new AnthropicStreamReader('claude-sonnet-5');
    const start = {
      type: 'message_start',
      message: { usage: { input_tokens: 12, output_tokens: 1, cache_read_input_tokens: 4 } },
    };
    expect(reader.accept({ event: 'message_start', data: JSON.stringify(start) })).toEqual({
      kind: 'relay',
      event: 'message_start',
      data: JSON.stringify({ ...start, message: { ...start.message, model: 'claude-sonnet-5' } }),
    });
    const delta = '{"type":"message_delta","usage":{"output_tokens":3}}';
    expect(reader.accept({ event: 'message_delta', data: delta })).toEqual({ kind: 'relay', event: 'message_delta' });
    reader.accept({ event: 'message_delta', data: '{"type":"message_delta","usage":{"output_tokens":9}}' });
    reader.accept({ event: 'message_stop', data: '{"type":"message_stop"}' });
    expect(reader.finish()).toEqual(
      ok({ inputTokens: 12, outputTokens: 9, cacheReadInputTokens: 4, cacheCreationInputTokens: 0 }),
    );
  });

  it('fails a stream that ends before message_stop', () => {
    const reader = new AnthropicStreamReader('claude-sonnet-5');
    reader.accept({ event: 'message_start', data: '{"type":"message_start","message":{}}' });
    expect(reader.finish()).toMatchObject({ ok: false, error: { type: 'api_error' } });
  });

  it('turns an error event into an error of its type when the catalogue knows it, else api_error', () => {
    const known = new AnthropicStreamReader('claude-sonnet-5').accept({
      event: 'error',
      data: '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
    });
    expect(known).toEqual({ kind: 'fail', error: { type: 'overloaded_error', message: 'Overloaded' } });
    const unknown = new AnthropicStreamReader('claude-sonnet-5').accept({
      event: 'error',
      data: '{"type":"error","error":{"type":"timeout_error","message":"Timed out"}}',
    });
    expect(unknown).toMatchObject({ kind: 'fail', error: { type: 'api_error' } });
  });

  it('skips events without a name and fails on a malformed message_start', () => {
    const reader = new AnthropicStreamReader('claude-sonnet-5');
    expect(reader.accept({ data: '{}' })).toEqual({ kind: 'skip' });
    expect(reader.accept({ event: 'message_start', data: 'not json' })).toMatchObject({ kind: 'fail' });
  });
});

async function* bodyOf(...chunks: (string | Uint8Array | TransportFailure)[]): UpstreamBody {
  for (const chunk of chunks) {
    if (typeof chunk === 'string') yield ok(Buffer.from(chunk));
    else if (chunk instanceof Uint8Array) yield ok(chunk);
    else yield err(chunk);
  }
}

async function relayAll(body: UpstreamBody, stream: boolean): Promise<Result<CompletionEvent>[]> {
  const items: Result<CompletionEvent>[] = [];
  const call = { stream, model: 'claude-sonnet-5', body: {} };
  for await (const item of createAnthropicAdapter().relay(body, call)) items.push(item);
  return items;
}

const streamText = [
  'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","model":"claude-sonnet-5-20250929","usage":{"input_tokens":5,"output_tokens":1}}}\n\n',
  'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n',
  'event: ping\ndata: {"type": "ping"}\n\n',
  'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Grüße  "}}\n\n',
  'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n',
  'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}\n\n',
  'event: message_stop\ndata: {"type":"message_stop"}\n\n',
].join('');

describe('relay', () => {
  it('relays each event verbatim but message_start naming the alias, however the bytes were split, then Finished', async () => {
    const bytes = Buffer.from(streamText);
    // Split everywhere, including inside the two-byte "ü".
    const pieces = Array.from({ length: Math.ceil(bytes.length / 7) }, (_, i) => bytes.subarray(i * 7, i * 7 + 7));
    const items = await relayAll(bodyOf(...pieces), true);
    const relayed = items.flatMap((item) =>
      item.ok && item.value.kind === 'sse'
        ? [`event: ${item.value.event}\ndata: ${Buffer.from(item.value.data).toString()}\n\n`]
        : [],
    );
    expect(relayed.join('')).toBe(streamText.replace('"claude-sonnet-5-20250929"', '"claude-sonnet-5"'));
    expect(items.at(-1)).toEqual(
      ok({
        kind: 'finished',
        usage: { inputTokens: 5, outputTokens: 2, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
      }),
    );
  });

  it('ends with api_error when the connection breaks mid-stream', async () => {
    const items = await relayAll(bodyOf(streamText.slice(0, 200), { kind: 'reset', code: 'UND_ERR_SOCKET' }), true);
    expect(items.at(-1)).toMatchObject({ ok: false, error: { type: 'api_error' } });
  });

  it('ends quietly when the caller cancelled', async () => {
    const items = await relayAll(bodyOf(streamText.slice(0, 200), { kind: 'cancelled', code: 'ABORTED' }), true);
    expect(items.every((item) => item.ok)).toBe(true);
    expect(items.some((item) => item.ok && item.value.kind === 'finished')).toBe(false);
  });

  it('relays an upstream error event as an error and stops', async () => {
    const text = `${streamText.slice(0, streamText.indexOf('event: content_block_stop'))}event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n`;
    const items = await relayAll(bodyOf(text), true);
    expect(items.at(-1)).toEqual({ ok: false, error: { type: 'overloaded_error', message: 'Overloaded' } });
  });

  it('relays a Message body as received but naming the alias, then Finished', async () => {
    const json =
      '{"type":"message","model":"claude-sonnet-5-20250929","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":3,"output_tokens":1}}';
    const items = await relayAll(bodyOf(json.slice(0, 10), json.slice(10)), false);
    expect(items).toHaveLength(2);
    const [message, finished] = items;
    expect(message!.ok && message!.value.kind === 'message' && Buffer.from(message!.value.json).toString()).toBe(
      json.replace('"claude-sonnet-5-20250929"', '"claude-sonnet-5"'),
    );
    expect(finished).toEqual(
      ok({
        kind: 'finished',
        usage: { inputTokens: 3, outputTokens: 1, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
      }),
    );
  });
});

describe('thinking and cache counts through the relay', () => {
  const signature = 'EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds';
  const events = [
    [
      'message_start',
      '{"type":"message_start","message":{"id":"msg_2","model":"claude-sonnet-5-20250929","usage":{"input_tokens":9,"output_tokens":1,"cache_creation_input_tokens":300,"cache_read_input_tokens":1200}}}',
    ],
    [
      'content_block_start',
      '{"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix"}}',
    ],
    ['ping', '{"type": "ping"}'],
    ['content_block_stop', '{"type":"content_block_stop","index":0}'],
    [
      'content_block_start',
      '{"type":"content_block_start","index":1,"content_block":{"type":"thinking","thinking":"","signature":""}}',
    ],
    [
      'content_block_delta',
      '{"type":"content_block_delta","index":1,"delta":{"type":"thinking_delta","thinking":"Let me think"}}',
    ],
    [
      'content_block_delta',
      `{"type":"content_block_delta","index":1,"delta":{"type":"signature_delta","signature":"${signature}"}}`,
    ],
    ['content_block_stop', '{"type":"content_block_stop","index":1}'],
    ['content_block_start', '{"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}'],
    ['content_block_delta', '{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"Done."}}'],
    ['content_block_stop', '{"type":"content_block_stop","index":2}'],
    [
      'message_delta',
      '{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":7}}',
    ],
    ['message_stop', '{"type":"message_stop"}'],
  ] as const;

  it('relays redacted_thinking, thinking_delta and signature_delta byte for byte, and the cache counts', async () => {
    const text = events.map(([event, data]) => `event: ${event}\ndata: ${data}\n\n`).join('');
    const items = await relayAll(bodyOf(text), true);
    const relayed = items.flatMap((item) =>
      item.ok && item.value.kind === 'sse' ? [[item.value.event, Buffer.from(item.value.data).toString()]] : [],
    );
    expect(relayed.slice(1)).toEqual(events.slice(1));
    expect(JSON.parse(relayed[0]![1]!)).toEqual({
      ...JSON.parse(events[0][1]),
      message: { ...JSON.parse(events[0][1]).message, model: 'claude-sonnet-5' },
    });
    expect(items.at(-1)).toEqual(
      ok({
        kind: 'finished',
        usage: { inputTokens: 9, outputTokens: 7, cacheReadInputTokens: 1200, cacheCreationInputTokens: 300 },
      }),
    );
  });

  it('relays a non-streamed Message with thinking blocks unchanged but the model', async () => {
    const message = {
      id: 'msg_3',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-5-20250929',
      content: [
        { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix' },
        { type: 'thinking', thinking: 'Let me think', signature },
        { type: 'text', text: 'Done.' },
      ],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 9, output_tokens: 7, cache_creation_input_tokens: 300, cache_read_input_tokens: 1200 },
    };
    const items = await relayAll(bodyOf(JSON.stringify(message)), false);
    const relayed =
      items[0]!.ok && items[0]!.value.kind === 'message' ? Buffer.from(items[0]!.value.json).toString() : '';
    expect(relayed).toBe(JSON.stringify({ ...message, model: 'claude-sonnet-5' }));
    expect(items[1]).toEqual(
      ok({
        kind: 'finished',
        usage: { inputTokens: 9, outputTokens: 7, cacheReadInputTokens: 1200, cacheCreationInputTokens: 300 },
      }),
    );
  });
});
