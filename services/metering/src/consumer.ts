import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Context, Link } from '@opentelemetry/api';
import type { Pool } from '@gw/db';
import type { MessageChunk } from '@gw/kafka';
import { contextOfTraceparent, traceLogFields, tracingActive } from '@gw/telemetry';
import type { Logger } from '@gw/telemetry';
import type { MeteringMetrics } from './metrics';
import type { PriceList } from './pricing';
import { decodeUsageRow } from './usage-rows';
import type { UsageRow } from './usage-rows';
import { recordUsage } from './usage-store';
import type { UsageAlerts } from './webhooks/usage-alerts';

export interface UsageConsumerDeps {
  pool: Pool;
  logger: Logger;
  metrics: MeteringMetrics;
  prices: PriceList;
  /** Writes the webhook events a chunk raises (thresholds, ceiling) in the chunk's transaction. */
  alerts?: UsageAlerts;
}

const tracer = trace.getTracer('@gw/metering');

/** Links to the spans that produced a chunk's messages: the requests whose usage the chunk stores. */
function producerLinks(chunk: MessageChunk): Link[] {
  const links: Link[] = [];
  for (const message of chunk.messages) {
    const spanContext = trace.getSpanContext(contextOfTraceparent(message.traceparent));
    if (spanContext !== undefined) links.push({ context: spanContext });
  }
  return links;
}

/**
 * Handles one chunk in a span of its own (a consumer span linked to every producing span: a chunk
 * serves many requests, so it is no request's child), then stores it (`storeUsageChunk`).
 */
export function usageChunkHandler(deps: UsageConsumerDeps): (chunk: MessageChunk) => Promise<void> {
  const store = storeUsageChunk(deps);
  return async (chunk) => {
    if (!tracingActive()) return store(chunk, undefined);
    const span = tracer.startSpan('gateway.usage.v1 process', {
      kind: SpanKind.CONSUMER,
      links: producerLinks(chunk),
      attributes: {
        'messaging.system': 'kafka',
        'messaging.operation.type': 'process',
        'messaging.destination.name': chunk.topic,
        'messaging.destination.partition.id': String(chunk.partition),
        'messaging.batch.message_count': chunk.messages.length,
      },
    });
    try {
      // The chunk's log lines carry the span's ids.
      await store(chunk, trace.setSpan(ROOT_CONTEXT, span));
    } catch (error) {
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw error;
    } finally {
      span.end();
    }
  };
}

/**
 * Handles one chunk of the usage topic: decodes each message, stores the chunk in one transaction.
 * A message that is not a storable UsageEvent is logged (ids only) and skipped, so it can never
 * block its partition; a failure to store throws, and the chunk is delivered again. An event the
 * configuration cannot price (unknown model or plan) is stored at cost 0, never dropped, and logged.
 */
function storeUsageChunk(
  deps: UsageConsumerDeps,
): (chunk: MessageChunk, traceContext: Context | undefined) => Promise<void> {
  return async (chunk, traceContext) => {
    const traceFields = traceLogFields(traceContext);
    const stopTimer = deps.metrics.batchSeconds.startTimer();
    const rows: UsageRow[] = [];
    for (const message of chunk.messages) {
      const decoded = decodeUsageRow(message.value);
      if (decoded.ok) {
        rows.push(decoded.value);
        if (decoded.value.capped) {
          deps.metrics.usageCapped.inc();
          deps.logger.warn(
            { ...traceFields, event_id: decoded.value.eventId, account_id: decoded.value.accountId },
            'usage event with an implausible token count, stored capped',
          );
        }
        continue;
      }
      deps.metrics.eventsSkipped.inc();
      deps.logger.warn(
        {
          ...traceFields,
          topic: chunk.topic,
          partition: chunk.partition,
          offset: message.offset,
          event_id: decoded.error.eventId,
          account_id: decoded.error.accountId,
          reason: decoded.error.reason,
        },
        'usage message skipped',
      );
    }
    const recorded = await recordUsage(deps.pool, deps.prices, { rows }, deps.alerts);
    stopTimer();
    deps.metrics.consumerLag.set(
      { partition: String(chunk.partition) },
      Math.max(0, Number(BigInt(chunk.highWatermark) - BigInt(chunk.nextOffset))),
    );
    for (const row of rows) {
      const endedAt = row.endedAt.getTime();
      if (endedAt > deps.metrics.newestAppliedEvent.endedAtUnixMs)
        deps.metrics.newestAppliedEvent.endedAtUnixMs = endedAt;
    }
    deps.metrics.eventsWritten.inc(recorded.written);
    deps.metrics.duplicatesIgnored.inc(recorded.duplicates);
    for (const event of recorded.unpriced) {
      deps.metrics.eventsUnpriced.inc({ reason: event.reason });
      deps.logger.warn(
        {
          ...traceFields,
          event_id: event.eventId,
          account_id: event.accountId,
          key_id: event.keyId,
          model: event.model,
          plan: event.plan,
          reason: event.reason,
        },
        'usage event stored at cost 0: not in the gateway configuration',
      );
    }
    deps.logger.debug(
      {
        ...traceFields,
        topic: chunk.topic,
        partition: chunk.partition,
        next_offset: chunk.nextOffset,
        written: recorded.written,
        duplicates: recorded.duplicates,
        unpriced: recorded.unpriced.length,
      },
      'usage batch stored',
    );
  };
}
