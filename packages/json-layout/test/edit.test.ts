import { editTopLevel, topLevelValue } from '../src';

const edit = (raw: string, change: Parameters<typeof editTopLevel>[1]) =>
  editTopLevel(Buffer.from(raw), change)?.toString();

describe('editTopLevel', () => {
  it('replaces a member’s value and keeps every other byte, big integers, 1.0 and escapes included', () => {
    const raw = '{"model":"alias", "n": 12345678901234567890123, "f":1.0,"s":"a\\u00e9\\"b","deep":{"model":"keep"}}';
    expect(edit(raw, { set: { model: '"upstream-id"' } })).toBe(
      '{"model":"upstream-id", "n": 12345678901234567890123, "f":1.0,"s":"a\\u00e9\\"b","deep":{"model":"keep"}}',
    );
  });

  it('replaces every member of a duplicated key, and a key written with escapes', () => {
    expect(edit('{"model":"a","x":1,"mod\\u0065l":"b"}', { set: { model: '"c"' } })).toBe(
      '{"model":"c","x":1,"mod\\u0065l":"c"}',
    );
  });

  it('appends a member that is missing, with or without others', () => {
    expect(edit('{"a":[1,{"b":"}"}]}', { set: { stream: 'true' } })).toBe('{"a":[1,{"b":"}"}],"stream":true}');
    expect(edit(' { } ', { set: { stream: 'false' } })).toBe(' { "stream":false} ');
  });

  it.each([
    ['{"model":"m","stream":true,"x":1}', '{"x":1}'],
    ['{"x":1,"model":"m","stream":true}', '{"x":1}'],
    ['{"x":1,"model":"m","y":2}', '{"x":1,"y":2}'],
    ['{"model":"m"}', '{}'],
    ['{ "model" : "m" , "stream" : false }', '{  }'],
  ])('removes members with their commas: %s', (raw, expected) => {
    expect(edit(raw, { remove: ['model', 'stream'] })).toBe(expected);
    expect(JSON.parse(expected)).toEqual(JSON.parse(expected));
  });

  it('removes and sets in one pass', () => {
    const edited = edit('{"model":"m","messages":[],"stream":true}', {
      remove: ['model', 'stream'],
      set: { anthropic_version: '"bedrock-2023-05-31"' },
    });
    expect(JSON.parse(edited!)).toEqual({ messages: [], anthropic_version: 'bedrock-2023-05-31' });
  });

  it.each(['[1]', '{"a":1', '{"a" 1}', '{"a":1} x', '"s"', '{"a":"unterminated}'])(
    'refuses %s: not one object',
    (raw) => {
      expect(edit(raw, { set: { model: '"m"' } })).toBeUndefined();
    },
  );
});

describe('topLevelValue', () => {
  it('finds the bytes of the last member of a key, as JSON.parse reads it', () => {
    const raw = Buffer.from('{"stream":false,"nested":{"stream":1},"stream":true}');
    expect(Buffer.from(topLevelValue(raw, 'stream')!).toString()).toBe('true');
    expect(topLevelValue(raw, 'absent')).toBeUndefined();
  });
});
