import {
  deSteuerId,
  esControlLetter,
  frNir,
  itCodiceFiscale,
  luhn,
  nhsMod11,
  nlBsn,
  plPesel,
  validDate,
} from '../src/checksums';
import { cardScheme } from '../src/detectors/numeric';

describe('check algorithms', () => {
  it('Luhn', () => {
    expect(luhn('4111111111111111')).toBe(true);
    expect(luhn('4111111111111112')).toBe(false);
    expect(luhn('378282246310005')).toBe(true);
  });

  it('card schemes (prefix and length)', () => {
    expect(cardScheme('4111111111111111')).toBe(true);
    expect(cardScheme('378282246310005')).toBe(true);
    expect(cardScheme('37828224631000')).toBe(false);
    expect(cardScheme('2221000000000009')).toBe(true);
    expect(cardScheme('9111111111111111')).toBe(false);
  });

  it('NHS mod 11, rejecting all-same digits', () => {
    expect(nhsMod11('9434765919')).toBe(true);
    expect(nhsMod11('9434765918')).toBe(false);
    expect(nhsMod11('9999999999')).toBe(false);
  });

  it('DE Steuer-ID: ISO 7064 MOD 11,10 and the digit-frequency rule', () => {
    expect(deSteuerId('86095742719')).toBe(true);
    expect(deSteuerId('47036892816')).toBe(true);
    expect(deSteuerId('86095742718')).toBe(false);
    expect(deSteuerId('01234567890')).toBe(false);
    // Every digit once (no repeated digit): not allocated.
    expect(deSteuerId('12345678903')).toBe(false);
  });

  it('NL BSN 11-proof', () => {
    expect(nlBsn('111222333')).toBe(true);
    expect(nlBsn('123456782')).toBe(true);
    expect(nlBsn('123456789')).toBe(false);
    expect(nlBsn('000000000')).toBe(false);
  });

  it('PL PESEL: weights and encoded birth date', () => {
    expect(plPesel('44051401359')).toBe(true);
    expect(plPesel('02070803628')).toBe(true);
    expect(plPesel('44051401358')).toBe(false);
    expect(plPesel('44133101350')).toBe(false);
  });

  it('FR NIR key, with Corsica 2A/2B', () => {
    expect(frNir('184031276543215')).toBe(true);
    expect(frNir('185122A00400196')).toBe(true);
    expect(frNir('185122B00400196')).toBe(false);
    expect(frNir('184031276543216')).toBe(false);
    expect(frNir('584031276543215')).toBe(false);
  });

  it('ES control letter (DNI, NIE)', () => {
    expect(esControlLetter('12345678')).toBe('Z');
    expect(esControlLetter('01234567')).toBe('L');
  });

  it('IT codice fiscale check character', () => {
    expect(itCodiceFiscale('RSSMRA85T10A562S')).toBe(true);
    expect(itCodiceFiscale('RSSMRA85T10A562T')).toBe(false);
  });

  it('calendar dates', () => {
    expect(validDate(2000, 2, 29)).toBe(true);
    expect(validDate(1900, 2, 29)).toBe(false);
    expect(validDate(2024, 4, 31)).toBe(false);
  });
});
