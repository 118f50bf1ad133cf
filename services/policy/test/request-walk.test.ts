import { transformBody } from '../src/privacy';
import { slotText, walkRequest } from '../src/request-walk';

const email = 'bob@example.com';
// A Luhn-valid Visa number, written as a JSON number in tool inputs and metadata.
const card = 4539148803436467;

const bytes = (text: string) => new Uint8Array(Buffer.from(text));
const redacted = (text: string): string => {
  const outcome = transformBody('redact', bytes(text));
  expect(outcome.refusal).toBeUndefined();
  return outcome.body === undefined ? text : Buffer.from(outcome.body).toString('utf8');
};

/** A request with personal data in every place the upstream reads that a scan of known shapes used to skip. */
const everywhere = {
  model: 'claude-sonnet-5',
  max_tokens: 1024,
  system: [{ type: 'text', text: `system ${email}` }],
  metadata: { user_id: `{"account":"${email}"}` },
  stop_sequences: [`stop ${email}`],
  tools: [
    {
      name: 'lookup',
      description: `Look up ${email}`,
      input_schema: { type: 'object', properties: { [email]: { type: 'string', description: `e.g. ${card}` } } },
    },
  ],
  messages: [
    {
      role: 'user',
      content: [
        {
          type: 'document',
          title: `Letter to ${email}`,
          context: `from ${email}`,
          source: { type: 'text', data: 'x' },
        },
        {
          type: 'search_result',
          source: `https://example.com/?u=${email}`,
          title: `result ${email}`,
          content: [{ type: 'text', text: `found ${email}` }],
        },
        { type: 'image', source: { type: 'url', url: `https://example.com/${email}.png` } },
      ],
    },
    {
      role: 'assistant',
      content: [{ type: 'tool_use', id: 'toolu_01', name: 'lookup', input: { [email]: { card, list: [card] } } }],
    },
    { role: 'system', content: `mid-conversation system ${email}` },
    {
      role: 'user',
      content: [{ type: 'future_block_type', nested: { deeper: [{ words: `unknown ${email}` }] }, [email]: card }],
    },
  ],
  unknown_field: { anything: [`unknown field ${email}`, card] },
};

describe('the whole-request walk (redact mode)', () => {
  it('leaves no e-mail address or card number anywhere the upstream reads, in keys or values, numbers too', () => {
    const out = redacted(JSON.stringify(everywhere));
    expect(out).not.toContain(email);
    expect(out).not.toContain(String(card));
    // A number that was a card becomes its placeholder string; the structure and every other value stay.
    const parsed = JSON.parse(out);
    expect(parsed.messages[1].content[0].input).toEqual({ '[EMAIL_1]': { card: '[CARD_1]', list: ['[CARD_1]'] } });
    expect(parsed.metadata.user_id).toBe('{"account":"[EMAIL_1]"}');
    expect(parsed.stop_sequences).toEqual(['stop [EMAIL_1]']);
    expect(parsed.messages[2]).toEqual({ role: 'system', content: 'mid-conversation system [EMAIL_1]' });
    expect(parsed.model).toBe('claude-sonnet-5');
    expect(parsed.max_tokens).toBe(1024);
  });

  it('changes nothing but the tokens that held personal data: big integers, escapes, spacing and duplicates stay', () => {
    const text =
      '{ "model": "m", "max_tokens": 4539148803436467, "temperature": 1.0,\n' +
      '  "messages": [{"role":"user","content":"caf\\u00e9 \\"quoted\\" 12345678901234567890123"}],\n' +
      '  "x": {"big": 123456789012345678901234567890, "f": 1.0e+2, "dup": 1, "dup": "mail ' +
      email +
      '"} }';
    const out = redacted(text);
    expect(out).toBe(text.replace(`"mail ${email}"`, '"mail [EMAIL_1]"'));
  });

  it('forwards the body byte for byte when nothing is found', () => {
    const text = '{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hello"}],"n":1e400}';
    expect(transformBody('redact', bytes(text)).body).toBeUndefined();
    expect(transformBody('tokenise', bytes(text)).body).toBeUndefined();
  });

  it('skips what is opaque: base64 data, ids, signatures, redacted thinking, the model and typed numbers', () => {
    const body = {
      model: email,
      max_tokens: card,
      thinking: { type: 'enabled', budget_tokens: card },
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: String(card) } },
            { type: 'document', source: { type: 'file', file_id: String(card) } },
            { type: 'tool_result', tool_use_id: String(card), content: 'fine' },
          ],
        },
        {
          role: 'assistant',
          content: [
            { type: 'redacted_thinking', data: String(card) },
            { type: 'thinking', thinking: 'nothing personal', signature: String(card) },
            { type: 'tool_use', id: String(card), name: 'x', input: {} },
          ],
        },
      ],
    };
    const text = JSON.stringify(body);
    const walked = walkRequest(text);
    const opaque = walked.slots.filter((slot) => slot.kind === 'opaque').map((slot) => slotText(text, slot));
    expect(opaque).toEqual(Array(6).fill(String(card)));
    expect(transformBody('redact', bytes(text)).body).toBeUndefined();
    // An id that does not look like one, or an `id` outside a tool call, is scanned.
    const notIds = {
      messages: [{ role: 'user', content: [{ type: 'tool_use', id: `x ${email}` }] }],
      m: { id: email },
    };
    expect(redacted(JSON.stringify(notIds))).not.toContain(email);
  });

  it('finds a value split across two adjacent text blocks of one message, and removes its rest from the second', () => {
    const body = {
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'my card is 4539 1488' },
            { type: 'text', text: ' 0343 6467 thanks, mail bob@exa' },
            { type: 'text', text: 'mple.com' },
          ],
        },
      ],
    };
    const parsed = JSON.parse(redacted(JSON.stringify(body)));
    expect(parsed.messages[0].content.map((block: { text: string }) => block.text)).toEqual([
      'my card is [CARD_1]',
      ' thanks, mail [EMAIL_1]',
      '',
    ]);
    const tokenised = transformBody('tokenise', bytes(JSON.stringify(body)));
    expect(Object.values(tokenised.placeholders).sort()).toEqual(['4539 1488 0343 6467', 'bob@example.com']);
  });

  it('refuses a body that is not one JSON value (fail closed)', () => {
    for (const text of ['{"a":1', '{"a":1}x', '[1,]', '{"a" 1}', '"unterminated', '{"a":tru}']) {
      expect(() => transformBody('redact', bytes(text))).toThrow();
    }
  });
});

describe('thinking blocks (signed text)', () => {
  const withThinking = (thinking: string) =>
    JSON.stringify({
      messages: [
        { role: 'user', content: `hi ${email}` },
        { role: 'assistant', content: [{ type: 'thinking', thinking, signature: 'sig' }] },
      ],
    });

  it('refuses in redact and tokenise modes a thinking block whose text holds personal data, naming where it is', () => {
    for (const mode of ['redact', 'tokenise'] as const) {
      const outcome = transformBody(mode, bytes(withThinking(`the user wrote ${email}`)));
      expect(outcome.body).toBeUndefined();
      expect(outcome.refusal).toMatch(/^messages\.1\.content\.0\.thinking: .*personal data \(EMAIL\)/);
      expect(outcome.refusal).not.toContain(email);
    }
  });

  it('forwards a thinking block without personal data unchanged (its placeholders included), redacting the rest', () => {
    const thinking = 'the user wrote [[PII:EMAIL:1:abcdefabcdefabcd]] and [EMAIL_1]';
    const out = JSON.parse(redacted(withThinking(thinking)));
    expect(out.messages[1].content[0]).toEqual({ type: 'thinking', thinking, signature: 'sig' });
    expect(out.messages[0].content).toBe('hi [EMAIL_1]');
  });

  it('counts a thinking block in flag mode, without refusing', () => {
    const outcome = transformBody('flag', bytes(withThinking(`the user wrote ${email}`)));
    expect(outcome).toEqual({ flags: { EMAIL: 2 }, placeholders: {}, nonce: '' });
  });
});
