import { render } from 'preact-render-to-string';
import type { VNode } from 'preact';
import {
  EnvironmentSelect,
  ErrorNote,
  FieldError,
  ListStatus,
  ShownOnce,
  Tabs,
  Timestamp,
  formatGbp,
  parseAmount,
  relativeTime,
  utcTime,
} from '../src/ui';

// The shared components of the dashboard, rendered to HTML as the browser would get them; the browser test
// (test/e2e/dashboard.test.ts) drives the whole app.

describe('Timestamp', () => {
  it('shows an instant relative, exact in the viewer zone, and in UTC on hover', () => {
    const html = render(<Timestamp iso="2026-11-24T11:46:08.000Z" />);
    expect(html).toContain('title="2026-11-24 11:46:08 UTC"');
    expect(html).toContain('<time datetime="2026-11-24T11:46:08.000Z" class="exact">');
  });

  it('says what no instant means', () => {
    expect(render(<Timestamp iso={null} />)).toBe('<span class="muted">never</span>');
    expect(render(<Timestamp iso={null} none="no expiry" />)).toBe('<span class="muted">no expiry</span>');
  });
});

it('relativeTime and utcTime read an instant for people', () => {
  const now = Date.parse('2026-11-24T12:00:00Z');
  expect(relativeTime('2026-11-24T11:57:00Z', now)).toBe('3 minutes ago');
  expect(relativeTime('2026-11-26T12:00:00Z', now)).toBe('in 2 days');
  expect(utcTime('2026-11-24T11:46:08.123Z')).toBe('2026-11-24 11:46:08 UTC');
});

it('ErrorNote shows a message as an alert, and nothing without one', () => {
  expect(render(<ErrorNote message="Key store unavailable" />)).toBe(
    '<p class="error" role="alert">Key store unavailable</p>',
  );
  expect(render(<ErrorNote message={undefined} />)).toBe('');
});

it("FieldError shows the API's refusal beside its own field only", () => {
  const error = { field: 'name', message: 'name: expected at most 200 characters.' };
  expect(render(<FieldError error={error} field="name" />)).toContain('data-field-error="name"');
  expect(render(<FieldError error={error} field="allowed_ips" />)).toBe('');
});

it('ListStatus says "nothing matches" only after a load that succeeded', () => {
  expect(render(<ListStatus loading error={undefined} empty emptyText="No keys" />)).toContain('Loading…');
  expect(render(<ListStatus loading={false} error="failed" empty emptyText="No keys" />)).toBe('');
  expect(render(<ListStatus loading={false} error={undefined} empty emptyText="No keys" />)).toBe(
    '<p class="muted">No keys</p>',
  );
  expect(render(<ListStatus loading={false} error={undefined} empty={false} emptyText="No keys" />)).toBe('');
});

it('ShownOnce shows the secret with its warning and note', () => {
  const html = render(<ShownOnce title="New key" value="gw_live_secret" note="Give it now." onDismiss={() => {}} />);
  expect(html).toContain('<code data-testid="secret-value">gw_live_secret</code>');
  expect(html).toContain('It is shown only once');
  expect(html).toContain('<p class="note">Give it now.</p>');
});

describe('Tabs', () => {
  const tabs = [
    { id: 'keys', label: 'Keys' },
    { id: 'usage', label: 'Usage' },
  ] as const;

  it('marks the selected tab for assistive technology and the keyboard', () => {
    const html = render(<Tabs label="Account" tabs={tabs} selected="usage" onSelect={() => {}} />);
    expect(html).toContain('id="tab-usage" type="button" role="tab" aria-selected="true"');
    expect(html).toContain('id="tab-keys" type="button" role="tab" aria-selected="false"');
    expect(html.match(/tabindex="0"/g)).toHaveLength(1);
  });

  it('selects a tab on click', () => {
    const selected: string[] = [];
    const nav = Tabs({ label: 'Account', tabs, selected: 'keys', onSelect: (id) => selected.push(id) });
    const buttons = nav.props.children as VNode<{ onClick: () => void }>[];
    buttons[1]!.props.onClick();
    expect(selected).toEqual(['usage']);
  });
});

describe('EnvironmentSelect', () => {
  it('offers the key environments, the current one selected', () => {
    const html = render(<EnvironmentSelect value="test" onChange={() => {}} />);
    expect(html).toBe('<select><option value="live">live</option><option selected value="test">test</option></select>');
  });

  it('gives back only an environment, live for anything else', () => {
    const chosen: string[] = [];
    const select = EnvironmentSelect({ value: 'live', onChange: (value) => chosen.push(value) });
    const onChange = (select.props as { onChange: (event: { currentTarget: { value: string } }) => void }).onChange;
    onChange({ currentTarget: { value: 'test' } });
    onChange({ currentTarget: { value: 'staging' } });
    expect(chosen).toEqual(['test', 'live']);
  });
});

it('formatGbp shows money to four decimals', () => {
  expect(formatGbp(0.00012)).toBe('£0.0001');
  expect(formatGbp(12.5)).toBe('£12.5000');
});

it.each([
  ['50k', { value: 50_000 }],
  ['1,000,000', { value: 1_000_000 }],
  ['2m', { value: 2_000_000 }],
  ['', { value: null }],
  ['0', { error: 'Enter a whole number of at least 1.' }],
  ['1.5', { error: 'Enter a whole number of at least 1.' }],
  ['lots', { error: 'Enter a whole number, such as 50000 or 50k.' }],
])('parseAmount reads %j', (text, parsed) => {
  expect(parseAmount(text)).toEqual(parsed);
});
