import { topLevelLayout } from '@gw/json-layout';
import type { TopLevelLayout } from '@gw/json-layout';
import { createAnthropicAdapter } from '../src/adapters/anthropic';
import { createBedrockAdapter } from '../src/adapters/bedrock';
import { createVertexAdapter, vertexAdapterConfig } from '../src/adapters/vertex';
import type { AdapterCall, UpstreamAdapter } from '../src/adapters';
import { bodyForAdapters } from '../src/live-completion';

/** Bodies whose bytes an edit could get wrong: unicode, escapes, "model" nested and in strings, odd whitespace. */
const bodies = [
  '{"model":"alias","max_tokens":64,"messages":[{"role":"user","content":"Hi"}]}',
  '{ "model" : "ålias 日本" ,\n "max_tokens": 64, "stream" : true,\t"messages": [{"role": "user", "content": "🙂 \\"model\\": \\"x\\""}] }',
  '{"metadata":{"model":"keep","user_id":"a\\\\"},"messages":[{"role":"user","content":"\\u00e9"}],"max_tokens":1,"model":"a","stream":false}',
  '{"max_tokens":5,"messages":[],"x_big":12345678901234567891,"f":1.0,"m\\u006fdel":"a","anthropic_version":"caller","anthropic_beta":["b"]}',
];

const adapters: [string, UpstreamAdapter][] = [
  ['anthropic', createAnthropicAdapter()],
  ['bedrock', createBedrockAdapter()],
  ['vertex', createVertexAdapter({ ...vertexAdapterConfig, project: 'p', location: 'europe-west4' })],
];

function call(raw: string, stream: boolean, layout: TopLevelLayout | undefined): AdapterCall {
  return {
    endpointUrl: 'https://upstream.example',
    upstreamModel: 'claude-upstream-id',
    get body() {
      return JSON.parse(raw) as Record<string, unknown>;
    },
    rawBody: Buffer.from(raw),
    layout,
    stream,
    headers: { 'anthropic-beta': 'context-1m-2025-08-07' },
    query: '',
    credential: undefined,
    requestId: 'req_1',
  };
}

const sent = (request: { body: string | Uint8Array }) => Buffer.from(request.body).toString('utf8');

describe.each(adapters)('the %s adapter with the layout ingress found', (_name, adapter) => {
  it.each(bodies.flatMap((raw) => [true, false].map((stream) => [raw, stream] as const)))(
    'sends the same bytes as when it finds the members itself: %s (stream %s)',
    (raw, stream) => {
      const before = sent(adapter.buildRequest(call(raw, stream, undefined)));
      const after = sent(adapter.buildRequest(call(raw, stream, topLevelLayout(Buffer.from(raw)))));
      expect(after).toBe(before);
      // Every value the gateway does not set is the caller's, byte for byte.
      expect(after).toContain('"max_tokens"');
      expect(after).not.toContain('"alias"');
    },
  );

  it.each(bodies)('counts tokens with the same bytes too: %s', (raw) => {
    if (adapter.countTokens === undefined) return;
    const before = sent(adapter.countTokens.buildRequest(call(raw, false, undefined)));
    const after = sent(adapter.countTokens.buildRequest(call(raw, false, topLevelLayout(Buffer.from(raw)))));
    expect(after).toBe(before);
  });
});

describe('bodyForAdapters', () => {
  /** Structurally one object, but JSON.parse refuses it: an adapter that parsed would throw. */
  const unparsable = '{"model":"alias","max_tokens":tru,"messages":[]}';

  it.each(adapters)('never parses a laid-out body for the %s adapter, which edits the bytes only', (_name, adapter) => {
    const raw = Buffer.from(unparsable);
    const caller = bodyForAdapters({ body: raw, layout: topLevelLayout(raw) })!;
    expect(caller.layout).toBeDefined();
    const laidOut = call(unparsable, true, caller.layout);
    Object.defineProperty(laidOut, 'body', { get: () => caller.body });
    const request = adapter.buildRequest(laidOut);
    expect(sent(request)).toContain('"max_tokens":tru');
    expect(() => caller.body).toThrow(/not a JSON object/);
  });

  it('parses a body sent without a layout, or with one of other bytes, and refuses one that is not an object', () => {
    const raw = Buffer.from('{"model":"a","max_tokens":1}');
    const shifted = topLevelLayout(Buffer.from(' {"model":"a","max_tokens":1}'));
    const caller = bodyForAdapters({ body: raw, layout: shifted })!;
    expect(caller.layout).toBeUndefined();
    expect(caller.body).toEqual({ model: 'a', max_tokens: 1 });
    expect(bodyForAdapters({ body: Buffer.from(unparsable), layout: undefined })).toBeUndefined();
    expect(bodyForAdapters({ body: Buffer.from('[1]'), layout: undefined })).toBeUndefined();
  });

  it('parses a laid-out body once, on first read, for an adapter that translates it', () => {
    const raw = Buffer.from('{"model":"a","max_tokens":1}');
    const caller = bodyForAdapters({ body: raw, layout: topLevelLayout(raw) })!;
    const parse = jest.spyOn(JSON, 'parse');
    try {
      expect(caller.body).toEqual({ model: 'a', max_tokens: 1 });
      expect(caller.body).toBe(caller.body);
      expect(parse).toHaveBeenCalledTimes(1);
    } finally {
      parse.mockRestore();
    }
  });
});
