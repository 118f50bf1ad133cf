import { InvalidArgumentError } from 'commander';
import { parseList, parsePositiveInteger, parseTimestamp } from '../src/arguments';

describe('parsePositiveInteger', () => {
  it.each([
    ['1', 1],
    ['120', 120],
    ['007', 7],
    ['9007199254740991', Number.MAX_SAFE_INTEGER],
  ])('%s → %d', (text, value) => {
    expect(parsePositiveInteger(text)).toBe(value);
  });

  it.each(['0', '-1', '+1', '1.5', '1e3', '0x10', '', ' 1', 'ten', '9007199254740993'])('refuses %p', (text) => {
    expect(() => parsePositiveInteger(text)).toThrow(InvalidArgumentError);
  });
});

describe('parseList', () => {
  it('splits on commas and trims', () => {
    expect(parseList(' a, b ,c')).toEqual(['a', 'b', 'c']);
    expect(parseList('only')).toEqual(['only']);
  });

  it.each(['', 'a,', ',a', 'a,,b', ' , '])('refuses empty items in %p', (text) => {
    expect(() => parseList(text)).toThrow(InvalidArgumentError);
  });
});

describe('parseTimestamp', () => {
  it.each([
    ['2027-01-31T23:59:59Z', '2027-01-31T23:59:59.000Z'],
    ['2027-01-31T23:59Z', '2027-01-31T23:59:00.000Z'],
    ['2027-01-31T23:59:59.5z', '2027-01-31T23:59:59.500Z'],
    ['2027-01-31T23:59:59.123456789Z', '2027-01-31T23:59:59.123Z'],
    ['2027-02-01T00:30:00+01:00', '2027-01-31T23:30:00.000Z'],
    ['2027-01-31T20:00:00-0530', '2027-02-01T01:30:00.000Z'],
    ['2028-02-29T12:00:00Z', '2028-02-29T12:00:00.000Z'],
  ])('%s → %s', (text, iso) => {
    expect(parseTimestamp(text)).toBe(iso);
  });

  it.each([
    '2027-01-31',
    '2027-01-31T23:59:59',
    '2027-01-31 23:59:59Z',
    '2027-02-29T00:00:00Z',
    '2027-13-01T00:00:00Z',
    '2027-04-31T00:00:00Z',
    '2027-01-31T24:00:00Z',
    '2027-01-31T23:60:00Z',
    '2027-01-31T23:59:60Z',
    '2027-01-31T23:59:59+25:00',
    '1738368000',
    'tomorrow',
  ])('refuses %p', (text) => {
    expect(() => parseTimestamp(text)).toThrow(InvalidArgumentError);
  });
});
