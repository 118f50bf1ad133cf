import { usageQuery } from '@gw/admin-api';
import { csvField, csvText } from '../src/admin/csv';
import { parseQuery } from '../src/admin/input';
import { usageWindow } from '../src/admin/key-usage';

describe('csvField', () => {
  it('quotes separators and quotes, and makes a formula-looking text inert', () => {
    expect(csvField('ci')).toBe('ci');
    expect(csvField(12)).toBe('12');
    expect(csvField('a,b')).toBe('"a,b"');
    expect(csvField('say "hi"')).toBe('"say ""hi"""');
    expect(csvField('line\nbreak')).toBe('"line\nbreak"');
    for (const text of ['=1+1', '+1', '-1', '@SUM(A1)', '\tx']) expect(csvField(text)).toBe(`'${text}`);
    expect(csvField('=HYPERLINK("x")')).toBe(`"'=HYPERLINK(""x"")"`);
  });

  it('writes a header and rows with CRLF line ends', () => {
    expect(csvText(['a', 'b'], [['x', 1]])).toBe('a,b\r\nx,1\r\n');
  });
});

describe('usageWindow', () => {
  const now = new Date('2026-11-28T10:00:00Z');
  it('defaults to the current month', () => {
    expect(usageWindow({ environment: 'live' }, now)).toEqual({
      start: new Date('2026-11-01T00:00:00Z'),
      end: new Date('2026-12-01T00:00:00Z'),
      environment: 'live',
    });
  });
  it('takes a month and an environment', () => {
    expect(usageWindow({ period: '2025-12', environment: 'test' }, now)).toEqual({
      start: new Date('2025-12-01T00:00:00Z'),
      end: new Date('2026-01-01T00:00:00Z'),
      environment: 'test',
    });
  });
});

describe("the usage routes' query", () => {
  it.each([['2025-13'], ['2025-1'], ['2025-01-01'], [['2025-01', '2025-02']]])('refuses the period %p', (period) => {
    const parsed = parseQuery(usageQuery, { period });
    expect(parsed.ok || parsed.error.message).toMatch(/^period:/);
  });
  it('refuses an unknown environment or format, naming it', () => {
    expect(parseQuery(usageQuery, { environment: 'prod' })).toEqual({
      ok: false,
      error: expect.objectContaining({ message: 'environment: expected "live" or "test".' }),
    });
    expect(parseQuery(usageQuery, { format: 'xml' })).toEqual({
      ok: false,
      error: expect.objectContaining({ message: 'format: expected "json" or "csv".' }),
    });
  });
});
