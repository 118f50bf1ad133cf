import { Client } from 'pg';
import { createKafka } from '@gw/kafka';
import { kafkaConnection } from '@gw/local-stack';
import type { ChaosStack } from './chaos-stack';
import { waitUntil } from '@gw/testing';

/** What Postgres holds for one account. */
export interface MeteredTotals {
  aggregateBillable: number;
  aggregateRequests: number;
  eventBillable: number;
  events: number;
  distinctEventIds: number;
}

export interface MeteredEvent {
  eventId: string;
  billableTokens: number;
  outcome: string;
}

const totalsSql = `
SELECT
  (SELECT COALESCE(SUM(billable_tokens), 0)::text FROM usage_aggregates WHERE account_id = $1) AS aggregate_billable,
  (SELECT COALESCE(SUM(requests), 0)::text FROM usage_aggregates WHERE account_id = $1) AS aggregate_requests,
  (SELECT COALESCE(SUM(billable_tokens), 0)::text FROM usage_events WHERE account_id = $1) AS event_billable,
  (SELECT COUNT(*)::text FROM usage_events WHERE account_id = $1) AS events,
  (SELECT COUNT(DISTINCT event_id)::text FROM usage_events WHERE account_id = $1) AS distinct_event_ids`;

async function withClient<T>(databaseUrl: string, use: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: databaseUrl, connectionTimeoutMillis: 3_000 });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

export function meteredTotals(databaseUrl: string, accountId: string): Promise<MeteredTotals> {
  return withClient(databaseUrl, async (client) => {
    const row = (await client.query<Record<string, string>>(totalsSql, [accountId])).rows[0]!;
    return {
      aggregateBillable: Number(row.aggregate_billable),
      aggregateRequests: Number(row.aggregate_requests),
      eventBillable: Number(row.event_billable),
      events: Number(row.events),
      distinctEventIds: Number(row.distinct_event_ids),
    };
  });
}

export function meteredEvents(databaseUrl: string, accountId: string): Promise<MeteredEvent[]> {
  return withClient(databaseUrl, async (client) => {
    const { rows } = await client.query<{ event_id: string; billable_tokens: string; outcome: string }>(
      'SELECT event_id, billable_tokens::text, outcome FROM usage_events WHERE account_id = $1',
      [accountId],
    );
    return rows.map((row) => ({
      eventId: row.event_id,
      billableTokens: Number(row.billable_tokens),
      outcome: row.outcome,
    }));
  });
}

/** Events the ingress spool holds that Kafka has not acknowledged (its gauge); undefined when unreachable. */
export async function spoolDepth(stack: ChaosStack): Promise<number | undefined> {
  try {
    const response = await fetch(`http://127.0.0.1:${stack.ports.metrics.ingress}/metrics`, {
      signal: AbortSignal.timeout(2_000),
    });
    const line = (await response.text()).split('\n').find((text) => /^gateway_usage_spool_events[{ ]/.test(text));
    return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
  } catch {
    return undefined;
  }
}

/** Sum of a counter on a metrics endpoint; undefined when unreachable. */
async function counter(port: number, name: string): Promise<number | undefined> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(2_000) });
    return (await response.text())
      .split('\n')
      .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))
      .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
  } catch {
    return undefined;
  }
}

/** Events metering found stored already (redeliveries it absorbed), since its process started. */
export function meteringDuplicates(stack: ChaosStack): Promise<number | undefined> {
  return counter(stack.ports.metrics.metering, 'metering_usage_events_duplicate_total');
}

/** Messages of the usage topic the metering group has not committed yet; undefined when Kafka does not answer. */
export async function consumerLag(stack: ChaosStack): Promise<number | undefined> {
  const kafka = createKafka({
    ...kafkaConnection(stack.infra),
    clientId: 'chaos-lag',
    log: () => undefined,
  });
  const admin = kafka.admin({ retry: { retries: 1 } });
  try {
    await admin.connect();
    const ends = await admin.fetchTopicOffsets(stack.usageTopic);
    const [committed] = await admin.fetchOffsets({ groupId: stack.consumerGroup, topics: [stack.usageTopic] });
    let lag = 0;
    for (const end of ends) {
      const done = committed?.partitions.find((partition) => partition.partition === end.partition)?.offset ?? '-1';
      lag += Number(end.high) - Math.max(Number(done), Number(end.low));
    }
    return lag;
  } catch {
    return undefined;
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

export interface Settled {
  totals: MeteredTotals;
  waitedMs: number;
  /** False when the bound passed before the pipeline was empty and the totals still. */
  settled: boolean;
}

/**
 * Waits (at most timeoutMs) until the pipeline is empty (ingress spool 0, metering group lag 0) and
 * the account's totals did not change over the last two reads a second apart; returns the totals.
 */
export async function waitUntilSettled(stack: ChaosStack, accountId: string, timeoutMs = 60_000): Promise<Settled> {
  const started = Date.now();
  let previous: MeteredTotals | undefined;
  let last: MeteredTotals | undefined;
  const settledTotals = async () => {
    const [totals, spool, lag] = await Promise.all([
      meteredTotals(stack.infra.databaseUrl, accountId).catch(() => undefined),
      spoolDepth(stack),
      consumerLag(stack),
    ]);
    if (totals) last = totals;
    const still = totals !== undefined && previous !== undefined && JSON.stringify(totals) === JSON.stringify(previous);
    previous = totals;
    return still && spool === 0 && lag === 0 ? totals : undefined;
  };
  const settled = await waitUntil(settledTotals, { what: 'a settled pipeline', timeoutMs, intervalMs: 1_000 }).catch(
    () => undefined,
  );
  if (settled) return { totals: settled, waitedMs: Date.now() - started, settled: true };
  return {
    totals: last ?? (await meteredTotals(stack.infra.databaseUrl, accountId)),
    waitedMs: Date.now() - started,
    settled: false,
  };
}

/** Usage events of the running ingress (since its start): handed to its spool, and acknowledged by Kafka. */
export async function ingressUsageEvents(stack: ChaosStack): Promise<{ handed: number; acknowledged: number }> {
  const response = await fetch(`http://127.0.0.1:${stack.ports.metrics.ingress}/metrics`, {
    signal: AbortSignal.timeout(2_000),
  });
  const lines = (await response.text()).split('\n');
  const stage = (name: string) => {
    const line = lines.find(
      (text) => text.startsWith('gateway_usage_events_total{') && text.includes(`stage="${name}"`),
    );
    return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
  };
  return { handed: stage('handed'), acknowledged: stage('acknowledged') };
}
