import { err, malformedReplyError, ok } from '@gw/errors';
import type { RateLimitWindow, Result } from '@gw/errors';
import type { commonv1 } from '@gw/proto';

/** Told of each reply a client could not decode: which service and which field (for the log, never the caller). */
export type MalformedReplies = (callee: string, field: string) => void;

/** Decodes the replies of one service: a missing or unreadable field is a catalogued error, reported once. */
export class ReplyDecoder {
  constructor(
    private readonly callee: string,
    private readonly report: MalformedReplies,
  ) {}

  malformed(field: string): Result<never> {
    this.report(this.callee, field);
    return err(malformedReplyError());
  }

  /** A message field the reply must carry. */
  present<T>(value: T | undefined, field: string): Result<T> {
    return value === undefined ? this.malformed(field) : ok(value);
  }

  /** A count the reply must carry as a safe, non-negative integer. */
  count(value: bigint, field: string): Result<number> {
    const number = Number(value);
    return Number.isSafeInteger(number) && number >= 0 ? ok(number) : this.malformed(field);
  }

  /** A non-empty id. */
  id(value: string, field: string): Result<string> {
    return value === '' ? this.malformed(field) : ok(value);
  }

  /** A per-minute window: present, with counts in range. */
  window(message: commonv1.RateLimitWindow | undefined, field = 'window'): Result<RateLimitWindow> {
    if (message === undefined) return this.malformed(field);
    const limit = this.count(message.limit, `${field}.limit`);
    if (!limit.ok) return limit;
    const remaining = this.count(message.remaining, `${field}.remaining`);
    if (!remaining.ok) return remaining;
    const reset = this.count(message.resetUnixMs, `${field}.reset_unix_ms`);
    if (!reset.ok) return reset;
    return ok({ limit: limit.value, remaining: remaining.value, resetUnixMs: reset.value });
  }
}
