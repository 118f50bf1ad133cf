import { useEffect, useRef, useState } from 'preact/hooks';
import type { ComponentChildren } from 'preact';
import { isKeyEnvironment, KeyEnvironment, keyEnvironments } from '@gw/vocabulary';

const relative = new Intl.RelativeTimeFormat('en', { numeric: 'auto' });
const steps: [Intl.RelativeTimeFormatUnit, number][] = [
  ['year', 365 * 24 * 3600],
  ['month', 30 * 24 * 3600],
  ['day', 24 * 3600],
  ['hour', 3600],
  ['minute', 60],
  ['second', 1],
];

/** "3 minutes ago" / "in 2 days" for an ISO timestamp. */
export function relativeTime(iso: string, now = Date.now()): string {
  const seconds = Math.round((Date.parse(iso) - now) / 1000);
  const [unit, size] = steps.find(([, size]) => Math.abs(seconds) >= size) ?? ['second', 1];
  return relative.format(Math.round(seconds / size), unit);
}

const localParts = new Intl.DateTimeFormat('en-GB', {
  year: 'numeric',
  month: '2-digit',
  day: '2-digit',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
  hourCycle: 'h23',
  timeZoneName: 'shortOffset',
});

/** "2026-11-24 17:16:08 GMT+5:30": the instant in the viewer's time zone, which it names. */
export function localTime(iso: string): string {
  const part = Object.fromEntries(
    localParts.formatToParts(new Date(iso)).map(({ type, value }) => [type, value] as const),
  );
  return `${part.year}-${part.month}-${part.day} ${part.hour}:${part.minute}:${part.second} ${part.timeZoneName}`;
}

/** "2026-11-24 11:46:08 UTC". */
export const utcTime = (iso: string) =>
  new Date(iso)
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d+Z$/, ' UTC');

/**
 * A time shown both ways: relative for reading, exact in the viewer's zone for checking, and in UTC on hover
 * (the zone the API, the logs and the billing periods use).
 */
export function Timestamp({ iso, none = 'never' }: { iso: string | null; none?: string }) {
  if (iso === null) return <span class="muted">{none}</span>;
  return (
    <span class="timestamp" title={utcTime(iso)}>
      <span>{relativeTime(iso)}</span>
      <time dateTime={iso} class="exact">
        {localTime(iso)}
      </time>
    </span>
  );
}

export const formatTokens = (value: number) => value.toLocaleString('en-GB');
export const formatGbp = (value: number) => `£${value.toFixed(4)}`;

export function ErrorNote({ message }: { message: string | undefined }) {
  return message ? (
    <p class="error" role="alert">
      {message}
    </p>
  ) : null;
}

/** The admin API's refusal of one field, shown beside that field (inside its label). */
export function FieldError(props: { error: { field: string; message: string } | undefined; field: string }) {
  return props.error?.field === props.field ? (
    <span class="field-error" data-field-error={props.field} role="alert">
      {props.error.message}
    </span>
  ) : null;
}

/**
 * A wide table scrolls sideways inside the page on a narrow screen; the region takes the focus so that a
 * keyboard can scroll it too.
 */
export function TableScroll(props: { label: string; children: ComponentChildren }) {
  return (
    <div class="table-scroll" role="region" aria-label={props.label} tabIndex={0}>
      {props.children}
    </div>
  );
}

/** A secret shown once, at its creation: copied or lost. */
export function ShownOnce(props: { title: string; value: string; note?: string; onDismiss: () => void }) {
  const [copied, setCopied] = useState(false);
  const section = useRef<HTMLElement>(null);
  // However long the page, the secret comes into view and takes the focus: it is the one thing to act on.
  useEffect(() => {
    section.current?.scrollIntoView({ block: 'center' });
    section.current?.focus({ preventScroll: true });
  }, [props.value]);
  const copy = () => {
    navigator.clipboard.writeText(props.value).then(
      () => setCopied(true),
      () => setCopied(false),
    );
  };
  return (
    <section class="shown-once" data-testid="shown-once" aria-live="polite" tabIndex={-1} ref={section}>
      <h3>{props.title}</h3>
      <p class="warning">
        Copy this value now. It is shown only once and cannot be shown again; the gateway keeps only a hash of it.
      </p>
      {props.note ? <p class="note">{props.note}</p> : null}
      <div class="secret">
        <code data-testid="secret-value">{props.value}</code>
        <button type="button" onClick={copy}>
          {copied ? 'Copied' : 'Copy'}
        </button>
      </div>
      <button type="button" class="secondary" onClick={props.onDismiss}>
        I have copied it
      </button>
    </section>
  );
}

export interface Confirmation {
  message: ComponentChildren;
  action: string;
  run: () => Promise<void>;
}

/** A modal question before a change that cannot be taken back lightly. */
export function ConfirmDialog(props: { confirmation: Confirmation; onClose: () => void }) {
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const cancel = useRef<HTMLButtonElement>(null);
  const dialog = useRef<HTMLDivElement>(null);
  // The keyboard lands in the dialog on the harmless choice, and Escape leaves it. While it is open the focus
  // stays inside: Tab cycles through its buttons, and a focus that lands elsewhere is brought back, so that no
  // key press acts on the page behind it.
  useEffect(() => {
    const opener = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    cancel.current?.focus();
    const keepInside = (event: FocusEvent) => {
      if (dialog.current && event.target instanceof Node && !dialog.current.contains(event.target)) {
        cancel.current?.focus();
      }
    };
    document.addEventListener('focusin', keepInside);
    return () => {
      document.removeEventListener('focusin', keepInside);
      if (opener?.isConnected) opener.focus();
    };
  }, []);
  const trapTab = (event: KeyboardEvent) => {
    if (event.key !== 'Tab' || !dialog.current) return;
    const focusable = [...dialog.current.querySelectorAll<HTMLElement>('button:not([disabled]), [href], input')];
    if (focusable.length === 0) return;
    const first = focusable[0]!;
    const last = focusable[focusable.length - 1]!;
    if (event.shiftKey && document.activeElement === first) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && document.activeElement === last) {
      event.preventDefault();
      first.focus();
    }
  };
  const confirm = () => {
    setBusy(true);
    props.confirmation.run().then(props.onClose, (failure: Error) => {
      setBusy(false);
      setError(failure.message);
    });
  };
  return (
    <div class="overlay">
      <div
        class="dialog"
        role="dialog"
        aria-modal="true"
        aria-label={props.confirmation.action}
        data-testid="confirm"
        ref={dialog}
        onKeyDown={(event) => {
          if (event.key === 'Escape' && !busy) props.onClose();
          trapTab(event);
        }}
      >
        <p>{props.confirmation.message}</p>
        <ErrorNote message={error} />
        <div class="actions">
          <button type="button" class="danger" disabled={busy} onClick={confirm}>
            {props.confirmation.action}
          </button>
          <button type="button" class="secondary" disabled={busy} onClick={props.onClose} ref={cancel}>
            Cancel
          </button>
        </div>
      </div>
    </div>
  );
}

/** Tabs that say which is selected (role tab, aria-selected) and move with the arrow keys. */
export function Tabs<T extends string>(props: {
  label: string;
  tabs: readonly { id: T; label: string }[];
  selected: T;
  onSelect: (id: T) => void;
}) {
  const move = (event: KeyboardEvent, index: number) => {
    const step = event.key === 'ArrowRight' ? 1 : event.key === 'ArrowLeft' ? -1 : 0;
    if (step === 0) return;
    event.preventDefault();
    const next = props.tabs[(index + step + props.tabs.length) % props.tabs.length]!;
    props.onSelect(next.id);
    document.getElementById(`tab-${next.id}`)?.focus();
  };
  return (
    <nav class="tabs" role="tablist" aria-label={props.label}>
      {props.tabs.map((tab, index) => (
        <button
          key={tab.id}
          id={`tab-${tab.id}`}
          type="button"
          role="tab"
          aria-selected={tab.id === props.selected}
          aria-controls={`panel-${tab.id}`}
          tabIndex={tab.id === props.selected ? 0 : -1}
          class={tab.id === props.selected ? 'selected' : ''}
          onClick={() => props.onSelect(tab.id)}
          onKeyDown={(event) => move(event, index)}
        >
          {tab.label}
        </button>
      ))}
    </nav>
  );
}

/**
 * The state of a list loaded from the API: loading, failed (with what was shown before, marked stale),
 * or loaded. "Nothing matches" is said only when a load succeeded with nothing in it.
 */
export function ListStatus(props: { loading: boolean; error: string | undefined; empty: boolean; emptyText: string }) {
  if (props.loading)
    return (
      <p class="muted" role="status">
        Loading…
      </p>
    );
  if (props.error) return null;
  return props.empty ? <p class="muted">{props.emptyText}</p> : null;
}

/** A whole number as typed: digits with optional separators, or a k / m suffix (50k = 50,000). */
export function parseAmount(text: string): { value: number | null } | { error: string } {
  const trimmed = text
    .trim()
    .toLowerCase()
    .replace(/[\s,_]/g, '');
  if (trimmed === '') return { value: null };
  const match = /^(\d+(?:\.\d+)?)([km]?)$/.exec(trimmed);
  if (!match) return { error: 'Enter a whole number, such as 50000 or 50k.' };
  const value = Number(match[1]) * (match[2] === 'k' ? 1_000 : match[2] === 'm' ? 1_000_000 : 1);
  if (!Number.isSafeInteger(value) || value < 1) return { error: 'Enter a whole number of at least 1.' };
  return { value };
}

/** The usage panels' menu of key environments. */
export function EnvironmentSelect(props: { value: KeyEnvironment; onChange: (value: KeyEnvironment) => void }) {
  return (
    <select
      value={props.value}
      onChange={(event) => {
        const chosen = event.currentTarget.value;
        props.onChange(isKeyEnvironment(chosen) ? chosen : KeyEnvironment.live);
      }}
    >
      {keyEnvironments.map((environment) => (
        <option key={environment} value={environment}>
          {environment}
        </option>
      ))}
    </select>
  );
}
