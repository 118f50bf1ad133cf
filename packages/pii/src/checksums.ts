/** Check-digit algorithms (inputs are ASCII digit strings, or the documented character set). */

const digit = (text: string, index: number): number => text.charCodeAt(index) - 48;

export function allSameDigit(digits: string): boolean {
  for (let index = 1; index < digits.length; index += 1) if (digits[index] !== digits[0]) return false;
  return true;
}

/** Luhn (payment cards): from the right, double every second digit. */
export function luhn(digits: string): boolean {
  let sum = 0;
  let double = false;
  for (let index = digits.length - 1; index >= 0; index -= 1) {
    let value = digit(digits, index);
    if (double) {
      value *= 2;
      if (value > 9) value -= 9;
    }
    sum += value;
    double = !double;
  }
  return sum % 10 === 0;
}

/** NHS number (and CHI, H&C): weights 10..2 on the first nine digits, check = 11 − Σ mod 11 (11 → 0, 10 invalid). */
export function nhsMod11(digits: string): boolean {
  if (digits.length !== 10 || allSameDigit(digits)) return false;
  let sum = 0;
  for (let index = 0; index < 9; index += 1) sum += digit(digits, index) * (10 - index);
  let check = 11 - (sum % 11);
  if (check === 11) check = 0;
  return check !== 10 && check === digit(digits, 9);
}

/** ISO 7064 MOD 11,10 over all but the last digit; the last digit is the check digit. */
export function iso7064Mod11Of10(digits: string): boolean {
  let product = 10;
  for (let index = 0; index < digits.length - 1; index += 1) {
    let sum = (digit(digits, index) + product) % 10;
    if (sum === 0) sum = 10;
    product = (2 * sum) % 11;
  }
  return (11 - product) % 10 === digit(digits, digits.length - 1);
}

/**
 * German tax id (Steuer-ID): 11 digits, no leading zero; in the first ten digits exactly one digit occurs twice or
 * three times (three times never as three neighbours) and every other at most once; ISO 7064 MOD 11,10 check.
 */
export function deSteuerId(digits: string): boolean {
  if (digits.length !== 11 || digits[0] === '0') return false;
  const counts = new Array<number>(10).fill(0);
  for (let index = 0; index < 10; index += 1) counts[digit(digits, index)]! += 1;
  let repeated = 0;
  for (const count of counts) {
    if (count > 3) return false;
    if (count >= 2) repeated += 1;
  }
  if (repeated !== 1) return false;
  for (let index = 2; index < 10; index += 1) {
    if (digits[index] === digits[index - 1] && digits[index] === digits[index - 2]) return false;
  }
  return iso7064Mod11Of10(digits);
}

/** Dutch BSN, the "11-proof": Σ dᵢ·(9,8,7,6,5,4,3,2,−1) ≡ 0 (mod 11), not zero. */
export function nlBsn(digits: string): boolean {
  if (digits.length !== 9 || allSameDigit(digits)) return false;
  let sum = 0;
  for (let index = 0; index < 8; index += 1) sum += digit(digits, index) * (9 - index);
  sum -= digit(digits, 8);
  return sum > 0 && sum % 11 === 0;
}

export function validDate(year: number, month: number, day: number): boolean {
  if (month < 1 || month > 12 || day < 1) return false;
  const days = [
    31,
    year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28,
    31,
    30,
    31,
    30,
    31,
    31,
    30,
    31,
    30,
    31,
  ];
  return day <= days[month - 1]!;
}

/** Polish PESEL: encoded birth date (month +80/+0/+20/+40/+60 by century), weights 1,3,7,9 repeating, mod 10. */
export function plPesel(digits: string): boolean {
  if (digits.length !== 11 || allSameDigit(digits)) return false;
  const weights = [1, 3, 7, 9, 1, 3, 7, 9, 1, 3];
  let sum = 0;
  for (let index = 0; index < 10; index += 1) sum += digit(digits, index) * weights[index]!;
  if ((10 - (sum % 10)) % 10 !== digit(digits, 10)) return false;
  const yy = Number(digits.slice(0, 2));
  const encodedMonth = Number(digits.slice(2, 4));
  const day = Number(digits.slice(4, 6));
  const century = [1900, 2000, 2100, 2200, 1800][Math.floor(encodedMonth / 20)];
  if (century === undefined) return false;
  return validDate(century + yy, encodedMonth % 20, day);
}

/**
 * French NIR (numéro de sécurité sociale) with its key: 13 characters (sex, year, month, department — `2A`/`2B`
 * for Corsica, counted as 19/18 — commune, order) then key = 97 − (number mod 97).
 */
export function frNir(value: string): boolean {
  if (value.length !== 15) return false;
  const sex = value[0]!;
  if (!'123478'.includes(sex)) return false;
  const month = Number(value.slice(3, 5));
  if (!((month >= 1 && month <= 12) || month === 20 || (month >= 30 && month <= 42) || month >= 50)) return false;
  const department = value.slice(5, 7).toUpperCase();
  const body =
    value.slice(0, 5) + (department === '2A' ? '19' : department === '2B' ? '18' : department) + value.slice(7, 13);
  if (!/^\d{13}$/.test(body) || !/^\d{2}$/.test(value.slice(13))) return false;
  const key = Number(value.slice(13));
  // 13 digits stay below 2^53: plain numbers are exact.
  return key >= 1 && key <= 97 && 97 - (Number(body) % 97) === key;
}

const ES_LETTERS = 'TRWAGMYFPDXBNJZSQVHLCKE';

/** Spanish DNI (8 digits) and NIE (X/Y/Z → 0/1/2, then 7 digits): number mod 23 indexes the control letter. */
export function esControlLetter(number: string): string {
  return ES_LETTERS[Number(number) % 23]!;
}

const CF_ODD: Readonly<Record<string, number>> = {
  '0': 1, '1': 0, '2': 5, '3': 7, '4': 9, '5': 13, '6': 15, '7': 17, '8': 19, '9': 21,
  A: 1, B: 0, C: 5, D: 7, E: 9, F: 13, G: 15, H: 17, I: 19, J: 21, K: 2, L: 4, M: 18,
  N: 20, O: 11, P: 3, Q: 6, R: 8, S: 12, T: 14, U: 16, V: 10, W: 22, X: 25, Y: 24, Z: 23,
}; // prettier-ignore

/** Italian codice fiscale (16 characters, upper case): check character from the odd/even tables, mod 26. */
export function itCodiceFiscale(code: string): boolean {
  if (code.length !== 16) return false;
  let sum = 0;
  for (let index = 0; index < 15; index += 1) {
    const character = code[index]!;
    if (index % 2 === 0) {
      const value = CF_ODD[character];
      if (value === undefined) return false;
      sum += value;
    } else {
      const unit = character.charCodeAt(0);
      sum += unit >= 48 && unit <= 57 ? unit - 48 : unit - 65;
    }
  }
  return String.fromCharCode(65 + (sum % 26)) === code[15];
}
