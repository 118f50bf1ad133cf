import { editTopLevel, layoutFits, topLevelLayout } from '../src';

const bytes = (text: string) => Buffer.from(text, 'utf8');

/** The model alias replaced with the layout found once, and with none (the members found by the edit itself). */
function spliceModel(raw: string, alias: string): { laidOut: string; scanned: string } {
  const body = bytes(raw);
  const layout = topLevelLayout(body);
  expect(layout).toBeDefined();
  const set = { model: JSON.stringify(alias) };
  return {
    laidOut: editTopLevel(body, { set }, layout)!.toString('utf8'),
    scanned: editTopLevel(body, { set })!.toString('utf8'),
  };
}

describe('topLevelLayout', () => {
  it('gives byte offsets, not character offsets, past multi-byte UTF-8', () => {
    const raw = '{"system":"héllo 🙂 日本","model":"m"}';
    const layout = topLevelLayout(bytes(raw))!;
    const model = layout.members.find((member) => member.key === 'model')!;
    expect(bytes(raw).subarray(model.valueStart, model.valueEnd).toString()).toBe('"m"');
    expect(model.valueStart).toBeGreaterThan(raw.indexOf('"m"'));
  });

  it('finds only top-level members: "model" inside nested objects, arrays and strings is not one', () => {
    const raw =
      '{"metadata":{"model":"x"},"messages":[{"role":"user","content":"\\"model\\":\\"y\\""}],"tools":[{"model":1}],"model":"z"}';
    const layout = topLevelLayout(bytes(raw))!;
    expect(layout.members.map((member) => member.key)).toEqual(['metadata', 'messages', 'tools', 'model']);
  });

  it('reads escaped quotes and trailing backslashes in strings, and keys written with escapes', () => {
    const raw = '{"a":"x\\\\","b":"\\\\\\"}","m\\u006fdel":"q","c":"\\\\\\\\"}';
    expect(JSON.parse(raw)).toEqual({ a: 'x\\', b: '\\"}', model: 'q', c: '\\\\' });
    expect(topLevelLayout(bytes(raw))!.members.map((member) => member.key)).toEqual(['a', 'b', 'model', 'c']);
  });

  it('takes whitespace anywhere JSON allows it', () => {
    const raw = ' \n{ \t"model"\r\n :  "m" ,\n "stream" : true\n}\n ';
    const layout = topLevelLayout(bytes(raw))!;
    expect(layout.members.map((member) => [member.key, raw.slice(member.valueStart, member.valueEnd)])).toEqual([
      ['model', '"m"'],
      ['stream', 'true'],
    ]);
    expect(raw[layout.close]).toBe('}');
  });

  it.each(['[1]', '{"a":1', '{"a" 1}', '{"a":1} x', '"s"', '{"a":"unterminated}', '{"a":1,}', ''])(
    'has no layout for %j: not one object',
    (raw) => {
      expect(topLevelLayout(bytes(raw))).toBeUndefined();
    },
  );
});

describe('the model alias spliced at the offsets found once', () => {
  it.each([
    ['plain', '{"model":"alias","max_tokens":5}', '{"model":"claude-x-1","max_tokens":5}'],
    [
      'unicode before and in the value',
      '{"system":"Grüße 🙂","model":"ålias-日本"}',
      '{"system":"Grüße 🙂","model":"claude-x-1"}',
    ],
    [
      'escapes in the old value and elsewhere',
      '{"model":"a\\"b\\\\","s":"\\u00e9\\n"}',
      '{"model":"claude-x-1","s":"\\u00e9\\n"}',
    ],
    [
      'nested and quoted "model" kept',
      '{"metadata":{"model":"keep"},"model":"alias","note":"\\"model\\": \\"keep\\""}',
      '{"metadata":{"model":"keep"},"model":"claude-x-1","note":"\\"model\\": \\"keep\\""}',
    ],
    ['whitespace kept', '{ "model" :\n "alias" , "n" : 1.0 }', '{ "model" :\n "claude-x-1" , "n" : 1.0 }'],
    [
      'big integers kept',
      '{"n":12345678901234567890123,"model":"a"}',
      '{"n":12345678901234567890123,"model":"claude-x-1"}',
    ],
    [
      'every duplicate replaced',
      '{"model":"a","x":1,"mod\\u0065l":"b"}',
      '{"model":"claude-x-1","x":1,"mod\\u0065l":"claude-x-1"}',
    ],
  ])('%s', (_name, raw, expected) => {
    const { laidOut, scanned } = spliceModel(raw, 'claude-x-1');
    expect(laidOut).toBe(expected);
    expect(scanned).toBe(expected);
  });

  it('writes an upstream model id that needs escaping as a JSON string', () => {
    const { laidOut } = spliceModel('{"model":"a"}', 'id "with" ünïcode');
    expect(JSON.parse(laidOut)).toEqual({ model: 'id "with" ünïcode' });
  });
});

describe('layoutFits', () => {
  const raw = bytes('{"model":"alias","stream":true,"messages":[]}');
  const layout = topLevelLayout(raw)!;
  const keys = new Set(['model', 'stream']);

  it('accepts the layout of these bytes', () => {
    expect(layoutFits(raw, layout, keys)).toBe(true);
  });

  it('refuses the layout of other bytes: shifted, a member renamed, past the end, out of order', () => {
    const other = bytes(' {"model":"alias","stream":true,"messages":[]}');
    expect(layoutFits(other, layout, keys)).toBe(false);
    const renamed = {
      ...layout,
      members: layout.members.map((m) => (m.key === 'stream' ? { ...m, key: 'model' } : m)),
    };
    expect(layoutFits(raw, renamed, keys)).toBe(false);
    expect(layoutFits(raw, { ...layout, close: raw.length + 3 }, keys)).toBe(false);
    expect(layoutFits(raw, { ...layout, members: [...layout.members].reverse() }, keys)).toBe(false);
    const stretched = { ...layout, members: [{ ...layout.members[0]!, valueEnd: layout.close + 1 }] };
    expect(layoutFits(raw, stretched, keys)).toBe(false);
  });

  it('does not read the names of members no edit touches (ingress leaves long ones empty)', () => {
    const nameless = { ...layout, members: layout.members.map((m) => (m.key === 'messages' ? { ...m, key: '' } : m)) };
    expect(layoutFits(raw, nameless, keys)).toBe(true);
  });
});
