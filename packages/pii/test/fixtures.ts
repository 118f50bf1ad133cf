/** Checksum-valid (and deliberately invalid) values for the tests; nothing here is a real person's data. */

/** Completes 9 digits into an NHS number, or null when no check digit exists (remainder 10). */
export function nhsNumber(nine: string): string | null {
  let sum = 0;
  for (let index = 0; index < 9; index += 1) sum += Number(nine[index]) * (10 - index);
  let check = 11 - (sum % 11);
  if (check === 11) check = 0;
  return check === 10 ? null : nine + String(check);
}

/** NHS numbers in the 999 test range (never issued), as "999 xxx xxxx". */
export function testNhsNumbers(count: number): string[] {
  const numbers: string[] = [];
  for (let suffix = 0; numbers.length < count; suffix += 1) {
    const complete = nhsNumber(`999${String(100_000 + suffix * 7).padStart(6, '0')}`);
    if (complete !== null) numbers.push(`${complete.slice(0, 3)} ${complete.slice(3, 6)} ${complete.slice(6)}`);
  }
  return numbers;
}

export function luhnComplete(partial: string): string {
  for (let check = 0; check <= 9; check += 1) {
    const candidate = partial + String(check);
    let sum = 0;
    let double = false;
    for (let index = candidate.length - 1; index >= 0; index -= 1) {
      let value = Number(candidate[index]);
      if (double) {
        value *= 2;
        if (value > 9) value -= 9;
      }
      sum += value;
      double = !double;
    }
    if (sum % 10 === 0) return candidate;
  }
  throw new Error('unreachable');
}

/** An IBAN with correct check digits for a country code and BBAN (ISO 13616). */
export function iban(country: string, bban: string): string {
  const numeric = (bban + country + '00').replace(/[A-Z]/g, (letter) => String(letter.charCodeAt(0) - 55));
  const check = 98 - Number(BigInt(numeric) % 97n);
  return country + String(check).padStart(2, '0') + bban;
}

/** Groups a string in blocks of four, as IBANs and cards are printed. */
export function fours(value: string, separator = ' '): string {
  return value.replace(/(.{4})(?=.)/g, `$1${separator}`);
}

/** Changes the last digit of a value (a wrong checksum, same shape). */
export function breakLastDigit(value: string): string {
  const match = /(\d)(\D*)$/.exec(value);
  if (match === null) throw new Error('no digit');
  const digit = (Number(match[1]) + 1) % 10;
  return value.slice(0, match.index) + String(digit) + match[2];
}

export const VALID = {
  email: 'jane.doe@example.co.uk',
  phoneUk: '020 7946 0958',
  phoneUkMobileIntl: '+44 7911 123456',
  phoneFr: '06 12 34 56 78',
  phoneFrIntl: '+33 6 12 34 56 78',
  phoneDe: '030 1234567',
  phoneDeIntl: '+49 30 1234567',
  visa: '4111 1111 1111 1111',
  mastercard: '5555 5555 5555 4444',
  amex: '3782 822463 10005',
  ibanGb: 'GB82 WEST 1234 5698 7654 32',
  ibanDe: 'DE89 3704 0044 0532 0130 00',
  ibanFr: 'FR14 2004 1010 0505 0001 3M02 606',
  ibanNl: 'NL91 ABNA 0417 1643 00',
  nino: 'AB 12 34 56 C',
  nhs: '943 476 5919',
  postcode: 'SW1A 1AA',
  ipv4: '81.2.69.160',
  ipv6: '2001:db8::8a2e:370:7334',
  deSteuerId: '86095742719',
  frNir: '1 84 03 12 765 432 15',
  frNirCorsica: '1 85 12 2A 004 001 96',
  esDni: '12345678Z',
  esNie: 'X1234567L',
  itCf: 'RSSMRA85T10A562S',
  nlBsn: '111222333',
  plPesel: '44051401359',
} as const;
