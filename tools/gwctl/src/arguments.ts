import { InvalidArgumentError } from 'commander';

/**
 * Option value parsers. They throw commander's InvalidArgumentError, which commander turns into
 * "error: option '--x <n>' argument 'y' is invalid. …" and a usage exit.
 */

/** A positive integer written in decimal digits: no signs, exponents, hex or fractions. */
export function parsePositiveInteger(value: string): number {
  const number = /^[0-9]+$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(number) || number < 1) {
    throw new InvalidArgumentError('Expected a positive integer.');
  }
  return number;
}

/** `a, b,c` → `['a', 'b', 'c']`; an empty item is refused as a likely typo. */
export function parseList(value: string): string[] {
  const items = value.split(',').map((item) => item.trim());
  if (items.some((item) => item === '')) {
    throw new InvalidArgumentError('Expected a comma-separated list without empty items.');
  }
  return items;
}

const timestampPattern =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:(Z)|([+-])(\d{2}):?(\d{2}))$/i;

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

function daysInMonth(year: number, month: number): number {
  return [31, isLeapYear(year) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1] ?? 0;
}

/**
 * An ISO 8601 date and time with a time zone (`Z` or an offset), returned in UTC as
 * `YYYY-MM-DDTHH:mm:ss.sssZ`. Without a zone the instant would depend on the machine's clock settings,
 * so it is refused; impossible dates such as 2026-02-30 are refused rather than rolled over.
 */
export function parseTimestamp(value: string): string {
  const invalid = new InvalidArgumentError(
    'Expected an ISO 8601 timestamp with a time zone, e.g. 2027-01-31T23:59:59Z or 2027-01-31T23:59:59+01:00.',
  );
  const match = timestampPattern.exec(value.trim());
  if (!match) throw invalid;
  const [year, month, day, hour, minute] = match.slice(1, 6).map(Number) as [number, number, number, number, number];
  const second = Number(match[6] ?? '0');
  const millisecond = Math.floor(Number(`0.${match[7] ?? '0'}`) * 1000);
  const offsetSign = match[9] === '-' ? -1 : 1;
  const offsetHours = match[8] ? 0 : Number(match[10]);
  const offsetMinutes = match[8] ? 0 : Number(match[11]);
  if (
    month < 1 ||
    month > 12 ||
    day < 1 ||
    day > daysInMonth(year, month) ||
    hour > 23 ||
    minute > 59 ||
    second > 59 ||
    offsetHours > 23 ||
    offsetMinutes > 59
  ) {
    throw invalid;
  }
  const instant = new Date(0);
  instant.setUTCFullYear(year, month - 1, day);
  instant.setUTCHours(hour, minute, second, millisecond);
  return new Date(instant.getTime() - offsetSign * (offsetHours * 60 + offsetMinutes) * 60_000).toISOString();
}
