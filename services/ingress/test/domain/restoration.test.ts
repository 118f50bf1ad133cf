import { createNonce, createRestorer, restoreAll, tokenise } from '@gw/pii';
import { privacyFlagsHeader } from '../../src/domain/privacy-flags';
import { restoreMessage, StreamRestoration } from '../../src/domain/restoration';
import type { Restoration } from '../../src/domain/restoration';

const original = 'Write to alice.smith@example.com or call +44 20 7946 0958 today.';

function setUp(): { tokenised: string; restoration: Restoration } {
  const nonce = createNonce();
  const { texts, map } = tokenise([original], nonce);
  return {
    tokenised: texts[0]!,
    restoration: {
      textRestorer: () => createRestorer(map, nonce),
      jsonRestorer: () => createRestorer(map, nonce, { json: true }),
      restoreAll: (text) => restoreAll(text, map, nonce),
    },
  };
}

const delta = (index: number, type: string, field: string, value: string) =>
  JSON.stringify({ type: 'content_block_delta', index, delta: { type, [field]: value } });

describe('StreamRestoration', () => {
  it('restores a placeholder split at every position of a text stream', () => {
    const { tokenised, restoration } = setUp();
    expect(tokenised).not.toContain('alice.smith');
    for (let cut = 1; cut < tokenised.length; cut += 1) {
      const stream = new StreamRestoration(restoration);
      const events = [
        ...stream.transform('content_block_delta', delta(0, 'text_delta', 'text', tokenised.slice(0, cut))),
        ...stream.transform('content_block_delta', delta(0, 'text_delta', 'text', tokenised.slice(cut))),
        ...stream.transform('content_block_stop', JSON.stringify({ type: 'content_block_stop', index: 0 })),
      ];
      const text = events
        .filter(([name]) => name === 'content_block_delta')
        .map(([, data]) => (JSON.parse(data) as { delta: { text: string } }).delta.text)
        .join('');
      expect(text).toBe(original);
      expect(events.at(-1)![0]).toBe('content_block_stop');
    }
  });

  it('restores inside input_json_delta with JSON escaping, and passes other events through verbatim', () => {
    const { tokenised, restoration } = setUp();
    const json = JSON.stringify({ note: tokenised });
    const stream = new StreamRestoration(restoration);
    const ping = '{"type": "ping"}';
    expect(stream.transform('ping', ping)).toEqual([['ping', ping]]);
    const parts = [json.slice(0, 20), json.slice(20, 45), json.slice(45)];
    const events = [
      ...parts.flatMap((part) =>
        stream.transform('content_block_delta', delta(1, 'input_json_delta', 'partial_json', part)),
      ),
      ...stream.transform('content_block_stop', JSON.stringify({ type: 'content_block_stop', index: 1 })),
    ];
    const partial = events
      .filter(([name]) => name === 'content_block_delta')
      .map(([, data]) => (JSON.parse(data) as { delta: { partial_json: string } }).delta.partial_json)
      .join('');
    expect(JSON.parse(partial)).toEqual({ note: original });
  });

  it('relays thinking and signature deltas as sent: a signed text keeps its placeholders', () => {
    const { tokenised, restoration } = setUp();
    const stream = new StreamRestoration(restoration);
    const thinking = delta(0, 'thinking_delta', 'thinking', tokenised);
    const signature = delta(0, 'signature_delta', 'signature', 'c2lnbmF0dXJl');
    const stop = JSON.stringify({ type: 'content_block_stop', index: 0 });
    expect(stream.transform('content_block_delta', thinking)).toEqual([['content_block_delta', thinking]]);
    expect(stream.transform('content_block_delta', signature)).toEqual([['content_block_delta', signature]]);
    expect(stream.transform('content_block_stop', stop)).toEqual([['content_block_stop', stop]]);
  });
});

describe('restoreMessage', () => {
  it('restores text blocks and tool inputs of a whole Message', () => {
    const { tokenised, restoration } = setUp();
    const message = {
      id: 'msg_1',
      content: [
        { type: 'text', text: tokenised },
        { type: 'tool_use', id: 'toolu_1', name: 'send', input: { body: tokenised, count: 1 } },
      ],
    };
    const restored = JSON.parse(restoreMessage(Buffer.from(JSON.stringify(message)), restoration).toString('utf8'));
    expect(restored.content[0].text).toBe(original);
    expect(restored.content[1].input).toEqual({ body: original, count: 1 });
  });

  it('restores every other block too, and leaves thinking and redacted thinking as the upstream sent them', () => {
    const { tokenised, restoration } = setUp();
    const thinking = { type: 'thinking', thinking: tokenised, signature: 'c2ln' };
    const redacted = { type: 'redacted_thinking', data: tokenised };
    const future = { type: 'future_block', nested: [{ words: tokenised }] };
    const message = { id: 'msg_1', content: [thinking, redacted, future] };
    const restored = JSON.parse(restoreMessage(Buffer.from(JSON.stringify(message)), restoration).toString('utf8'));
    expect(restored.content).toEqual([thinking, redacted, { type: 'future_block', nested: [{ words: original }] }]);
  });
});

describe('privacyFlagsHeader', () => {
  it('lists counts by type, never values, and says none when nothing was found', () => {
    expect(privacyFlagsHeader({ PHONE: 1, EMAIL: 2, IBAN: 0 })).toBe('EMAIL=2,PHONE=1');
    expect(privacyFlagsHeader({})).toBe('none');
  });
});
