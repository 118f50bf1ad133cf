import { countByType, createNonce, placeholder, redact, restoreAll, tokenise } from '../src';
import { VALID } from './fixtures';

const NONCE = 'n0nce7k2';

describe('redact', () => {
  it('numbers values per type across all texts of the request; the same value keeps its number', () => {
    const result = redact([
      `Mail ${VALID.email} or bob@example.org.`,
      `Again: ${VALID.email}. Card ${VALID.visa}.`,
      `Same card written differently: 4111-1111-1111-1111; NHS ${VALID.nhs}.`,
    ]);
    expect(result.texts).toEqual([
      'Mail [EMAIL_1] or [EMAIL_2].',
      'Again: [EMAIL_1]. Card [CARD_1].',
      'Same card written differently: [CARD_1]; NHS [NHS_NUMBER_1].',
    ]);
    expect(result.counts).toEqual({ EMAIL: 3, CARD: 2, NHS_NUMBER: 1 });
  });

  it('treats an email in another case, and a phone in another format, as the same value', () => {
    const result = redact([`${VALID.email} ${VALID.email.toUpperCase()}`, `020 7946 0958 and +44 20 7946 0958`]);
    expect(result.texts).toEqual(['[EMAIL_1] [EMAIL_1]', '[PHONE_1] and [PHONE_1]']);
  });

  it('leaves texts without personal data unchanged', () => {
    expect(redact(['hello', '']).texts).toEqual(['hello', '']);
  });
});

describe('tokenise', () => {
  it('replaces each value with a placeholder carrying the nonce and keeps the map', () => {
    const texts = [`Mail ${VALID.email}, IBAN ${VALID.ibanGb}.`, `Mail ${VALID.email} again.`];
    const result = tokenise(texts, NONCE);
    const email = placeholder('EMAIL', 1, NONCE);
    const ibanToken = placeholder('IBAN', 1, NONCE);
    expect(email).toBe('[[PII:EMAIL:1:n0nce7k2]]');
    expect(result.texts).toEqual([`Mail ${email}, IBAN ${ibanToken}.`, `Mail ${email} again.`]);
    expect(result.map).toEqual({ [email]: VALID.email, [ibanToken]: VALID.ibanGb });
    expect(result.counts).toEqual({ EMAIL: 2, IBAN: 1 });
    expect(result.texts.map((text) => restoreAll(text, result.map, NONCE))).toEqual(texts);
  });

  it('gives different spellings of a value different placeholders, so that restoring is exact', () => {
    const result = tokenise([`${VALID.email} ${VALID.email.toUpperCase()}`], NONCE);
    expect(Object.keys(result.map)).toHaveLength(2);
    expect(restoreAll(result.texts[0]!, result.map, NONCE)).toBe(`${VALID.email} ${VALID.email.toUpperCase()}`);
  });

  it('refuses a malformed nonce, and a nonce that already occurs in the input', () => {
    expect(() => tokenise(['x'], 'short')).toThrow(RangeError);
    expect(() => tokenise(['x'], 'has space1')).toThrow(RangeError);
    expect(() => tokenise([`echo [[PII:EMAIL:1:${NONCE}]]`], NONCE)).toThrow(RangeError);
  });

  it('keeps look-alike placeholders typed by the user as text (another nonce is never restored)', () => {
    const typed = `[[PII:EMAIL:1:attacker1]] and [[PII:EMAIL:1:${NONCE.toUpperCase()}]]`;
    const result = tokenise([`${typed} ${VALID.email}`], NONCE);
    expect(result.texts[0]).toBe(`${typed} ${placeholder('EMAIL', 1, NONCE)}`);
    expect(restoreAll(result.texts[0]!, result.map, NONCE)).toBe(`${typed} ${VALID.email}`);
  });
});

describe('countByType', () => {
  it('counts entities by type and never returns values', () => {
    const counts = countByType([`${VALID.email} ${VALID.nhs}`, `${VALID.email}`]);
    expect(counts).toEqual({ EMAIL: 2, NHS_NUMBER: 1 });
    expect(JSON.stringify(counts)).not.toContain('example');
  });
});

describe('createNonce', () => {
  it('gives 12 characters from a 32-letter alphabet, different each time', () => {
    const nonces = new Set(Array.from({ length: 1000 }, () => createNonce()));
    expect(nonces.size).toBe(1000);
    for (const nonce of nonces) expect(nonce).toMatch(/^[a-km-np-z2-9]{12}$/);
  });
});

describe('values split across adjacent texts', () => {
  const adjacentPairs = (count: number) => Array.from({ length: count - 1 }, (_, index) => [index, index + 1] as const);

  it('finds a value cut anywhere across two adjacent texts: placeholder in the first, rest removed from the second', () => {
    const whole = `card ${VALID.visa} or mail ${VALID.email} thanks`;
    for (let cut = 1; cut < whole.length; cut += 1) {
      const parts = [whole.slice(0, cut), whole.slice(cut)];
      const { texts, map } = tokenise(parts, NONCE, { adjacent: [[0, 1]] });
      const sent = texts.join('');
      expect(sent).not.toContain('1111 1111');
      expect(sent).not.toContain('jane.doe');
      expect(restoreAll(sent, map, NONCE)).toBe(whole);
      expect(countByType(parts, { adjacent: [[0, 1]] })).toEqual({ CARD: 1, EMAIL: 1 });
    }
  });

  it('does not stretch a value over the next text, nor take the rest of a split value twice', () => {
    expect(redact(['mail a@example.co', 'Please'], { adjacent: [[0, 1]] }).texts).toEqual(['mail [EMAIL_1]', 'Please']);
    const parts = ['write to jane.do', 'e7@example.co.uk', 'Please answer.'];
    const { texts, map } = tokenise(parts, NONCE, { adjacent: adjacentPairs(3) });
    expect(texts).toEqual([`write to ${placeholder('EMAIL', 1, NONCE)}`, '', 'Please answer.']);
    expect(restoreAll(texts.join(''), map, NONCE)).toBe(parts.join(''));
  });

  it('reads texts that are not adjacent on their own', () => {
    expect(redact(['card 4111 1111', '1111 1111']).texts).toEqual(['card 4111 1111', '1111 1111']);
  });
});
