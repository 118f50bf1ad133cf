"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.meteredTotals = meteredTotals;
exports.meteredEvents = meteredEvents;
exports.spoolDepth = spoolDepth;
exports.consumerLag = consumerLag;
exports.waitUntilSettled = waitUntilSettled;
const promises_1 = require("node:timers/promises");
const pg_1 = require("pg");
const kafka_1 = require("@gw/kafka");
const totalsSql = `
SELECT
  (SELECT COALESCE(SUM(billable_tokens), 0)::text FROM usage_aggregates WHERE account_id = $1) AS aggregate_billable,
  (SELECT COALESCE(SUM(requests), 0)::text FROM usage_aggregates WHERE account_id = $1) AS aggregate_requests,
  (SELECT COALESCE(SUM(billable_tokens), 0)::text FROM usage_events WHERE account_id = $1) AS event_billable,
  (SELECT COUNT(*)::text FROM usage_events WHERE account_id = $1) AS events,
  (SELECT COUNT(DISTINCT event_id)::text FROM usage_events WHERE account_id = $1) AS distinct_event_ids`;
async function withClient(databaseUrl, use) {
    const client = new pg_1.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 3_000 });
    await client.connect();
    try {
        return await use(client);
    }
    finally {
        await client.end().catch(() => undefined);
    }
}
function meteredTotals(databaseUrl, accountId) {
    return withClient(databaseUrl, async (client) => {
        const row = (await client.query(totalsSql, [accountId])).rows[0];
        return {
            aggregateBillable: Number(row.aggregate_billable),
            aggregateRequests: Number(row.aggregate_requests),
            eventBillable: Number(row.event_billable),
            events: Number(row.events),
            distinctEventIds: Number(row.distinct_event_ids),
        };
    });
}
function meteredEvents(databaseUrl, accountId) {
    return withClient(databaseUrl, async (client) => {
        const { rows } = await client.query('SELECT event_id, billable_tokens::text, outcome FROM usage_events WHERE account_id = $1', [accountId]);
        return rows.map((row) => ({
            eventId: row.event_id,
            billableTokens: Number(row.billable_tokens),
            outcome: row.outcome,
        }));
    });
}
/** Events the ingress spool holds that Kafka has not acknowledged (its gauge); undefined when unreachable. */
async function spoolDepth(stack) {
    try {
        const response = await fetch(`http://127.0.0.1:${stack.ports.metrics.ingress}/metrics`, {
            signal: AbortSignal.timeout(2_000),
        });
        const line = (await response.text()).split('\n').find((text) => /^gateway_usage_spool_events[{ ]/.test(text));
        return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
    }
    catch {
        return undefined;
    }
}
/** Messages of the usage topic the metering group has not committed yet; undefined when Kafka does not answer. */
async function consumerLag(stack) {
    const kafka = (0, kafka_1.createKafka)({
        brokers: stack.infra.kafkaBrokers.split(','),
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
    }
    catch {
        return undefined;
    }
    finally {
        await admin.disconnect().catch(() => undefined);
    }
}
/**
 * Waits (at most timeoutMs) until the pipeline is empty (ingress spool 0, metering group lag 0) and
 * the account's totals did not change over the last two reads a second apart; returns the totals.
 */
async function waitUntilSettled(stack, accountId, timeoutMs = 60_000) {
    const started = Date.now();
    let previous;
    let last;
    for (;;) {
        const [totals, spool, lag] = await Promise.all([
            meteredTotals(stack.infra.databaseUrl, accountId).catch(() => undefined),
            spoolDepth(stack),
            consumerLag(stack),
        ]);
        if (totals)
            last = totals;
        const still = totals !== undefined && previous !== undefined && JSON.stringify(totals) === JSON.stringify(previous);
        if (still && spool === 0 && lag === 0)
            return { totals: totals, waitedMs: Date.now() - started, settled: true };
        if (Date.now() - started > timeoutMs) {
            return {
                totals: last ?? (await meteredTotals(stack.infra.databaseUrl, accountId)),
                waitedMs: Date.now() - started,
                settled: false,
            };
        }
        previous = totals;
        await (0, promises_1.setTimeout)(1_000);
    }
}
