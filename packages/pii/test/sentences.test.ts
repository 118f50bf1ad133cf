import { detect, type Entity, type EntityType } from '../src';
import { latestBirthDate } from '../src/detectors/dates';
import { sentenceCuts } from '../src/sentences';
import { VALID } from './fixtures';

/** The request's time in every test: a date after 24 November 2026 is in the future. */
const NOW = new Date('2026-11-24T12:00:00Z');

/** The entity of `type` covering exactly `value` in `text`, or undefined. */
function entityOf(text: string, type: EntityType, value: string, thresholds = {}): Entity | undefined {
  return detect(text, { now: NOW, thresholds }).find(
    (entity) => entity.type === type && text.slice(entity.start, entity.end) === value,
  );
}

/** The text cut into sentences. */
function sentences(text: string): string[] {
  const cuts = [0, ...sentenceCuts(text), text.length];
  return cuts
    .slice(1)
    .map((cut, index) => text.slice(cuts[index], cut).trim())
    .filter((sentence) => sentence.length > 0);
}

describe('sentence boundaries', () => {
  it('end a sentence at ". ", "! ", "? ", an ellipsis, a line break and a paragraph', () => {
    expect(sentences('One. Two! Three? Four… Five... Six\nSeven\n\nEight')).toEqual([
      'One.',
      'Two!',
      'Three?',
      'Four…',
      'Five...',
      'Six',
      'Seven',
      'Eight',
    ]);
    expect(sentences('He said "stop." Then left.')).toEqual(['He said "stop."', 'Then left.']);
  });

  it('do not end one at decimal points, versions, abbreviations, initials or a label line', () => {
    const whole = [
      'Build 8.53 failed on 1.2.3 at 10.5 MB',
      'Call Dr. Smith, e.g. at home, or Mr. J. R. Jones',
      'Order No. 4471 and Tel. 020 7946 0958',
      'Geb. am 12.03.1980, z.B. in Köln, ul. Długa 5',
      'Sig. Rossi, Sra. García, Mme. Dupont, Dhr. de Vries',
      'D.O.B. 12/03/1980',
      'PESEL:\n44051401359',
    ];
    for (const text of whole) expect(sentences(text)).toEqual([text]);
  });

  it('end one after a number, an email or a domain at the end of a sentence', () => {
    expect(sentences('Version 2. Call me')).toEqual(['Version 2.', 'Call me']);
    expect(sentences('Mail jane@example.com. Then call')).toEqual(['Mail jane@example.com.', 'Then call']);
  });
});

describe('context stays in its sentence: the examples', () => {
  it('a negative word with its own number before a labelled identifier does not count against it', () => {
    const text = `Re ticket 4471: my PESEL is ${VALID.plPesel}`;
    expect(entityOf(text, 'NATIONAL_ID', VALID.plPesel)?.confidence).toBe(
      entityOf(`my PESEL is ${VALID.plPesel}`, 'NATIONAL_ID', VALID.plPesel)?.confidence,
    );
  });

  it('a negative word in the previous sentence does not count', () => {
    const text = `Build 8.53 failed. PESEL: ${VALID.plPesel}`;
    expect(entityOf(text, 'NATIONAL_ID', VALID.plPesel)).toBeDefined();
    expect(entityOf(`Build failed. PESEL: ${VALID.plPesel}`, 'NATIONAL_ID', VALID.plPesel)).toBeDefined();
  });

  it('a positive word in the next sentence does not make an order number a phone number', () => {
    expect(entityOf('Order 0403713302 shipped on time. You can call me.', 'PHONE', '0403713302')).toBeUndefined();
    expect(entityOf('Order 0403713302 shipped on time.\nCall me.', 'PHONE', '0403713302')).toBeUndefined();
  });

  it('near misses: in the same sentence both still work', () => {
    expect(entityOf('You can call me on 0403713302.', 'PHONE', '0403713302')).toBeDefined();
    expect(entityOf('Order 0403713302, call me about it', 'PHONE', '0403713302', { phone: 0 })!.confidence).toBe(
      entityOf('0403713302, call me about it', 'PHONE', '0403713302', { phone: 0 })!.confidence - 0.35,
    );
    expect(entityOf(`PESEL of build ${VALID.plPesel}`, 'NATIONAL_ID', VALID.plPesel)).toBeUndefined();
    expect(entityOf('Order 2024-0403713302', 'PHONE', '0403713302')).toBeUndefined();
    expect(entityOf(`Tel. 0403713302`, 'PHONE', '0403713302')).toBeDefined();
  });

  it('a date in the future is not a date of birth, relative to the request time', () => {
    expect(entityOf('Date of birth: 24/11/2026', 'DATE_OF_BIRTH', '24/11/2026')).toBeDefined();
    expect(entityOf('Date of birth: 26/11/2026', 'DATE_OF_BIRTH', '26/11/2026')).toBeUndefined();
    const later = detect('Date of birth: 26/11/2026', { now: new Date('2027-01-01T00:00:00Z') });
    expect(later.map((entity) => entity.type)).toEqual(['DATE_OF_BIRTH']);
  });

  it('the latest date of birth is today in the time zone furthest ahead of UTC', () => {
    expect(latestBirthDate(Date.parse('2026-11-24T09:59:59Z'))).toBe(20261124);
    expect(latestBirthDate(Date.parse('2026-11-24T10:00:00Z'))).toBe(20261125);
  });
});

interface Language {
  /** A short sentence with a negative context word (and no number) that comes before the value's sentence. */
  readonly negativeSentence: string;
  /** The negative word with a number of its own, then a label: "Re ticket 4471:". */
  readonly negativeWithNumber: string;
  /** A negative word right before a value, in one sentence. */
  readonly negativeWord: string;
  /** A labelled identifier whose score a negative word would lower. */
  readonly labelled: { readonly text: string; readonly value: string; readonly type: EntityType };
  /** A number that is a phone number only with context, after a negative word; then a sentence with a phone word. */
  readonly phone: {
    readonly value: string;
    readonly before: string;
    readonly nextSentence: string;
    readonly label: string;
  };
  /** Date of birth: a label, a past and a future date in the language's format, and a sentence with "born". */
  readonly dob: {
    readonly label: string;
    readonly past: string;
    readonly future: string;
    readonly bornSentence: string;
  };
}

const LANGUAGES: Record<string, Language> = {
  English: {
    negativeSentence: 'Invoice paid.',
    negativeWithNumber: 'Re invoice 4471:',
    negativeWord: 'invoice',
    labelled: { text: `my NHS number is ${VALID.nhs}`, value: VALID.nhs, type: 'NHS_NUMBER' },
    phone: { value: '0403713302', before: 'Order', nextSentence: 'You can call me today.', label: 'call me on' },
    dob: { label: 'Date of birth:', past: '12/03/1980', future: '12/03/2030', bornSentence: 'I was born in Leeds.' },
  },
  German: {
    negativeSentence: 'Rechnung bezahlt.',
    negativeWithNumber: 'Betreff Rechnung 4471:',
    negativeWord: 'Rechnung',
    labelled: { text: `meine Steuer-ID ist ${VALID.deSteuerId}`, value: VALID.deSteuerId, type: 'NATIONAL_ID' },
    phone: { value: '0403713302', before: 'Bestellung', nextSentence: 'Telefon folgt.', label: 'Telefon' },
    dob: { label: 'Geburtsdatum:', past: '12.03.1980', future: '12.03.2030', bornSentence: 'Ich bin in Köln geboren.' },
  },
  French: {
    negativeSentence: 'Facture payée.',
    negativeWithNumber: 'Objet : facture 4471 :',
    negativeWord: 'facture',
    labelled: { text: `mon NIR est ${VALID.frNir}`, value: VALID.frNir, type: 'NATIONAL_ID' },
    phone: { value: '0403713302', before: 'Commande', nextSentence: 'Mon téléphone change.', label: 'téléphone' },
    dob: {
      label: 'Date de naissance :',
      past: '12 mars 1980',
      future: '12 mars 2030',
      bornSentence: 'Je suis née à Lyon.',
    },
  },
  Spanish: {
    negativeSentence: 'Factura pagada.',
    negativeWithNumber: 'Asunto: factura 4471:',
    negativeWord: 'factura',
    labelled: { text: `mi DNI es ${VALID.esDni}`, value: VALID.esDni, type: 'NATIONAL_ID' },
    phone: { value: '612 345 678', before: 'Pedido', nextSentence: 'Mi teléfono cambia.', label: 'teléfono' },
    dob: {
      label: 'Fecha de nacimiento:',
      past: '12 de marzo de 1980',
      future: '12 de marzo de 2030',
      bornSentence: 'Soy nacida en Sevilla.',
    },
  },
  Italian: {
    negativeSentence: 'Fattura pagata.',
    negativeWithNumber: 'Oggetto: fattura 4471:',
    negativeWord: 'fattura',
    labelled: { text: `il mio telefono è ${VALID.phoneFr}`, value: VALID.phoneFr, type: 'PHONE' },
    phone: { value: '0403713302', before: 'Ordine', nextSentence: 'Il telefono cambia.', label: 'telefono' },
    dob: {
      label: 'Data di nascita:',
      past: '12 marzo 1980',
      future: '12 marzo 2030',
      bornSentence: 'Sono nata a Roma.',
    },
  },
  Dutch: {
    negativeSentence: 'Factuur betaald.',
    negativeWithNumber: 'Betreft factuur 4471:',
    negativeWord: 'factuur',
    labelled: { text: `mijn BSN is ${VALID.nlBsn}`, value: VALID.nlBsn, type: 'NATIONAL_ID' },
    phone: { value: '0403713302', before: 'Bestelling', nextSentence: 'Mijn telefoon is stuk.', label: 'telefoon' },
    dob: {
      label: 'Geboortedatum:',
      past: '12 maart 1980',
      future: '12 maart 2030',
      bornSentence: 'Ik ben geboren in Gent.',
    },
  },
  Polish: {
    negativeSentence: 'Faktura zapłacona.',
    negativeWithNumber: 'Dotyczy: faktura 4471:',
    negativeWord: 'faktura',
    labelled: { text: `mój PESEL to ${VALID.plPesel}`, value: VALID.plPesel, type: 'NATIONAL_ID' },
    phone: {
      value: '612 345 678',
      before: 'Zamówienie',
      nextSentence: 'Numer telefonu podam.',
      label: 'numer telefonu',
    },
    dob: { label: 'Data urodzenia:', past: '12.03.1980', future: '12.03.2030', bornSentence: 'Urodzona w Gdańsku.' },
  },
};

describe.each(Object.entries(LANGUAGES))('context stays in its sentence in %s', (_language, language) => {
  const { labelled, phone, dob } = language;
  const alone = (): Entity => entityOf(labelled.text, labelled.type, labelled.value)!;

  it('the labelled identifier is found on its own', () => {
    expect(alone()).toBeDefined();
  });

  it('a negative word in the previous sentence changes nothing', () => {
    const text = `${language.negativeSentence} ${labelled.text}`;
    expect(entityOf(text, labelled.type, labelled.value)?.confidence).toBe(alone().confidence);
    const overLines = `${language.negativeSentence.slice(0, -1)}\n${labelled.text}`;
    expect(entityOf(overLines, labelled.type, labelled.value)?.confidence).toBe(alone().confidence);
  });

  it('a negative word that labels a number of its own changes nothing', () => {
    const text = `${language.negativeWithNumber} ${labelled.text}`;
    expect(entityOf(text, labelled.type, labelled.value)?.confidence).toBe(alone().confidence);
  });

  it('near miss: a negative word right before the value in the same sentence still lowers its score', () => {
    const text = `${labelled.text.slice(0, -labelled.value.length)}${language.negativeWord} ${labelled.value}`;
    const lowered = entityOf(text, labelled.type, labelled.value, { [alone().detector]: 0 });
    expect(lowered!.confidence).toBeLessThan(alone().confidence);
  });

  it('a phone word in the next sentence does not make a reference a phone number', () => {
    const text = `${phone.before} ${phone.value} ok. ${phone.nextSentence}`;
    expect(entityOf(text, 'PHONE', phone.value)).toBeUndefined();
  });

  it('near miss: a phone word in the same sentence still makes it one', () => {
    expect(entityOf(`${phone.label} ${phone.value}`, 'PHONE', phone.value)).toBeDefined();
    expect(entityOf(`${phone.value} (${phone.label})`, 'PHONE', phone.value)).toBeDefined();
  });

  it('a past date with a birth label is a date of birth; a future one is not', () => {
    expect(entityOf(`${dob.label} ${dob.past}`, 'DATE_OF_BIRTH', dob.past)).toBeDefined();
    expect(entityOf(`${dob.label} ${dob.future}`, 'DATE_OF_BIRTH', dob.future)).toBeUndefined();
  });

  it('"born" in the previous sentence does not make a date a date of birth; in the same one it does', () => {
    expect(entityOf(`${dob.bornSentence} Meeting: ${dob.past}`, 'DATE_OF_BIRTH', dob.past)).toBeUndefined();
    const sameSentence = `${dob.bornSentence.slice(0, -1)} ${dob.past}.`;
    expect(entityOf(sameSentence, 'DATE_OF_BIRTH', dob.past)).toBeDefined();
  });
});
