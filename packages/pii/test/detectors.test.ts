import { detect, type EntityType } from '../src';
import { breakLastDigit, fours, iban, luhnComplete, nhsNumber, testNhsNumbers, VALID } from './fixtures';

/** The entities of `type` in `text`, as the original substrings they cover. */
function found(text: string, type: EntityType): string[] {
  return detect(text)
    .filter((entity) => entity.type === type)
    .map((entity) => text.slice(entity.start, entity.end));
}

interface Case {
  readonly type: EntityType;
  /** Texts whose `value` must be found with exactly that span. */
  readonly valid: ReadonlyArray<readonly [text: string, value: string]>;
  /** Same shape, wrong checksum or rule: nothing of the type may be found. */
  readonly invalid: readonly string[];
  /** Look-alikes that are not personal data: nothing of the type may be found. */
  readonly nearMisses: readonly string[];
  /** Obfuscated values that must still be found: text and the original span expected. */
  readonly evasions: ReadonlyArray<readonly [text: string, value: string]>;
}

const ZW = '\u200b';
const fullwidth = (text: string): string =>
  text.replace(/[0-9A-Za-z@.]/g, (character) => String.fromCodePoint(character.codePointAt(0)! + 0xfee0));
const arabicIndic = (text: string): string =>
  text.replace(/[0-9]/g, (digit) => String.fromCodePoint(0x0660 + Number(digit)));
const zeroWidthEvery = (text: string, step: number): string =>
  Array.from(text, (character, index) => (index > 0 && index % step === 0 ? ZW + character : character)).join('');

const around = (value: string, before = 'Details follow: ', after = ' thanks.'): readonly [string, string] => [
  `${before}${value}${after}`,
  value,
];

const CASES: Record<string, Case> = {
  email: {
    type: 'EMAIL',
    valid: [
      around(VALID.email),
      around('x+tag@sub.example.org'),
      around('josé.müller@exämple.de'),
      around('user@xn--bcher-kva.example'),
      ['mailto:ops@example.com.', 'ops@example.com'],
      ["email='dev@example.io'", 'dev@example.io'],
      // Encodings and obfuscations of '@' and '.': the span is the text as written.
      around('john%40example.com'),
      around('john&#64;example&#46;com'),
      around('john&commat;example.com'),
      around('john [at] example [dot] com'),
      around('john(at)example(dot)co.uk'),
    ],
    invalid: ['user@example.c', 'user@example.123'],
    nearMisses: ['npm i lodash@4.17.21', 'use @decorator here', 'ssh user@localhost', 'foo@bar', '@@@@', 'a@b.c1'],
    evasions: [
      around(`jane${ZW}.doe@example${ZW}.com`),
      around('jane＠example.com'),
      around('jаne@exаmple.com'), // Cyrillic а
      around('jane@exam\u00adple.com'), // soft hyphen
      around(fullwidth('jane@example.com')),
    ],
  },
  phone: {
    type: 'PHONE',
    valid: [
      around(VALID.phoneUk, 'Ring '),
      around('+44    20    7946    0958', 'Ring '),
      around('+44_20_7946_0958', 'order '),
      around('020:7946:0958', 'tracking '),
      around(VALID.phoneUk, 'Reach the desk on '),
      around('02079460958'),
      around('+44 20 7946 0958'),
      ['Call +44 (0)20 7946 0958 now', '+44 (0)20 7946 0958'],
      around(VALID.phoneUkMobileIntl),
      around(VALID.phoneFr),
      around(VALID.phoneFrIntl),
      around(VALID.phoneDe),
      around(VALID.phoneDeIntl),
      around('0049 30 1234567'),
      around('612 34 56 78', 'Teléfono: '),
    ],
    invalid: ['+44 20 7946 09', '+999 1234 5678'],
    nearMisses: [
      'The total was 612 34 56 78 units', // Spanish shape, no trunk prefix, no context
      'in 2024 2025 2026 we grew',
      'version 1.2.3.4',
      'timestamp 1700000000',
      '12345678',
    ],
    evasions: [
      around(`020${ZW}7946${ZW}0958`),
      around(fullwidth(VALID.phoneUk)),
      around('0 2 0 7 9 4 6 0 9 5 8'),
      around('020–7946–0958'),
      around('020\u00a07946\u00a00958'),
      around('020 . 7946 . 0958'),
    ],
  },
  card: {
    type: 'CARD',
    valid: [
      around(VALID.visa),
      around(VALID.mastercard),
      around(VALID.amex),
      around('4111-1111-1111-1111'),
      around('4111111111111111'),
      around(luhnComplete('400000000000000'), 'Card: '),
      // A scheme's prefix and length and a passing Luhn: a card whatever words stand before it.
      around('4111 1111 1111 1111', 'tracking number '),
      around('4111111111111111', 'order '),
      around('4111_1111_1111_1111', 'order '),
      around('4111,1111,1111,1111', 'ref '),
      around('4111:1111:1111:1111', 'tracking '),
      around('4111    1111    1111    1111', 'my card '),
    ],
    invalid: [breakLastDigit(VALID.visa), breakLastDigit(VALID.amex), '9111 1111 1111 1111', '4444 4444 4444 4444'],
    nearMisses: ['ISBN 978-3-16-148410-0', '+4111111111111111', 'id 12345678901234567890'],
    evasions: [
      around(fullwidth(VALID.visa)),
      around(zeroWidthEvery('4111111111111111', 3)),
      around('4 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1'),
      around('4111 – 1111 – 1111 – 1111'),
      around('4111\u00a01111\u20091111\u202f1111'),
      around(arabicIndic('4111 1111 1111 1111')),
    ],
  },
  iban: {
    type: 'IBAN',
    valid: [
      around(VALID.ibanGb),
      around(VALID.ibanDe),
      around(VALID.ibanFr),
      around(VALID.ibanNl),
      around(VALID.ibanGb.replace(/ /g, '')),
      around(VALID.ibanGb.toLowerCase()),
      around(fours(iban('ES', '21000418450200051332'))),
      around(fours(iban('IT', 'X0542811101000000123456'))),
      around(fours(iban('PL', '109010140000071219812874'))),
    ],
    invalid: [breakLastDigit(VALID.ibanGb), 'GB00 WEST 1234 5698 7654 32', 'XX82 WEST 1234 5698 7654 32'],
    nearMisses: ['GB82 WEST 1234', 'see GB82WEST12345698765432X', 'model DE89 engine'],
    evasions: [
      around(zeroWidthEvery(VALID.ibanGb, 5)),
      around(fours(VALID.ibanDe.replace(/ /g, ''), '-')),
      around(fullwidth(VALID.ibanGb)),
      around(VALID.ibanDe.replace(/ /g, '  ')),
    ],
  },
  nino: {
    type: 'UK_NINO',
    valid: [
      around(VALID.nino),
      around('AB123456C'),
      around('ab123456c', 'NI number: '),
      around('AB123456', 'National Insurance number '),
      around('AB 12 34 56 C', 'NINO '),
    ],
    invalid: ['QQ 12 34 56 C', 'GB123456A', 'AB123456E', 'DA123456A', 'AO123456A'],
    nearMisses: ['AB1234567C', 'AB12345C', 'the AB123456 widget'],
    evasions: [
      around(`AB${ZW}123456${ZW}C`),
      around(fullwidth('AB123456C')),
      around('АВ123456С'), // Cyrillic А, В, С
      around('AB–12–34–56–C'),
    ],
  },
  nhs: {
    type: 'NHS_NUMBER',
    valid: [
      around(VALID.nhs),
      around(VALID.nhs, 'NHS number: '),
      around('9434765919', 'nhs no. '),
      around('943-476-5919'),
      ...testNhsNumbers(3).map((value) => around(value, 'Patient NHS number ')),
    ],
    invalid: ['NHS number 943 476 5918', 'NHS number 999 999 9999', 'NHS 000 000 0000'],
    nearMisses: ['order 9434765919 shipped', 'page id 9434765919', 'ticket 943 476 5919', 'timestamp 1700000000'],
    evasions: [
      around(`943${ZW}476${ZW}5919`, 'NHS: '),
      around(fullwidth(VALID.nhs), 'NHS '),
      around('9 4 3 4 7 6 5 9 1 9', 'NHS '),
      around('943–476–5919'),
      around(arabicIndic(VALID.nhs), 'NHS '),
    ],
  },
  postcode: {
    type: 'UK_POSTCODE',
    valid: [
      around(VALID.postcode),
      around('EC1A 1BB'),
      around('M1 1AE'),
      around('B33 8TH'),
      around('CR2 6XH'),
      around('DN55 1PT'),
      around('GIR 0AA'),
      around('sw1a 1aa', 'postcode '),
      around('SW1A1AA', 'Delivery address: 10 Downing Street, London '),
    ],
    invalid: ['QA1 1AA', 'SW1A 1CA', 'VX1 1AA'],
    nearMisses: ['A1 2BC', 'the m25 4th exit', 'SW1A1AA'],
    evasions: [around('SW1A\u00a01AA'), around(`SW${ZW}1A 1AA`), around(fullwidth('SW1A') + ' ' + fullwidth('1AA'))],
  },
  ip: {
    type: 'IP_ADDRESS',
    valid: [
      around(VALID.ipv4),
      around('192.168.1.20', 'host '),
      around(VALID.ipv6),
      around('fe80::1ff:fe23:4567:890a'),
      ['[2001:db8::1]:8080', '2001:db8::1'],
      around('::1', 'ipv6 '),
    ],
    invalid: ['999.1.1.1', '1.2.3.256', '2001:db8:::1'],
    nearMisses: [
      'version 1.2.3.4',
      'v1.2.3.4',
      'see section 2.1.3.4 of the spec',
      '1.2.3.4.5',
      'at 10:30:45',
      'std::vector<int>',
      'a::b',
      'MAC 00:1A:2B:3C:4D:5E',
    ],
    evasions: [around(`81${ZW}.2.69.160`), around('８１．２．６９．１６０'), around(`2001:db8::${ZW}8a2e:370:7334`)],
  },
  dob: {
    type: 'DATE_OF_BIRTH',
    valid: [
      around('12/03/1980', 'born '),
      around('1980-03-12', 'DOB: '),
      around('12 March 1980', 'date of birth: '),
      around('12.03.1980', 'Geburtsdatum: '),
      around('12 mars 1980', 'née le '),
      around('March 12, 1980', 'born on '),
      around('03/25/1980', 'Date of birth '),
    ],
    invalid: ['born 31/02/1980', 'born 32/13/1980', 'born 12/03/1850'],
    nearMisses: ['meeting on 12/03/2024', 'the invoice dated 12/03/1980', 'released 12 March 1980'],
    evasions: [around(`12${ZW}/03/1980`, 'DOB: '), around(fullwidth('12') + '/' + fullwidth('03') + '/1980', 'DOB ')],
  },
  passport: {
    type: 'PASSPORT',
    valid: [
      around('123456789', 'passport number '),
      around('AB1234567', 'Passport: '),
      around('12AB34567', 'passeport '),
      around('C01X00T47', 'Reisepass '),
      around('AAA123456', 'pasaporte '),
    ],
    invalid: ['passport ABCDEFGHJ'],
    nearMisses: ['reference AB1234567', 'code 123456789 sent'],
    evasions: [around(`AB${ZW}1234567`, 'passport no. '), around(fullwidth('AB1234567'), 'Passport ')],
  },
  deSteuerId: {
    type: 'NATIONAL_ID',
    valid: [
      around(VALID.deSteuerId, 'Steuer-ID: '),
      around('86 095 742 719', 'steuerliche Identifikationsnummer '),
      around('47036892816', 'Tax ID '),
    ],
    invalid: ['Steuer-ID 86095742718', 'Steuer-ID 06095742719', 'Steuer-ID 11111111111'],
    nearMisses: ['order 86095742719', 'the number 86095742719'],
    evasions: [around(`86${ZW}095${ZW}742${ZW}719`, 'Steuer-ID: '), around(fullwidth(VALID.deSteuerId), 'IdNr ')],
  },
  frNir: {
    type: 'NATIONAL_ID',
    valid: [
      around(VALID.frNir, 'NIR '),
      around(VALID.frNir.replace(/ /g, '')),
      around(VALID.frNirCorsica, 'sécurité sociale : '),
      around(VALID.frNirCorsica.replace(/ /g, '')),
    ],
    invalid: ['NIR 1 84 03 12 765 432 16', 'NIR 5 84 03 12 765 432 15', 'NIR 1 85 12 2A 004 001 97'],
    nearMisses: ['tracking 184031276543215'],
    evasions: [
      around(VALID.frNir.replace(/ /g, '\u00a0'), 'numéro de sécurité sociale '),
      around(fullwidth(VALID.frNir), 'INSEE '),
    ],
  },
  esIds: {
    type: 'NATIONAL_ID',
    valid: [
      around(VALID.esDni, 'DNI '),
      around(VALID.esDni),
      around('12.345.678-Z'),
      around(VALID.esNie, 'NIE '),
      around('x-1234567-l', 'NIE '),
    ],
    invalid: ['DNI 12345678A', 'NIE X1234567A'],
    nearMisses: ['room 12345678Z9', 'SKU12345678Z'],
    evasions: [around(fullwidth(VALID.esDni), 'DNI '), around(`12345${ZW}678Z`, 'DNI ')],
  },
  itCf: {
    type: 'NATIONAL_ID',
    valid: [around(VALID.itCf), around(VALID.itCf.toLowerCase(), 'codice fiscale ')],
    invalid: ['RSSMRA85T10A562T'],
    nearMisses: ['RSSMRA85T10A562SX'],
    evasions: [around(zeroWidthEvery(VALID.itCf, 4)), around(fullwidth(VALID.itCf))],
  },
  nlBsn: {
    type: 'NATIONAL_ID',
    valid: [around(VALID.nlBsn, 'BSN '), around('1112.22.333', 'BSN: '), around('123456782', 'burgerservicenummer ')],
    invalid: ['BSN 111222334', 'BSN 000000000'],
    nearMisses: ['code 111222333'],
    evasions: [around(`111${ZW}222${ZW}333`, 'BSN '), around(fullwidth(VALID.nlBsn), 'BSN ')],
  },
  plPesel: {
    type: 'NATIONAL_ID',
    valid: [around(VALID.plPesel, 'PESEL '), around('02070803628', 'numer PESEL: ')],
    invalid: ['PESEL 44051401358', 'PESEL 44133101350'],
    nearMisses: ['id 44051401359'],
    evasions: [around(`440514${ZW}01359`, 'PESEL '), around(arabicIndic(VALID.plPesel), 'PESEL ')],
  },
};

describe.each(Object.entries(CASES))('detector %s', (_name, testCase) => {
  it.each(testCase.valid.map(([text, value]) => [value, text]))('finds %j', (value, text) => {
    expect(found(text, testCase.type)).toContain(value);
  });
  if (testCase.invalid.length > 0) {
    it.each(testCase.invalid)('rejects the wrong checksum or rule %j', (text) => {
      expect(found(text, testCase.type)).toEqual([]);
    });
  }
  it.each(testCase.nearMisses)('does not take the near miss %j', (text) => {
    expect(found(text, testCase.type)).toEqual([]);
  });
  it.each(testCase.evasions.map(([text, value]) => [value, text]))('sees through %j', (value, text) => {
    expect(found(text, testCase.type)).toContain(value);
  });
});

describe('detect', () => {
  it('gives offsets in the original text, around astral characters and removed characters', () => {
    const text = `😀 é${ZW} mail jane@example.com 😀 card ${fullwidth('4111')} 1111 1111 1111.`;
    const entities = detect(text);
    expect(entities.map((entity) => [entity.type, text.slice(entity.start, entity.end)])).toEqual([
      ['EMAIL', 'jane@example.com'],
      ['CARD', `${fullwidth('4111')} 1111 1111 1111`],
    ]);
  });

  it('returns sorted, non-overlapping entities with their detector and confidence', () => {
    const text = `Email ${VALID.email}, NHS ${VALID.nhs}, IBAN ${VALID.ibanGb}, phone ${VALID.phoneUk}.`;
    const entities = detect(text);
    for (let index = 1; index < entities.length; index += 1) {
      expect(entities[index]!.start).toBeGreaterThanOrEqual(entities[index - 1]!.end);
    }
    expect(entities.map((entity) => entity.detector)).toEqual(['email', 'nhs', 'iban', 'phone']);
    for (const entity of entities) expect(entity.confidence).toBeGreaterThanOrEqual(0.5);
  });

  it('raises the score with context words and lowers it with negative context', () => {
    const bare = detect('9434765919', { thresholds: { nhs: 0 } })[0]!;
    const withContext = detect('NHS number 9434765919', { thresholds: { nhs: 0 } })[0]!;
    const negative = detect('order 9434765919', { thresholds: { nhs: 0 } })[0]!;
    expect(withContext.confidence).toBeGreaterThan(bare.confidence);
    expect(negative.confidence).toBeLessThan(bare.confidence);
  });

  it('honours per-detector thresholds and type filters', () => {
    expect(detect('9434765919')).toEqual([]);
    expect(detect('9434765919', { thresholds: { nhs: 0.3 } }).map((entity) => entity.type)).toEqual(['NHS_NUMBER']);
    expect(detect(`${VALID.email} ${VALID.visa}`, { types: ['CARD'] }).map((entity) => entity.type)).toEqual(['CARD']);
  });

  it('needs the full NHS check: one in eleven 10-digit numbers has no check digit at all', () => {
    expect(nhsNumber('999000000')).toBeNull();
  });

  it('handles empty and PII-free text', () => {
    expect(detect('')).toEqual([]);
    expect(detect('Nothing to see here, version 2 of the plan, 12 apples.')).toEqual([]);
  });
});
