import type { Account, ApiKey } from '../src/client';
import {
  renderAccount,
  renderCreatedKey,
  renderFields,
  renderJson,
  renderKeyTable,
  renderTable,
  showValue,
  withoutKeyValue,
} from '../src/output';
import { sampleAccount, sampleKey, sampleKeyValue } from './fake-admin-api';

const account = sampleAccount as Account;
const key = sampleKey as ApiKey;

describe('renderTable', () => {
  it('pads every column but the last to its widest cell, two spaces apart', () => {
    const rows = [
      { a: 'x', b: 'long value', c: 1 },
      { a: 'wider', b: null, c: 22 },
    ];
    const text = renderTable(
      [
        { heading: 'A', cell: (row: (typeof rows)[number]) => row.a },
        { heading: 'B', cell: (row: (typeof rows)[number]) => row.b },
        { heading: 'C', cell: (row: (typeof rows)[number]) => row.c },
      ],
      rows,
    );
    expect(text).toBe('A      B           C\nx      long value  1\nwider  -           22\n');
  });

  it('never ends a line with spaces', () => {
    const text = renderTable([{ heading: 'NAME', cell: (row: { name: string }) => row.name }], [{ name: 'a' }]);
    expect(text).toBe('NAME\na\n');
  });
});

describe('showValue', () => {
  it('shows null as -, lists comma-separated, and replaces control characters', () => {
    expect(showValue(null)).toBe('-');
    expect(showValue(['a', 'b'])).toBe('a,b');
    expect(showValue([])).toBe('-');
    expect(showValue(true)).toBe('true');
    expect(showValue('evil\u001b[2Jname\n')).toBe('evil?[2Jname?');
  });
});

describe('renderFields', () => {
  it('aligns names', () => {
    expect(
      renderFields([
        ['id', 'x'],
        ['display_prefix', 'gw_live'],
        ['none', null],
      ]),
    ).toBe('id              x\ndisplay_prefix  gw_live\nnone            -\n');
  });
});

describe('renderJson', () => {
  it('is one line of JSON ending in a newline', () => {
    const text = renderJson({ data: [account] });
    expect(text.endsWith('\n')).toBe(true);
    expect(text.slice(0, -1)).not.toContain('\n');
    expect(JSON.parse(text)).toEqual({ data: [account] });
  });
});

describe('accounts and keys', () => {
  it('shows an account with its limits, null limits as the plan default', () => {
    const text = renderAccount({ ...account, limits: { ...account.limits, concurrency: 4, overage: false } });
    expect(text).toContain('concurrency          4\n');
    expect(text).toContain('overage              off\n');
    expect(text).toContain('monthly_tokens       (plan default)\n');
  });

  it('never shows a key value in a key table', () => {
    const withValue = { ...key, key: sampleKeyValue };
    expect(renderKeyTable([withoutKeyValue(withValue)])).not.toContain(sampleKeyValue);
    expect(renderKeyTable([withValue])).not.toContain(sampleKeyValue);
    expect(withoutKeyValue(withValue)).toEqual(key);
    expect(renderKeyTable([])).toBe('No keys.\n');
  });

  it('shows a created key once, with the warning', () => {
    const text = renderCreatedKey({ ...key, key: sampleKeyValue });
    expect(text.split(sampleKeyValue)).toHaveLength(2);
    expect(text).toMatch(/It will not be shown again/);
  });
});
