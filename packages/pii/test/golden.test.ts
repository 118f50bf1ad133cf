import { createHash } from 'node:crypto';
import { countByType, detect, redact, tokenise } from '../src';
import { fours, iban, luhnComplete, testNhsNumbers, VALID } from './fixtures';
import { prng } from '../bench/prng';

/**
 * Results pinned on a generated corpus: detect, redact and tokenise must give exactly the results they gave when
 * the fingerprints below were taken, so that work on the speed of the scan cannot change what is found, where,
 * with which score, or how it is numbered. The corpus mixes prose, code, numbers that are not personal data,
 * values of every type written in many ways (separators, case, labels, fullwidth and other-script digits,
 * zero-width characters, look-alike letters) and values that touch or overlap each other. If a change of
 * behaviour is intended, the detector tests say what changed; then take the new fingerprints.
 */

const ZW = '\u200b';
const fullwidth = (text: string): string =>
  text.replace(/[0-9A-Za-z@.]/g, (character) => String.fromCodePoint(character.codePointAt(0)! + 0xfee0));
const arabicIndic = (text: string): string =>
  text.replace(/[0-9]/g, (digit) => String.fromCodePoint(0x0660 + Number(digit)));

const VALUES: readonly string[] = [
  ...Object.values(VALID),
  ...testNhsNumbers(4),
  fours(iban('ES', '21000418450200051332')),
  fours(iban('DE', '370400440532013000'), '-'),
  luhnComplete('555555555555444'),
  luhnComplete('601100000000000'),
  '4111-1111-1111-1111',
  '4111111111111111',
  'jane.doe@example.com',
  'JOHN.SMITH+tag@Example.ORG',
  'josé@exämple.de',
  'a@b.com.123',
  '+44 (0)20 7946 0958',
  '0044 20 7946 0958',
  '+33 6 12 34 56 78',
  '+49 (30) 1234-567',
  '07911 123456',
  '0 2 0 7 9 4 6 0 9 5 8',
  '612 345 678',
  'ab123456c',
  'AB 12 34 56',
  'sw1a 1aa',
  'EC1A1BB',
  'GIR 0AA',
  '192.168.0.1',
  '10.0.0.255',
  'fe80::1',
  '::1',
  '2001:0db8:0000:0000:0000:ff00:0042:8329',
  '12/03/1980',
  '3.4.1975',
  '1980-03-12',
  '12th March 1980',
  'March 12, 1980',
  '1 de enero de 1990',
  '2 maja 1985',
  'AB1234567',
  'C01X00T47',
  '12AB34567',
  'X 1234567 L',
  '12.345.678-Z',
  'rssmra85t10a562s',
  '2 85 12 2B 004 001 96',
  '111 222 333',
  '44051401359',
  '86095742719',
  'АВ123456С',
  `jane${ZW}.doe@example${ZW}.com`,
  fullwidth('4111 1111 1111 1111'),
  fullwidth('SW1A 1AA'),
  arabicIndic('943 476 5919'),
];

const LABELS: readonly string[] = [
  '',
  '',
  'NHS number ',
  'card: ',
  'IBAN ',
  'call ',
  'tel. ',
  'DOB ',
  'born on ',
  'passport no ',
  'PESEL: ',
  'BSN ',
  'Steuer-ID ',
  'NIR ',
  'DNI ',
  'codice fiscale ',
  'national insurance ',
  'postcode ',
  'from IP ',
  'version ',
  'order ',
  'invoice no. ',
  'Re ticket 4471: my number is ',
  'contact:\n',
];

const FILLERS: readonly string[] = [
  'Could you summarise the attached report? Revenue grew 12% in Q3 2024.',
  'The migration to version 2.4.1 finished on 2024-03-18 at 10:30 UTC.',
  'Order 1184302 shipped on 12 March; invoice INV-2024-0071, total £1,249.50.',
  'Section 4.2.1 says either party may terminate with 30 days notice.',
  '```python\ndef median(xs):\n    return sorted(xs)[len(xs) // 2]\n```',
  'Timestamps look like 1714032000 and ids like req_8f3a2c91.',
  'Dr. Smith e.g. said: "fine!" Then... nothing?',
  'Build 8.53 failed.',
  'Numéro de téléphone : à rappeler.',
  'Ｆｕｌｌｗｉｄｔｈ ｔｅｘｔ and \u00a0spaces\u2009here – and dashes — too.',
  'ISBN 978-3-16-148410-0, SKU 5012345678900, tracking 1Z999AA10123456784.',
  'Pay 1234 5678 9012 3456 later; 0800-1700 daily.',
];

const SEPARATORS: readonly string[] = [' ', ', ', '. ', '.\n', '\n', ' (', ') ', '; ', ':', '', '/', '-', ' - '];

function generate(seed: number, size: number): string {
  const random = prng(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const parts: string[] = [];
  let length = 0;
  while (length < size) {
    const roll = random();
    const part = roll < 0.35 ? pick(FILLERS) : roll < 0.9 ? pick(LABELS) + pick(VALUES) : pick(VALUES) + pick(VALUES);
    parts.push(part, pick(SEPARATORS));
    length += part.length + 1;
  }
  return parts.join('');
}

const DENSE = 'Reach alice.smith@example.com or +44 20 7946 0958 about card 4111 1111 1111 1111. '.repeat(400);

const NOW = new Date('2026-01-01T00:00:00Z');
const NONCE = 'g0ldenN0nce';

const fingerprint = (value: unknown): string =>
  createHash('sha256').update(JSON.stringify(value)).digest('hex').slice(0, 16);

const CORPORA: ReadonlyArray<readonly [string, () => readonly string[]]> = [
  ['mixed corpus (three texts of 40 KB)', () => [generate(1, 40_000), generate(2, 40_000), generate(3, 40_000)]],
  ['dense corpus (33 KB of one repeated sentence)', () => [DENSE]],
];

/** detect, redact, tokenise and countByType of each corpus, as fingerprints of their JSON. */
const EXPECTED: Readonly<Record<string, Record<string, string>>> = {
  'mixed corpus (three texts of 40 KB)': {
    entities: 'd0ac39fe5ff294f9',
    redact: '0aa098b715d488c1',
    tokenise: 'a1f00c57f7fcb6a1',
    counts: 'fab37fb9aa63b0e1',
    found: '1397',
  },
  'dense corpus (33 KB of one repeated sentence)': {
    entities: 'fe723c36d42f092f',
    redact: '5e52926fb92bf174',
    tokenise: 'a9c830017fb59e89',
    counts: '83e3ed075becf90d',
    found: '1200',
  },
};

describe('results on a generated corpus stay exactly as pinned', () => {
  it.each(CORPORA)('%s', (name, make) => {
    const texts = make();
    const entities = texts.map((text) => detect(text, { now: NOW }));
    const result = {
      entities: fingerprint(entities),
      redact: fingerprint(redact(texts, { now: NOW })),
      tokenise: fingerprint(tokenise(texts, NONCE, { now: NOW })),
      counts: fingerprint(countByType(texts, { now: NOW })),
      found: String(entities.reduce((sum, list) => sum + list.length, 0)),
    };
    expect(result).toEqual(EXPECTED[name]);
  });
});
