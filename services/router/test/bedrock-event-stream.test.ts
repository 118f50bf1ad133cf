import { EventStreamCodec } from '@smithy/core/event-streams';
import type { MessageHeaders } from '@smithy/core/event-streams';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import { createBedrockAdapter } from '../src/adapters/bedrock';
import { EventStreamDecoder, EventStreamError } from '../src/adapters/bedrock/event-stream';
import type { CompletionEvent } from '../src/completion';
import type { TransportFailure, UpstreamBody } from '../src/upstream-http';

const codec = new EventStreamCodec(toUtf8, fromUtf8);

function stringHeaders(values: Record<string, string>): MessageHeaders {
  return Object.fromEntries(Object.entries(values).map(([name, value]) => [name, { type: 'string', value }]));
}

/** A `chunk` frame as Bedrock sends it: the event's JSON, base64, in `{"bytes": …}`. */
function chunkFrame(event: object): Uint8Array {
  const bytes = Buffer.from(JSON.stringify(event)).toString('base64');
  return codec.encode({
    headers: stringHeaders({ ':event-type': 'chunk', ':content-type': 'application/json', ':message-type': 'event' }),
    body: Buffer.from(JSON.stringify({ bytes, p: 'abcdefghij' })),
  });
}

function exceptionFrame(type: string, message: string): Uint8Array {
  return codec.encode({
    headers: stringHeaders({
      ':exception-type': type,
      ':content-type': 'application/json',
      ':message-type': 'exception',
    }),
    body: Buffer.from(JSON.stringify({ message })),
  });
}

const messageEvents = [
  {
    type: 'message_start',
    message: {
      id: 'msg_bdrk_01',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5-20250929',
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 12, output_tokens: 1 },
    },
  },
  { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
  { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hello' } },
  { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: ' there' } },
  { type: 'content_block_stop', index: 0 },
  { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 2 } },
  {
    type: 'message_stop',
    'amazon-bedrock-invocationMetrics': {
      inputTokenCount: 12,
      outputTokenCount: 2,
      invocationLatency: 300,
      firstByteLatency: 100,
    },
  },
];

async function* bodyOf(...chunks: Uint8Array[]): UpstreamBody {
  for (const chunk of chunks) yield ok(chunk);
}

async function collect(body: UpstreamBody): Promise<Result<CompletionEvent>[]> {
  const adapter = createBedrockAdapter();
  const items: Result<CompletionEvent>[] = [];
  for await (const item of adapter.relay(body, { stream: true, model: 'claude-sonnet-4-5', body: {} }))
    items.push(item);
  return items;
}

describe('the event-stream decoder', () => {
  const frames = messageEvents.map(chunkFrame);
  const whole = Buffer.concat(frames);

  it('decodes every frame whatever byte offset the stream is cut at', () => {
    for (let offset = 0; offset <= whole.length; offset += 1) {
      const decoder = new EventStreamDecoder(1 << 20);
      const decoded = [...decoder.push(whole.subarray(0, offset)), ...decoder.push(whole.subarray(offset))];
      expect(decoded.map((frame) => frame.headers[':event-type'])).toEqual(messageEvents.map(() => 'chunk'));
      expect(decoder.midFrame).toBe(false);
    }
  });

  it('decodes a stream fed one byte at a time, each frame as soon as its last byte arrives', () => {
    const decoder = new EventStreamDecoder(1 << 20);
    const completedAt: number[] = [];
    for (let index = 0; index < whole.length; index += 1) {
      if (decoder.push(whole.subarray(index, index + 1)).length > 0) completedAt.push(index + 1);
    }
    let end = 0;
    expect(completedAt).toEqual(frames.map((frame) => (end += frame.length)));
  });

  it('refuses a frame whose message checksum does not match', () => {
    const broken = Buffer.from(frames[2]!);
    broken[broken.length - 6]! ^= 0xff;
    expect(() => new EventStreamDecoder(1 << 20).push(broken)).toThrow(EventStreamError);
  });

  it('refuses a frame whose prelude checksum does not match', () => {
    const broken = Buffer.from(frames[0]!);
    broken[9]! ^= 0x01;
    expect(() => new EventStreamDecoder(1 << 20).push(broken)).toThrow(EventStreamError);
  });

  it('refuses a frame longer than the limit before buffering it', () => {
    expect(() => new EventStreamDecoder(64).push(frames[0]!)).toThrow(/frame of \d+ bytes/);
  });
});

describe('the Bedrock stream relay', () => {
  const frames = messageEvents.map(chunkFrame);

  it('relays each chunk as the Anthropic SSE event, with the alias and the usage', async () => {
    const whole = Buffer.concat(frames);
    // Cut in three uneven pieces that split frames.
    const items = await collect(bodyOf(whole.subarray(0, 50), whole.subarray(50, 333), whole.subarray(333)));
    const events = items.map((item) => (item.ok ? item.value : item.error));
    expect(
      events.map((event) =>
        'kind' in event && event.kind === 'sse' ? event.event : 'kind' in event ? event.kind : 'error',
      ),
    ).toEqual([
      'message_start',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
      'finished',
    ]);
    const sse = (index: number) => {
      const event = events[index] as Extract<CompletionEvent, { kind: 'sse' }>;
      return JSON.parse(Buffer.from(event.data).toString('utf8')) as Record<string, unknown>;
    };
    expect((sse(0).message as { model: string }).model).toBe('claude-sonnet-4-5');
    expect(sse(2)).toEqual(messageEvents[2]);
    expect(sse(6)).toEqual({ type: 'message_stop' });
    expect(events[7]).toEqual({
      kind: 'finished',
      usage: { inputTokens: 12, outputTokens: 2, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
    });
  });

  it('ends with the catalogue error of an exception frame after some chunks', async () => {
    const items = await collect(
      bodyOf(...frames.slice(0, 3), exceptionFrame('throttlingException', 'Too many requests, please wait.')),
    );
    expect(items.slice(0, 3).every((item) => item.ok && item.value.kind === 'sse')).toBe(true);
    const last = items.at(-1)!;
    expect(last.ok).toBe(false);
    if (!last.ok)
      expect(last.error).toMatchObject({ type: 'overloaded_error', message: 'Too many requests, please wait.' });
    expect(items).toHaveLength(4);
  });

  it.each([
    ['modelStreamErrorException', 'api_error'],
    ['validationException', 'invalid_request_error'],
    ['serviceUnavailableException', 'overloaded_error'],
    ['internalServerException', 'api_error'],
  ])('maps %s to %s', async (exception, type) => {
    const last = (await collect(bodyOf(frames[0]!, exceptionFrame(exception, 'it failed')))).at(-1)!;
    expect(!last.ok && last.error.type).toBe(type);
  });

  it('fails a stream with a broken checksum, and one that ends mid-frame, as malformed', async () => {
    const broken = Buffer.from(frames[1]!);
    broken[broken.length - 1]! ^= 0xff;
    const corrupted = (await collect(bodyOf(frames[0]!, broken))).at(-1)!;
    expect(!corrupted.ok && corrupted.error.message).toMatch(/malformed/);
    const cut = (await collect(bodyOf(frames[0]!, frames[1]!.subarray(0, 20)))).at(-1)!;
    expect(!cut.ok && cut.error.message).toMatch(/malformed/);
  });

  it('fails a stream the transport broke after the first byte', async () => {
    async function* broken(): UpstreamBody {
      yield ok(frames[0]!);
      yield { ok: false, error: { kind: 'reset', code: 'ECONNRESET' } as TransportFailure };
    }
    const last = (await collect(broken())).at(-1)!;
    expect(!last.ok && last.error.message).toMatch(/broke mid-response/);
  });
});
