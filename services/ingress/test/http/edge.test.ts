import { presentedKey, repeatedCredentialHeader } from '../../src/http/credentials';
import { sseFrame } from '../../src/http/sse';
import {
  isJsonContentType,
  maxModelChars,
  jsonShapeBeyond,
  parseCountTokensBody,
  parseMessagesBody,
} from '../../src/domain/validation';
import { billableTokens } from '@gw/usage';

describe('presentedKey', () => {
  it('prefers Authorization: Bearer over x-api-key', () => {
    expect(presentedKey('Bearer gw_live_a', 'gw_live_b')).toBe('gw_live_a');
    expect(presentedKey(undefined, 'gw_live_b')).toBe('gw_live_b');
    expect(presentedKey('Basic abc', 'gw_live_b')).toBe('');
    expect(presentedKey(undefined, undefined)).toBe('');
  });
});

describe('repeatedCredentialHeader', () => {
  it('names a credential header sent twice, and nothing for one of each', () => {
    expect(repeatedCredentialHeader({ authorization: ['Bearer a', 'Bearer b'] })).toBe('Authorization');
    expect(repeatedCredentialHeader({ 'x-api-key': ['a', 'b'] })).toBe('x-api-key');
    expect(repeatedCredentialHeader({ 'x-api-key': ['a', ''] })).toBe('x-api-key');
    expect(repeatedCredentialHeader({ authorization: ['Bearer a'], 'x-api-key': ['b'] })).toBeUndefined();
    expect(repeatedCredentialHeader({ host: ['a'] })).toBeUndefined();
  });
});

describe('parseMessagesBody', () => {
  const body = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value));
  const valid = { model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };

  it('accepts a valid body and keeps unknown fields', () => {
    expect(parseMessagesBody(body({ ...valid, temperature: 0.5, stream: true }))).toEqual({
      ok: true,
      value: { ...valid, temperature: 0.5, stream: true },
    });
  });

  it.each([
    ['{not json', 'The request body is not valid JSON.'],
    ['[1]', 'The request body must be a JSON object.'],
    [{ ...valid, model: undefined }, 'model: Field required.'],
    [{ ...valid, max_tokens: 1.5 }, 'max_tokens: expected an integer.'],
    [{ ...valid, max_tokens: '10' }, 'max_tokens: expected an integer.'],
    [{ ...valid, messages: {} }, 'messages: expected an array of messages.'],
    [{ ...valid, messages: ['hi'] }, 'messages.0: expected an object with "role" and "content".'],
    [{ ...valid, messages: [{ role: 7, content: 'x' }] }, 'messages.0.role: expected a string.'],
    [
      { ...valid, messages: [{ role: 'user', content: 7 }] },
      'messages.0.content: expected a string or an array of content blocks.',
    ],
    [
      { ...valid, messages: [{ role: 'user' }] },
      'messages.0.content: expected a string or an array of content blocks.',
    ],
    [{ ...valid, stream: 'yes' }, 'stream: expected a boolean.'],
  ])('refuses %j with a message naming the field', (input, message) => {
    expect(parseMessagesBody(body(input))).toEqual({ ok: false, error: { type: 'invalid_request_error', message } });
  });

  // What the gateway does not act on is the upstream's to judge: new roles, block types, fields and values.
  it.each([
    ['a system message mid-conversation', { messages: [...valid.messages, { role: 'system', content: 'Be brief.' }] }],
    ['a role not yet known', { messages: [{ role: 'developer', content: 'x' }] }],
    ['no messages', { messages: [] }],
    ['a block type not yet known', { messages: [{ role: 'user', content: [{ type: 'hologram', beam: 1 }] }] }],
    ['a thinking type not yet known', { thinking: { type: 'adaptive', display: 'omitted' } }],
    ['a tool_choice not yet known', { tool_choice: { type: 'sometimes' } }],
    ['a temperature the upstream refuses', { temperature: 2 }],
    ['fields not yet known', { output_config: { effort: 'high' }, context_management: { edits: [] } }],
    ['max_tokens 0', { max_tokens: 0 }],
  ])('passes %s through', (_case, fields) => {
    expect(parseMessagesBody(body({ ...valid, ...fields })).ok).toBe(true);
  });

  it(`takes a model alias of up to ${maxModelChars} characters and refuses a longer one, echoing it cut`, () => {
    expect(parseMessagesBody(body({ ...valid, model: 'm'.repeat(maxModelChars) })).ok).toBe(true);
    const huge = 'm'.repeat(2 * 1024 * 1024);
    expect(parseMessagesBody(body({ ...valid, model: huge }))).toEqual({
      ok: false,
      error: {
        type: 'invalid_request_error',
        message: `model: expected at most ${maxModelChars} characters, got ${huge.length}: "${'m'.repeat(64)}…".`,
      },
    });
    expect(parseCountTokensBody(body({ model: huge, messages: valid.messages })).ok).toBe(false);
  });
});

describe('billableTokens', () => {
  it('weights cache reads at 10 % and cache writes at 125 %, rounding up', () => {
    expect(
      billableTokens({ inputTokens: 100, outputTokens: 50, cacheReadInputTokens: 15, cacheCreationInputTokens: 3 }),
    ).toBe(100 + 50 + 2 + 4);
  });
});

describe('sseFrame', () => {
  it('writes an event line, a data line and a blank line', () => {
    expect(sseFrame('message_stop', '{"type":"message_stop"}')).toBe(
      'event: message_stop\ndata: {"type":"message_stop"}\n\n',
    );
  });
});

describe('jsonShapeBeyond', () => {
  const bounds = (depth: number, containers = 1_000) => ({ depth, containers });

  it('counts brackets outside strings only', () => {
    expect(jsonShapeBeyond(Buffer.from('[[[1]]]'), bounds(3))).toBeUndefined();
    expect(jsonShapeBeyond(Buffer.from('[[[[1]]]]'), bounds(3))).toBe('depth');
    expect(jsonShapeBeyond(Buffer.from('{"a":"[[[[[[\\"[[[["}'), bounds(2))).toBeUndefined();
  });

  it('scans a megabyte of brackets without parsing it', () => {
    expect(jsonShapeBeyond(Buffer.from('['.repeat(1_000_000)), bounds(128))).toBe('depth');
  });

  it('counts every object and array, however shallow', () => {
    const flat = (count: number) => Buffer.from(`{"m":[${Array(count).fill('{}').join(',')}]}`);
    expect(jsonShapeBeyond(flat(998), bounds(128))).toBeUndefined();
    expect(jsonShapeBeyond(flat(999), bounds(128))).toBe('containers');
    expect(jsonShapeBeyond(Buffer.from(`{"m":"${'{}'.repeat(5_000)}"}`), bounds(128))).toBeUndefined();
  });
});

describe('isJsonContentType', () => {
  it('accepts JSON media types and a missing header, and nothing else', () => {
    expect(isJsonContentType('application/json')).toBe(true);
    expect(isJsonContentType('application/json; charset=utf-8')).toBe(true);
    expect(isJsonContentType(undefined)).toBe(true);
    expect(isJsonContentType('text/plain')).toBe(false);
    expect(isJsonContentType('application/x-www-form-urlencoded')).toBe(false);
  });
});

describe('parseCountTokensBody', () => {
  it('needs no max_tokens', () => {
    const body = Buffer.from(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] }));
    expect(parseCountTokensBody(body).ok).toBe(true);
  });
});
