import type { GatewayError, Result } from '@gw/errors';
import { Counter } from '@gw/telemetry';
import type { Logger, Registry } from '@gw/telemetry';
import type { MeteringClient } from '../clients/metering';
import type { RefusalLine } from '../clients/metering';
import type { VerifiedKey } from '../domain/key';
import type { RequestScope } from '../domain/request-scope';
import type { KeyVerifier } from '../domain/verified-keys';

export interface RefusalCountsOptions {
  /** Sends one flush to metering. */
  send(lines: RefusalLine[]): Promise<Result<unknown>>;
  /** Lines kept between flushes at most (key × day × reason); a flood of refusals of new keys is not. */
  maxLines: number;
  onFlushFailure(error: GatewayError, lines: number): void;
  /** Refusals dropped because the table was full. */
  onDropped(count: number): void;
  now?: () => Date;
}

/**
 * Counts requests refused after their key was verified, per key, UTC day and reason, in memory, and
 * hands the counts to metering every flush: a flood of refusals costs a map increment each, never a
 * write. A flush that fails is kept and added to the next one.
 */
export class RefusalCounts {
  private lines = new Map<string, RefusalLine>();
  private readonly keysOfRequests = new WeakMap<RequestScope, VerifiedKey>();
  private timer: NodeJS.Timeout | undefined;
  private readonly now: () => Date;

  constructor(private readonly options: RefusalCountsOptions) {
    this.now = options.now ?? (() => new Date());
  }

  /** The same verifier, remembering which key each request was verified as (nothing else is kept). */
  watch(verifier: KeyVerifier): KeyVerifier {
    return {
      verify: async (presentedKey, sourceAddress, scope) => {
        const verified = await verifier.verify(presentedKey, sourceAddress, scope);
        if (verified.ok) this.keysOfRequests.set(scope, verified.value);
        return verified;
      },
    };
  }

  /** A request answered with an error: counted against its key when one was verified (never a 401). */
  refused(scope: RequestScope | undefined, error: GatewayError): void {
    const key = scope && this.keysOfRequests.get(scope);
    if (!key) return;
    const reason = error.reason ? `${error.type}.${error.reason}` : error.type;
    this.add({
      accountId: key.accountId,
      keyId: key.keyId,
      environment: key.environment,
      day: this.now().toISOString().slice(0, 10),
      reason,
      refusals: 1n,
    });
  }

  start(intervalMs: number): void {
    this.timer = setInterval(() => void this.flush(), intervalMs);
    this.timer.unref();
  }

  /** Stops the timer and sends what is counted. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  async flush(): Promise<void> {
    if (this.lines.size === 0) return;
    const sending = [...this.lines.values()];
    this.lines = new Map();
    const sent = await this.options.send(sending);
    if (sent.ok) return;
    this.options.onFlushFailure(sent.error, sending.length);
    for (const line of sending) this.add(line);
  }

  private add(line: RefusalLine): void {
    const id = `${line.accountId} ${line.keyId} ${line.environment} ${line.day} ${line.reason}`;
    const known = this.lines.get(id);
    if (known) known.refusals = (known.refusals as bigint) + (line.refusals as bigint);
    else if (this.lines.size < this.options.maxLines) this.lines.set(id, { ...line });
    else this.options.onDropped(Number(line.refusals));
  }
}

/** Lines kept between flushes: far more keys than refuse in ten seconds, a few MB at most. */
const maxLines = 50_000;

/** The refusal counts of this ingress, flushed to metering. */
export function refusalCounts(
  metering: Pick<MeteringClient, 'recordRefusals'>,
  logger: Logger,
  registry: Registry,
): RefusalCounts {
  const dropped = new Counter({
    name: 'gateway_refusal_counts_dropped_total',
    help: 'Refusals not counted per key because the in-memory table between two flushes was full.',
    registers: [registry],
  });
  return new RefusalCounts({
    send: (counts) => metering.recordRefusals(counts),
    maxLines,
    onFlushFailure: (error, lines) =>
      logger.warn({ error_type: error.type, lines }, 'refusal counts not sent to metering; kept for the next flush'),
    onDropped: (count) => dropped.inc(count),
  });
}
