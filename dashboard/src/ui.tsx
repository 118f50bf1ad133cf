import { useEffect, useRef, useState } from 'preact/hooks';
import type { ComponentChildren } from 'preact';

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
  const copy = () => {
    navigator.clipboard.writeText(props.value).then(
      () => setCopied(true),
      () => setCopied(false),
    );
  };
  return (
    <section class="shown-once" data-testid="shown-once" aria-live="polite">
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
  // The keyboard lands in the dialog on the harmless choice, and Escape leaves it.
  useEffect(() => cancel.current?.focus(), []);
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
        onKeyDown={(event) => {
          if (event.key === 'Escape' && !busy) props.onClose();
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
