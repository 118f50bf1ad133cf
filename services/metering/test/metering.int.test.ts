import { execFile, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { kafkaSecurityEnv, readKafkaSecurity } from '@gw/config';
import { createPool } from '@gw/db';
import type { Pool } from '@gw/db';
import { createServiceClient, isServing } from '@gw/grpc';
import { createKafka, ensureTopics, UsageEventProducer } from '@gw/kafka';
import type { Kafka } from '@gw/kafka';
import { commonv1, create, eventsv1, meteringv1, toBinary } from '@gw/proto';
import type { MessageInitShape } from '@gw/proto';
import { testInfraEnv, waitUntil } from '@gw/testing';

const repoRoot = join(__dirname, '..', '..', '..');
const run = promisify(execFile);

/** DATABASE_URL, KAFKA_BROKERS and Kafka's TLS and SASL settings of the test infrastructure. */
function infrastructure(): { databaseUrl: string; kafkaBrokers: string[]; kafkaEnv: Record<string, string> } {
  const infra = testInfraEnv();
  if (!infra.DATABASE_URL || !infra.KAFKA_BROKERS) throw new Error('DATABASE_URL or KAFKA_BROKERS is missing');
  return {
    databaseUrl: infra.DATABASE_URL,
    kafkaBrokers: infra.KAFKA_BROKERS.split(','),
    kafkaEnv: kafkaSecurityEnv(infra),
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

/** The first value of check other than undefined (through waitUntil), or a failure after timeoutMs. */
async function eventually<T>(what: string, timeoutMs: number, check: () => Promise<T | undefined>): Promise<T> {
  return (await waitUntil(check, { what, timeoutMs, intervalMs: 250 }, (value) => value !== undefined)) as T;
}

/** SIGTERM, then SIGKILL if the process is still there after 10 s; resolves to its exit code. */
async function stop(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
  const exited = once(child, 'exit') as Promise<[number | null]>;
  child.kill('SIGTERM');
  const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  const [code] = await exited;
  clearTimeout(killer);
  return code;
}

const march = Date.UTC(2026, 2, 31, 23, 59, 59);
const april = Date.UTC(2026, 3, 1, 0, 0, 1);

/** Prices of the test: GBP per million tokens. */
const gatewayYaml = `
regions: [{ id: eu-west, jurisdiction: eu }]
pools:
  - { id: anthropic-eu-west, region: eu-west, adapter: anthropic, endpoints: [{ url: 'http://127.0.0.1:9' }] }
models:
  - alias: claude-sonnet
    displayName: Claude Sonnet
    createdAt: '2025-09-29T00:00:00Z'
    pricing: { inputGbpPerMtok: 3, outputGbpPerMtok: 15 }
    servedBy: [{ pool: anthropic-eu-west, upstreamModel: claude-sonnet }]
  - alias: claude-haiku
    displayName: Claude Haiku
    createdAt: '2025-10-15T00:00:00Z'
    pricing: { inputGbpPerMtok: 0.8, outputGbpPerMtok: 4 }
    servedBy: [{ pool: anthropic-eu-west, upstreamModel: claude-haiku }]
plans:
  - id: starter
    residency: [eu]
    models: all
    limits: { requestsPerMinute: 60, concurrency: 5, monthlyTokens: 1000000 }
    overage: { enabled: false, gbpPerMtok: 0 }
  - id: pro
    residency: [eu]
    models: all
    limits: { requestsPerMinute: 600, concurrency: 20, monthlyTokens: 50000000 }
    overage: { enabled: true, gbpPerMtok: 9 }
`;

const meteringClient = (address: string) =>
  createServiceClient(meteringv1.MeteringService, {
    address,
    callee: 'metering',
    defaultTimeoutMs: 5_000,
    transport: { kind: 'plaintext' },
  });

/** A GetUsageResponse without its protobuf type names, for toEqual. */
function plainUsage(response: meteringv1.GetUsageResponse) {
  return {
    billableTokens: response.billableTokens,
    byModel: response.byModel.map(({ model, requests, billableTokens, costGbp }) => ({
      model,
      requests,
      billableTokens,
      costGbp,
    })),
  };
}

describe('metering service against real Kafka and PostgreSQL', () => {
  const suffix = randomBytes(4).toString('hex');
  const databaseName = `gateway_test_metering_${suffix}`;
  const topic = `gateway.usage.v1.test-metering-${suffix}`;
  const consumerGroup = `gateway-metering-test-${suffix}`;
  const { databaseUrl: adminUrl, kafkaBrokers, kafkaEnv } = infrastructure();
  let admin: Pool;
  let pool: Pool;
  let kafka: Kafka;
  let producer: UsageEventProducer;
  let service: ChildProcess;
  let serviceOutput = '';
  let metricsUrl: string;
  let configDir: string;
  let metering: ReturnType<typeof meteringClient>;

  const usageEvent = (init: MessageInitShape<typeof eventsv1.UsageEventSchema>) =>
    create(eventsv1.UsageEventSchema, {
      accountId: `acct_${suffix}`,
      keyId: 'key_live',
      environment: commonv1.Environment.LIVE,
      model: 'claude-sonnet',
      poolId: 'anthropic-eu-west',
      region: 'eu-west',
      inputTokens: 100n,
      outputTokens: 10n,
      billableTokens: 110n,
      outcome: eventsv1.Outcome.SUCCESS,
      startedAtUnixMs: BigInt(march - 2000),
      endedAtUnixMs: BigInt(march),
      ...init,
    });

  const storedEvents = async (): Promise<number> =>
    Number((await pool.query<{ count: string }>('SELECT count(*) FROM usage_events')).rows[0]!.count);

  beforeAll(async () => {
    admin = createPool(adminUrl, () => undefined, 1);
    await admin.query(`CREATE DATABASE ${databaseName}`);
    const url = new URL(adminUrl);
    url.pathname = `/${databaseName}`;
    // migrateUp imports an ES module, which jest's CommonJS sandbox cannot; the CLI runs it in plain node.
    await run(process.execPath, [join(repoRoot, 'packages/db/dist/migrate-cli.js')], {
      env: { ...process.env, DATABASE_URL: url.toString() },
    });
    pool = createPool(url.toString(), () => undefined, 2);

    kafka = createKafka({
      brokers: kafkaBrokers,
      clientId: 'metering-test',
      log: () => undefined,
      security: readKafkaSecurity(kafkaEnv),
    });
    await ensureTopics(kafka, [{ topic, numPartitions: 6 }]);
    producer = new UsageEventProducer(kafka, { topic });
    await producer.connect();

    configDir = mkdtempSync(join(tmpdir(), 'metering-test-'));
    writeFileSync(join(configDir, 'gateway.yaml'), gatewayYaml);

    const [grpcPort, metricsPort] = [await freePort(), await freePort()];
    metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    metering = meteringClient(`127.0.0.1:${grpcPort}`);
    service = spawn(process.execPath, [join(repoRoot, 'services/metering/dist/main.js')], {
      env: {
        PATH: process.env.PATH,
        LOG_LEVEL: 'info',
        DATABASE_URL: url.toString(),
        KAFKA_BROKERS: kafkaBrokers.join(','),
        ...kafkaEnv,
        USAGE_TOPIC: topic,
        CONSUMER_GROUP: consumerGroup,
        GRPC_PORT: String(grpcPort),
        GRPC_INSECURE: 'true',
        METRICS_PORT: String(metricsPort),
        GATEWAY_CONFIG: join(configDir, 'gateway.yaml'),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    service.stdout!.on('data', (chunk: Buffer) => (serviceOutput += chunk.toString()));
    service.stderr!.on('data', (chunk: Buffer) => (serviceOutput += chunk.toString()));
    try {
      await eventually('metering to report SERVING', 45_000, async () => {
        if (service.exitCode !== null) throw new Error(`metering exited with ${service.exitCode}`);
        return (await isServing(`127.0.0.1:${grpcPort}`, { kind: 'plaintext' })) || undefined;
      });
    } catch (error) {
      throw new Error(`${(error as Error).message}\n--- metering output ---\n${serviceOutput}`);
    }
  }, 90_000);

  afterAll(async () => {
    metering?.close();
    if (service) await stop(service);
    await producer?.disconnect();
    if (kafka) {
      const kafkaAdmin = kafka.admin();
      await kafkaAdmin.connect();
      await kafkaAdmin.deleteTopics({ topics: [topic] }).catch(() => undefined);
      await kafkaAdmin.disconnect();
    }
    await pool?.end();
    if (admin) {
      await admin.query(`DROP DATABASE IF EXISTS ${databaseName} WITH (FORCE)`);
      await admin.end();
    }
    if (configDir) rmSync(configDir, { recursive: true, force: true });
  }, 60_000);

  it('stores each event once, aggregates per billing month, skips undecodable messages and records offsets', async () => {
    const first = usageEvent({ eventId: `req_${suffix}_1`, cacheReadInputTokens: 40n, billableTokens: 114n });
    const events = [
      first,
      usageEvent({ eventId: `req_${suffix}_2`, inputTokens: 5n, outputTokens: 5n, billableTokens: 10n }),
      usageEvent({ eventId: `req_${suffix}_3`, endedAtUnixMs: BigInt(april), startedAtUnixMs: BigInt(april - 10) }),
      usageEvent({
        eventId: `req_${suffix}_4`,
        keyId: 'key_test',
        environment: commonv1.Environment.TEST,
        billableTokens: 0n,
        outcome: eventsv1.Outcome.UPSTREAM_ERROR,
        errorType: 'overloaded_error',
      }),
      // A producer retry of the first event, in the same batch.
      first,
    ];
    await Promise.all(events.map((event) => producer.send(event)));

    // Messages metering cannot store: both skipped, neither blocks the partition.
    const raw = kafka.producer();
    await raw.connect();
    await raw.send({
      topic,
      messages: [
        { key: `acct_${suffix}`, value: Buffer.from([0xff, 0xff, 0xff]) },
        {
          key: `acct_${suffix}`,
          value: Buffer.from(
            toBinary(eventsv1.UsageEventSchema, usageEvent({ eventId: `req_${suffix}_5`, accountId: '' })),
          ),
        },
      ],
    });
    await raw.disconnect();
    await eventually('4 stored events', 30_000, async () => ((await storedEvents()) === 4 ? true : undefined));

    // A redelivery after the first batch was committed changes nothing.
    await producer.send(first);
    const messagesProduced = events.length + 2 + 1;
    // Metering resumes from the offsets it commits to Kafka once a chunk is stored.
    const kafkaAdmin = kafka.admin();
    await kafkaAdmin.connect();
    const committed = await eventually('every offset committed to Kafka', 30_000, async () => {
      const [offsets] = await kafkaAdmin.fetchOffsets({ groupId: consumerGroup, topics: [topic] });
      const total = (offsets?.partitions ?? []).reduce((sum, { offset }) => sum + Math.max(0, Number(offset)), 0);
      return total === messagesProduced ? true : undefined;
    }).finally(() => kafkaAdmin.disconnect());
    expect(committed).toBe(true);
    expect(await storedEvents()).toBe(4);

    const stored = await pool.query(
      `SELECT event_id, environment, outcome, error_type, period_start::text, cache_read_input_tokens::int,
              plan, cost_gbp::text, overage_tokens::int
         FROM usage_events WHERE event_id = $1`,
      [first.eventId],
    );
    expect(stored.rows).toEqual([
      {
        event_id: first.eventId,
        environment: 'live',
        outcome: 'success',
        error_type: null,
        period_start: '2026-03-01',
        cache_read_input_tokens: 40,
        plan: null,
        // (100 + ceil(0.1 × 40)) × 3 + 10 × 15 = 462 GBP per million requests' tokens
        cost_gbp: '0.0004620000',
        overage_tokens: 0,
      },
    ]);

    const aggregates = await pool.query(
      `SELECT key_id, environment, period_start::text, requests::int, input_tokens::int, output_tokens::int,
              cache_read_input_tokens::int, billable_tokens::int, cost_gbp::text, overage_tokens::int
         FROM usage_aggregates WHERE account_id = $1 ORDER BY period_start, key_id`,
      [`acct_${suffix}`],
    );
    expect(aggregates.rows).toEqual([
      {
        key_id: 'key_live',
        environment: 'live',
        period_start: '2026-03-01',
        requests: 2,
        input_tokens: 105,
        output_tokens: 15,
        cache_read_input_tokens: 40,
        billable_tokens: 124,
        // 462 + 5 × 3 + 5 × 15
        cost_gbp: '0.0005520000',
        overage_tokens: 0,
      },
      {
        key_id: 'key_test',
        environment: 'test',
        period_start: '2026-03-01',
        requests: 1,
        input_tokens: 100,
        output_tokens: 10,
        cache_read_input_tokens: 0,
        billable_tokens: 0,
        cost_gbp: '0.0000000000',
        overage_tokens: 0,
      },
      {
        key_id: 'key_live',
        environment: 'live',
        period_start: '2026-04-01',
        requests: 1,
        input_tokens: 100,
        output_tokens: 10,
        cache_read_input_tokens: 0,
        billable_tokens: 110,
        cost_gbp: '0.0004500000',
        overage_tokens: 0,
      },
    ]);

    const metrics = await (await fetch(metricsUrl)).text();
    expect(metrics).toMatch(/^metering_usage_events_written_total\{[^}]*\} 4$/m);
    expect(metrics).toMatch(/^metering_usage_events_duplicate_total\{[^}]*\} 2$/m);
    expect(metrics).toMatch(/^metering_usage_events_skipped_total\{[^}]*\} 2$/m);
    expect(serviceOutput).toContain('usage message skipped');
    expect(service.exitCode).toBeNull();
  }, 60_000);

  it('prices each new event in order: overage past the allowance, test traffic free, unknown model or plan at 0', async () => {
    const pro = `acct_${suffix}_pro`;
    const misc = `acct_${suffix}_misc`;
    const proEvent = (eventId: string, init: MessageInitShape<typeof eventsv1.UsageEventSchema>) =>
      usageEvent({
        eventId: `req_${suffix}_${eventId}`,
        accountId: pro,
        model: 'claude-haiku',
        plan: 'pro',
        allowanceTokens: 1000n,
        overageEnabled: true,
        ...init,
      });
    const sendTogether = async (events: eventsv1.UsageEvent[]) => {
      // One produce request: the events reach the partition in this order, most likely in one chunk.
      const raw = kafka.producer();
      await raw.connect();
      await raw.send({
        topic,
        messages: events.map((event) => ({
          key: event.accountId,
          value: Buffer.from(toBinary(eventsv1.UsageEventSchema, event)),
        })),
      });
      await raw.disconnect();
    };
    const costs = async (accountId: string) =>
      (
        await pool.query<{ event_id: string; plan: string | null; cost_gbp: string; overage_tokens: number }>(
          `SELECT event_id, plan, cost_gbp::text, overage_tokens::int FROM usage_events
            WHERE account_id = $1 ORDER BY event_id`,
          [accountId],
        )
      ).rows;

    // 600 of an allowance of 1000: no overage. Stored before the next ones, so their "before" starts
    // from the aggregates.
    const o1 = proEvent('o1', { inputTokens: 500n, outputTokens: 100n, billableTokens: 600n });
    await producer.send(o1);
    await eventually('the first pro event', 30_000, async () => ((await costs(pro)).length === 1 ? true : undefined));

    // 600 more: 200 past the allowance; then 302 (200 + ceil(1.5) + ceil(100)), all past it. A producer
    // retry of o2 and a test request in between count for nothing.
    const o2 = proEvent('o2', { inputTokens: 500n, outputTokens: 100n, billableTokens: 600n });
    const t1 = proEvent('t1', {
      keyId: 'key_test',
      environment: commonv1.Environment.TEST,
      inputTokens: 100_000n,
      billableTokens: 0n,
    });
    const o3 = proEvent('o3', {
      inputTokens: 200n,
      cacheReadInputTokens: 15n,
      cacheCreationInputTokens: 80n,
      outputTokens: 0n,
      billableTokens: 302n,
    });
    await sendTogether([o2, t1, o2, o3]);

    // Unknown model, then an unknown plan with overage (its 110 tokens are past an allowance of 100
    // after u1's 110), then a known plan without overage: recorded all the same.
    const u = (eventId: string, init: MessageInitShape<typeof eventsv1.UsageEventSchema>) =>
      usageEvent({ eventId: `req_${suffix}_${eventId}`, accountId: misc, allowanceTokens: 100n, ...init });
    await sendTogether([
      u('u1', { model: 'claude-mystery', plan: 'starter' }),
      u('u2', { model: 'claude-haiku', plan: 'enterprise', overageEnabled: true }),
      u('u3', { model: 'claude-haiku', plan: 'starter' }),
    ]);

    await eventually('every pro and misc event', 30_000, async () =>
      (await costs(pro)).length === 4 && (await costs(misc)).length === 3 ? true : undefined,
    );
    expect(await costs(pro)).toEqual([
      // 500 × 0.8 + 100 × 4
      { event_id: o1.eventId, plan: 'pro', cost_gbp: '0.0008000000', overage_tokens: 0 },
      // 800 + 200 × 9
      { event_id: o2.eventId, plan: 'pro', cost_gbp: '0.0026000000', overage_tokens: 200 },
      // 302 × 0.8 + 302 × 9
      { event_id: o3.eventId, plan: 'pro', cost_gbp: '0.0029596000', overage_tokens: 302 },
      { event_id: t1.eventId, plan: 'pro', cost_gbp: '0.0000000000', overage_tokens: 0 },
    ]);
    expect(await costs(misc)).toEqual([
      { event_id: `req_${suffix}_u1`, plan: 'starter', cost_gbp: '0.0000000000', overage_tokens: 0 },
      { event_id: `req_${suffix}_u2`, plan: 'enterprise', cost_gbp: '0.0000000000', overage_tokens: 110 },
      // 100 × 0.8 + 10 × 4; over the allowance, but without overage
      { event_id: `req_${suffix}_u3`, plan: 'starter', cost_gbp: '0.0001200000', overage_tokens: 0 },
    ]);

    const aggregates = await pool.query(
      `SELECT environment, requests::int, billable_tokens::int, cost_gbp::text, overage_tokens::int
         FROM usage_aggregates WHERE account_id = $1 ORDER BY environment`,
      [pro],
    );
    expect(aggregates.rows).toEqual([
      { environment: 'live', requests: 3, billable_tokens: 1502, cost_gbp: '0.0063596000', overage_tokens: 502 },
      { environment: 'test', requests: 1, billable_tokens: 0, cost_gbp: '0.0000000000', overage_tokens: 0 },
    ]);

    const usage = async (accountId: string, environment = commonv1.Environment.LIVE) => {
      const result = await metering.getUsage({ accountId, periodStart: '2026-03-01', environment });
      if (!result.ok) throw new Error(`GetUsage failed: ${result.error.type}: ${result.error.message}`);
      return plainUsage(result.value);
    };
    expect(await usage(pro)).toEqual({
      billableTokens: 1502n,
      byModel: [{ model: 'claude-haiku', requests: 3n, billableTokens: 1502n, costGbp: '0.0063596000' }],
    });
    expect(await usage(pro, commonv1.Environment.TEST)).toEqual({
      billableTokens: 0n,
      byModel: [{ model: 'claude-haiku', requests: 1n, billableTokens: 0n, costGbp: '0.0000000000' }],
    });
    expect(await usage(misc)).toEqual({
      billableTokens: 330n,
      byModel: [
        { model: 'claude-haiku', requests: 2n, billableTokens: 220n, costGbp: '0.0001200000' },
        { model: 'claude-mystery', requests: 1n, billableTokens: 110n, costGbp: '0.0000000000' },
      ],
    });
    expect(await usage(`acct_${suffix}`)).toEqual({
      billableTokens: 124n,
      byModel: [{ model: 'claude-sonnet', requests: 2n, billableTokens: 124n, costGbp: '0.0005520000' }],
    });
    expect(await usage(`acct_${suffix}_nobody`)).toEqual({ billableTokens: 0n, byModel: [] });

    // The same events by the UTC day they ended: they add up to the aggregates.
    const daily = async (accountId: string) => {
      const result = await metering.getDailyUsage({
        accountId,
        periodStart: '2026-03-01',
        environment: commonv1.Environment.LIVE,
      });
      if (!result.ok) throw new Error(`GetDailyUsage failed: ${result.error.type}: ${result.error.message}`);
      return result.value.days.map(({ day, requests, billableTokens }) => ({ day, requests, billableTokens }));
    };
    expect(await daily(pro)).toEqual([{ day: '2026-03-31', requests: 3n, billableTokens: 1502n }]);
    expect(await daily(`acct_${suffix}_nobody`)).toEqual([]);

    const refused = await metering.getUsage({
      accountId: pro,
      periodStart: '2026-03-15',
      environment: commonv1.Environment.LIVE,
    });
    expect(refused).toMatchObject({ ok: false, error: { type: 'invalid_request_error' } });

    const metrics = await (await fetch(metricsUrl)).text();
    expect(metrics).toMatch(/^metering_usage_events_unpriced_total\{[^}]*reason="unknown_model"[^}]*\} 1$/m);
    expect(metrics).toMatch(/^metering_usage_events_unpriced_total\{[^}]*reason="unknown_plan"[^}]*\} 1$/m);
    expect(metrics).toMatch(/^metering_usage_events_duplicate_total\{[^}]*\} 3$/m);
    expect(metrics).toMatch(
      /^gateway_grpc_server_handled_total\{[^}]*grpc_method="GetUsage"[^}]*grpc_code="INVALID_ARGUMENT"[^}]*\} 1$/m,
    );
    expect(serviceOutput).toContain('usage event stored at cost 0');
    expect(serviceOutput).toContain(`"event_id":"req_${suffix}_u1"`);
  }, 60_000);

  it('leaves its group and exits with 0 on SIGTERM', async () => {
    expect(await stop(service)).toBe(0);
    expect(serviceOutput).toContain('shutting down');
  }, 30_000);
});
