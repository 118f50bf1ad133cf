import { normalise, toOriginal } from '../src';

describe('normalise', () => {
  it('returns ASCII text as is, with an identity map', () => {
    const result = normalise('plain ASCII 123 @ example.com');
    expect(result.text).toBe('plain ASCII 123 @ example.com');
    expect(result.segments).toBeNull();
    expect(toOriginal(result, 6, 11)).toEqual({ start: 6, end: 11 });
  });

  it('removes format characters and combining marks, and maps back to the original', () => {
    const original = 'a\u200bb\u200c\u200dc\ufeffd\u00ade\u2060f';
    const result = normalise(original);
    expect(result.text).toBe('abcdef');
    expect(toOriginal(result, 0, 6)).toEqual({ start: 0, end: original.length });
    expect(toOriginal(result, 1, 2)).toEqual({ start: 2, end: 3 });
  });

  it('folds fullwidth and compatibility forms (NFKC) and other decimal digits', () => {
    expect(normalise('ｊａｎｅ＠ｅｘａｍｐｌｅ．ｃｏｍ').text).toBe('jane@example.com');
    expect(normalise('４１１１ ٤١١١ ४१११ 𝟒𝟏𝟏𝟏').text).toBe('4111 4111 4111 4111');
    expect(normalise('①②③').text).toBe('123');
  });

  it('turns Unicode spaces into spaces and dashes into hyphens', () => {
    expect(normalise('1\u00a02\u20093\u202f4\u30005').text).toBe('1 2 3 4 5');
    expect(normalise('1\u20132\u20143\u22124\u20105').text).toBe('1-2-3-4-5');
  });

  it('folds Cyrillic and Greek look-alikes to Latin', () => {
    expect(normalise('jаnе@ехаmрlе.соm').text).toBe('jane@example.com');
    expect(normalise('ΑΒ123456C').text).toBe('AB123456C');
  });

  it('keeps a combining mark inside the span of its base character', () => {
    const original = 'jose\u0301@example.com';
    const result = normalise(original);
    expect(result.text).toBe('jose@example.com');
    expect(toOriginal(result, 0, 4)).toEqual({ start: 0, end: 5 });
  });

  it('maps expansions and astral characters to whole code points', () => {
    const original = '😀 ﬁle 😀';
    const result = normalise(original);
    expect(result.text).toBe('😀 file 😀');
    // "i" comes from the ligature "ﬁ" (one UTF-16 unit at offset 3).
    expect(toOriginal(result, 4, 5)).toEqual({ start: 3, end: 4 });
    expect(toOriginal(result, 0, 2)).toEqual({ start: 0, end: 2 });
  });

  it('decodes percent escapes, HTML references and bracketed at and dot, mapping spans back to what they stood for', () => {
    const original = 'to john%40example&#46;com, jo&#x40;ex.org or jane [at] mail (dot) co &amp; ＡＢ';
    const result = normalise(original);
    expect(result.text).toBe('to john@example.com, jo@ex.org or jane@mail.co & AB');
    const span = (needle: string) => {
      const start = result.text.indexOf(needle);
      const mapped = toOriginal(result, start, start + needle.length);
      return original.slice(mapped.start, mapped.end);
    };
    expect(span('john@example.com')).toBe('john%40example&#46;com');
    expect(span('jo@ex.org')).toBe('jo&#x40;ex.org');
    expect(span('jane@mail.co')).toBe('jane [at] mail (dot) co');
    expect(span('AB')).toBe('ＡＢ');
  });

  it('leaves alone what decodes to nothing it should: control escapes, unknown names, words in brackets', () => {
    const original = '100%0a done &bogus; &#0; (attic) [data] {dot com}';
    expect(normalise(original)).toEqual({ text: original, segments: null });
  });
});
