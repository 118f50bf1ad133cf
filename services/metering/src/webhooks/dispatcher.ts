import type { Pool } from '@gw/db';
import type { Logger } from '@gw/telemetry';
import { Counter } from '@gw/telemetry';
import type { Registry } from '@gw/telemetry';
import { writeExpiringKeyEvents } from './key-expiry';
import { claimDue, nextAttemptAt, recordAttempt } from './outbox';
import type { AttemptResult, ClaimedMessage } from './outbox';
import type { Sender, SendOutcome } from './sender';
import { signedHeaders } from './signing';
import { parseEndpointUrl, vetTarget } from './targets';
import type { TargetPolicy } from './targets';

export interface DispatcherOptions {
  pollMs: number;
  concurrency: number;
  timeoutMs: number;
  backoff: { baseMs: number; maxMs: number };
  /** Trusted CAs for endpoints beside the system's (PEM), or undefined. */
  ca: string[] | undefined;
  /** How often keys about to expire are looked for (key.expiring). */
  keyExpiryScanMs: number;
  retryWindowMs: number;
}

export interface DispatcherDeps {
  pool: Pool;
  logger: Logger;
  registry: Registry;
  policy: TargetPolicy;
  send: Sender;
  options: DispatcherOptions;
  now?: () => number;
}

/**
 * The one deliverer of the outbox: claims due messages, signs and sends each, and logs every attempt.
 * It runs beside the usage consumer, never in a request's path: a slow or failing endpoint delays only
 * its own messages.
 */
export class WebhookDispatcher {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private current: Promise<void> = Promise.resolve();
  private readonly deliveries: Counter<'result'>;
  private readonly now: () => number;
  private lastExpiryScan = -Infinity;

  constructor(private readonly deps: DispatcherDeps) {
    this.now = deps.now ?? Date.now;
    this.deliveries = new Counter({
      name: 'gateway_webhook_attempts_total',
      help: 'Webhook delivery attempts, by what became of their message: delivered, retry (later) or failed (given up).',
      labelNames: ['result'],
      registers: [deps.registry],
    });
  }

  start(): void {
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.current;
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.current = this.round().then(
        (claimedAll) => this.schedule(claimedAll ? 0 : this.deps.options.pollMs),
        (error: unknown) => {
          this.deps.logger.error({ err: error }, 'webhook dispatch failed');
          this.schedule(this.deps.options.pollMs);
        },
      );
    }, delayMs);
  }

  /** One round: what is due, up to the concurrency, delivered at once. True when more may be waiting. */
  async round(): Promise<boolean> {
    const { options } = this.deps;
    // Held past an attempt's longest time, so that no other round takes a message being delivered.
    const leaseMs = options.timeoutMs * 2 + 5_000;
    if (this.now() - this.lastExpiryScan >= options.keyExpiryScanMs) {
      this.lastExpiryScan = this.now();
      await writeExpiringKeyEvents(this.deps.pool, options.retryWindowMs);
    }
    const claimed = await claimDue(this.deps.pool, options.concurrency, leaseMs);
    await Promise.all(claimed.map((message) => this.deliver(message)));
    return claimed.length === options.concurrency;
  }

  private async deliver(message: ClaimedMessage): Promise<void> {
    const startedAt = this.now();
    const outcome = await attemptDelivery(message, {
      policy: this.deps.policy,
      send: this.deps.send,
      ca: this.deps.options.ca,
      timeoutMs: this.deps.options.timeoutMs,
      now: this.now,
    });
    const durationMs = this.now() - startedAt;
    const delivered = 'statusCode' in outcome && outcome.statusCode >= 200 && outcome.statusCode < 300;
    let result: AttemptResult = { status: 'delivered' };
    if (!delivered) {
      const next = message.endpointDeleted
        ? undefined
        : nextAttemptAt(message.attempts, this.now(), message.retryUntil, this.deps.options.backoff);
      result = next ? { status: 'pending', nextAttemptAt: next } : { status: 'failed' };
    }
    await recordAttempt(
      this.deps.pool,
      message.id,
      {
        statusCode: 'statusCode' in outcome ? outcome.statusCode : null,
        error: 'error' in outcome ? outcome.error : null,
        durationMs,
      },
      result,
    );
    this.deliveries.inc({ result: result.status === 'pending' ? 'retry' : result.status });
    this.deps.logger.info(
      {
        message_id: message.id,
        endpoint_id: message.endpointId,
        account_id: message.accountId,
        event_type: message.eventType,
        attempt: message.attempts,
        status_code: 'statusCode' in outcome ? outcome.statusCode : undefined,
        error: 'error' in outcome ? outcome.error : undefined,
        result: result.status,
        duration_ms: durationMs,
      },
      'webhook attempt',
    );
  }
}

/**
 * One attempt at a message: vets the endpoint's address again (names change, and a refused one is never
 * connected to), then signs and sends.
 */
export async function attemptDelivery(
  message: Pick<ClaimedMessage, 'id' | 'body' | 'url' | 'secrets' | 'endpointDeleted'>,
  how: { policy: TargetPolicy; send: Sender; ca: string[] | undefined; timeoutMs: number; now: () => number },
): Promise<SendOutcome> {
  if (message.endpointDeleted) return { error: 'the endpoint was deleted' };
  const url = parseEndpointUrl(message.url);
  if (!url.ok) return { error: url.error.message };
  const target = await vetTarget(url.value, how.policy);
  if (!target.ok) return { error: target.error.message };
  const headers = signedHeaders(message.secrets, message.id, Math.floor(how.now() / 1000), message.body);
  return how.send(target.value, { ...headers }, message.body, { ca: how.ca, timeoutMs: how.timeoutMs });
}
