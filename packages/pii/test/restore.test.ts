import { createRestorer, isPlaceholderPrefix, jsonEscape, maxPlaceholderLength, placeholder, restoreAll } from '../src';

const NONCE = 'abc123xyz';
const EMAIL = placeholder('EMAIL', 1, NONCE);
const PHONE = placeholder('PHONE', 12, NONCE);
const MAP = { [EMAIL]: 'jane@example.com', [PHONE]: '+44 20 "7946" \\ 0958' };

describe('restoreAll', () => {
  it('restores every complete placeholder of the map in one pass', () => {
    expect(restoreAll(`${EMAIL}${PHONE} ${EMAIL}`, MAP, NONCE)).toBe(
      'jane@example.com+44 20 "7946" \\ 0958 jane@example.com',
    );
  });

  it('leaves placeholders of another nonce, unknown numbers and altered ones untouched', () => {
    const untouched = [
      placeholder('EMAIL', 1, 'otherNonce'),
      placeholder('EMAIL', 2, NONCE),
      EMAIL.toLowerCase(),
      EMAIL.replace('[[', '['),
      EMAIL.replace(']]', ']'),
    ].join(' ');
    expect(restoreAll(untouched, MAP, NONCE)).toBe(untouched);
  });

  it('JSON-escapes restored values in the JSON variant', () => {
    const json = JSON.stringify({ phone: PHONE, mail: EMAIL });
    const restored = restoreAll(json, MAP, NONCE, { json: true });
    expect(JSON.parse(restored)).toEqual({ phone: MAP[PHONE], mail: MAP[EMAIL] });
    expect(jsonEscape('a"b\\c\nd')).toBe('a\\"b\\\\c\\nd');
  });
});

describe('createRestorer (streaming)', () => {
  it('releases text at once and holds back only a possible placeholder start', () => {
    const restorer = createRestorer(MAP, NONCE);
    expect(restorer.push('Hello ')).toBe('Hello ');
    expect(restorer.push('there [')).toBe('there ');
    expect(restorer.push('[PI')).toBe('');
    expect(restorer.push('I:EMA')).toBe('');
    expect(restorer.push('IL:1:abc123xyz]')).toBe('');
    expect(restorer.push('] bye [x')).toBe('jane@example.com bye [x');
    expect(restorer.push('[[PII:EMAIL:1:abc999')).toBe('[[PII:EMAIL:1:abc999');
    expect(restorer.flush()).toBe('');
  });

  it('releases an unfinished placeholder as is at flush', () => {
    const restorer = createRestorer(MAP, NONCE);
    expect(restorer.push('end [[PII:EMAIL:1:abc1')).toBe('end ');
    expect(restorer.flush()).toBe('[[PII:EMAIL:1:abc1');
  });

  it('never holds back more than the longest placeholder', () => {
    const restorer = createRestorer(MAP, NONCE);
    const longest = maxPlaceholderLength(NONCE);
    const released = restorer.push(`x[[PII:${'A'.repeat(40)}`);
    expect(released).toBe(`x[[PII:${'A'.repeat(40)}`);
    expect(longest).toBeLessThan(80);
  });

  it('does not split a surrogate pair', () => {
    const restorer = createRestorer(MAP, NONCE);
    const smile = '😀';
    expect(restorer.push(`a${smile[0]}`)).toBe('a');
    expect(restorer.push(`${smile[1]}b`)).toBe(`${smile}b`);
  });

  it('restores a placeholder split across many chunks, JSON-escaped in the JSON variant', () => {
    const restorer = createRestorer(MAP, NONCE, { json: true });
    const source = JSON.stringify({ to: `call ${PHONE}` });
    let output = '';
    for (const character of source) output += restorer.push(character);
    output += restorer.flush();
    expect(JSON.parse(output)).toEqual({ to: `call ${MAP[PHONE]}` });
  });
});

describe('isPlaceholderPrefix', () => {
  it('accepts proper prefixes of the grammar with this nonce only', () => {
    for (let length = 1; length < EMAIL.length; length += 1) {
      expect(isPlaceholderPrefix(EMAIL.slice(0, length), 0, NONCE)).toBe(true);
    }
    expect(isPlaceholderPrefix(EMAIL, 0, NONCE)).toBe(false);
    expect(isPlaceholderPrefix('[[PII:email', 0, NONCE)).toBe(false);
    expect(isPlaceholderPrefix('[[PII:EMAIL:0', 0, NONCE)).toBe(false);
    expect(isPlaceholderPrefix('[[PII:EMAIL:1:abd', 0, NONCE)).toBe(false);
    expect(isPlaceholderPrefix('[[X', 0, NONCE)).toBe(false);
  });
});
