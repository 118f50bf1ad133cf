import type { Server } from 'node:http';
import { join } from 'node:path';
import { runOrExit, readGatewayConfigFile, watchGatewayConfig } from '@gw/config';
import { create, eventsv1 } from '@gw/proto';
import { createRestorer, restoreAll } from '@gw/pii';
import { createKafka } from '@gw/kafka';
import {
  Counter,
  createLogger,
  Gauge,
  onShutdown,
  startMetricsServer,
  startTracing,
  requestLogFields,
  configReloadReporter,
} from '@gw/telemetry';
import { subscribeToNotices } from '@gw/revocations';
import { BodyBudget, heldBodyBytesGauge } from '@gw/workers';
import { createUsagePublisher, logUsageNotRecorded, registerUsageSpoolMetrics } from './usage-spool/billing-spool';
import { CatalogueFollower, catalogueStreamOf } from './catalogue/catalogue-snapshot';
import { BodyChecks } from './body-checks/body-checks';
import { createClients } from './clients';
import { createEdgeMetrics } from './telemetry/edge-metrics';
import { authorizeLocallyOrWithPolicy, keyFromAuth, policyDeadline } from './domain/authorization';
import { createHttpServer } from './http/http-server';
import { InFlightRequests } from './domain/in-flight';
import { leaseReports } from './telemetry/lease-reports';
import { LeaseKeeper } from './domain/leases';
import { readIngressConfig } from './config';
import { refusalCounts } from './telemetry/refusal-counts';
import { sendUsageTraced, traceSettledRequest } from './telemetry/request-tracing';
import { createAdminApp, createPublicApp } from './server';
import { reverifyUntilAnswered } from './domain/reverify';
import { VerifiedKeys } from './domain/verified-keys';

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
}

void runOrExit(async () => {
  const config = readIngressConfig();
  const loadedConfig = await readGatewayConfigFile(config.GATEWAY_CONFIG);
  const gatewayConfig = loadedConfig.config;
  /** Read per request; a reload of the YAML replaces the plans' limits in place. */
  const planBodyLimits = new Map<string, number>();
  const setPlanBodyLimits = (plans: typeof gatewayConfig.plans) => {
    planBodyLimits.clear();
    for (const plan of plans) {
      planBodyLimits.set(plan.id, Math.min(plan.bodyLimitBytes ?? Infinity, config.BODY_LIMIT_BYTES));
    }
  };
  setPlanBodyLimits(gatewayConfig.plans);
  let plans = gatewayConfig.plans;
  const logger = createLogger('ingress', config.LOG_LEVEL);
  const tracing = startTracing(config.tracing);
  const clients = createClients(config);
  // Subscribed from the start, so that a catalogue is at hand by the time requests read it.
  const catalogueFollower = new CatalogueFollower({ watch: catalogueStreamOf(clients.policy), logger });
  /** Set at SIGTERM: /readyz answers 503 from then on, so that whatever balances by readiness stops first. */
  let shuttingDown = false;
  /** Ready once policy's catalogue has arrived (requests are then decided, not refused as unavailable), until the stop. */
  const ready = () => !shuttingDown && catalogueFollower.current() !== undefined;
  const kafka = createKafka({
    brokers: config.KAFKA_BROKERS,
    clientId: 'ingress',
    log: (level, message, fields) => logger[level](fields, message),
    security: config.kafkaSecurity,
  });
  const metrics = await startMetricsServer('ingress', config.METRICS_HOST, config.METRICS_PORT);
  // Models and pools reach ingress in policy's catalogue; what ingress reads of the YAML itself is reloaded here.
  const labelValuesOf = (next: typeof gatewayConfig) => ({
    models: next.models.map((model) => model.alias),
    regions: next.regions.map((region) => region.id),
  });
  const edgeMetrics = createEdgeMetrics(metrics.registry, labelValuesOf(gatewayConfig));
  const configWatch = watchGatewayConfig(config.GATEWAY_CONFIG, loadedConfig, {
    apply: (next) => {
      setPlanBodyLimits(next.plans);
      plans = next.plans;
      edgeMetrics.addLabelValues(labelValuesOf(next));
    },
    report: configReloadReporter(logger, metrics.registry, loadedConfig),
  });
  // Usage spool: events are kept on disk until Kafka has them; does not wait for Kafka.
  const publisher = createUsagePublisher(kafka, config, logger, edgeMetrics.usageAcknowledged);
  await publisher.connect();
  /** True while the spool cannot take the events of new requests (full, disk failing): live requests are refused (503). */
  const billingUnavailable = (): boolean => !publisher.acceptsEvents();
  registerUsageSpoolMetrics(metrics.registry, publisher);
  const requestLog = logger.child({ event: 'request' });
  const privacyEntities = new Counter({
    name: 'gateway_privacy_entities_total',
    help: 'Personal data found in requests of keys in privacy mode flag, by entity type (counts, never values).',
    labelNames: ['type'],
    registers: [metrics.registry],
  });
  const bodyBudget = new BodyBudget(config.BODY_BUFFER_MAX_BYTES);
  new Gauge({ ...heldBodyBytesGauge(bodyBudget), registers: [metrics.registry] });
  const bodyChecks = await BodyChecks.start({
    inlineMaxBytes: config.BODY_CHECK_INLINE_MAX_BYTES,
    threads: config.BODY_CHECK_THREADS,
    queuedPerAccount: config.BODY_CHECK_QUEUED_PER_ACCOUNT,
    queuedTotal: config.BODY_CHECK_QUEUED_TOTAL,
    script: join(__dirname, 'body-checks', 'body-check-thread.js'),
    onThreadFailure: (failure) => logger.error(failure, 'a body check thread died; another took its place'),
  });
  const inFlight = new InFlightRequests();
  const keys = new VerifiedKeys(keyFromAuth(clients.auth), {
    ttlMs: config.KEY_CACHE_TTL_MS,
    maxEntries: config.KEY_CACHE_MAX_ENTRIES,
  });
  const refusals = refusalCounts(clients, logger, metrics.registry);
  refusals.start(config.REFUSAL_FLUSH_MS);
  const leaseReporter = leaseReports(logger, metrics.registry);
  const leases = new LeaseKeeper(
    { renew: (ref) => clients.quota.renew(ref), release: (request) => clients.quota.release(request) },
    leaseReporter,
  );
  leaseReporter.watch(leases);
  /** Aborted at shutdown: background work stops. */
  const stopping = new AbortController();
  const revocations = await subscribeToNotices(config.REDIS_URL, {
    onNotice: (notice) => {
      if (!('keyId' in notice)) return keys.dropAccount(notice.accountId);
      keys.dropKey(notice.keyId);
      const ended = inFlight.revokeKey(notice.keyId);
      if (ended > 0) logger.info({ key_id: notice.keyId, ended }, 'revoked key: requests in flight ended');
    },
    onConnectionChange: (connected) => {
      keys.setEnabled(connected);
      logger.info({ connected }, 'revocation channel');
      // Notices sent while the channel was down are lost: the keys of requests in flight are asked again.
      if (connected) {
        void reverifyUntilAnswered(
          { inFlight, verifyWithAuth: keyFromAuth(clients.auth), concurrency: 16 },
          { attempts: 30, retryDelayMs: 1_000, signal: stopping.signal },
        ).then((passes) =>
          logger.info({ passes }, 'keys in flight verified again after the revocation channel was down'),
        );
      }
    },
    onError: (error) => logger.warn({ err: error.message }, 'redis subscriber connection problem'),
  });

  // Receiving a request is bounded; a response is not: streams may be silent for long thinking phases.
  const receiveBounds = {
    headersTimeoutMs: config.HEADERS_TIMEOUT_MS,
    requestTimeoutMs: config.HEADERS_TIMEOUT_MS + config.BODY_TIMEOUT_MS,
  };
  const publicServer = createHttpServer(
    createPublicApp(
      {
        clients,
        keys: refusals.watch(keys),
        authorize: authorizeLocallyOrWithPolicy(
          catalogueFollower,
          clients.policy,
          policyDeadline(config.CONTROL_CALL_TIMEOUT_MS, config.POLICY_CALL_MS_PER_BODY_MIB),
        ),
        catalogue: catalogueFollower,
        countTokensTimeoutMs: config.COUNT_TOKENS_TIMEOUT_MS,
        completionTimeoutMs: config.COMPLETION_TIMEOUT_MS,
        leases,
        inFlight,
        logFailure: (error, request, fields) =>
          logger.error({ ...requestLogFields(request), ...fields, err: error }, 'request failed in the gateway'),
        restorationFor: (placeholders, nonce) => {
          const map = Object.fromEntries(placeholders.map((entry) => [entry.placeholder, entry.original]));
          return {
            textRestorer: () => createRestorer(map, nonce),
            jsonRestorer: () => createRestorer(map, nonce, { json: true }),
            restoreAll: (text) => restoreAll(text, map, nonce),
          };
        },
        countPrivacyFlags: (counts) => {
          for (const [type, count] of Object.entries(counts)) privacyEntities.inc({ type }, count);
        },
        billingUnavailable,
        bodyLimitFor: (plan) => planBodyLimits.get(plan) ?? config.BODY_LIMIT_BYTES,
        checkBody: (kind, raw, account) => bodyChecks.check(kind, raw, account),
        recordUsage: (event, request) => {
          edgeMetrics.usageHanded();
          return sendUsageTraced(event, config.USAGE_TOPIC, request.traceContext, (traced) =>
            publisher.send(create(eventsv1.UsageEventSchema, traced)),
          ).then(edgeMetrics.usageDurable, (error: unknown) =>
            logUsageNotRecorded(logger, event, error, request.traceContext),
          );
        },
        reportSettled: (settled, request) => {
          edgeMetrics.settled(settled);
          traceSettledRequest(settled, request.traceContext);
        },
        logRequest: (request, fields) => requestLog.info({ ...requestLogFields(request), ...fields }),
      },
      {
        ready,
        bodyLimitBytes: config.BODY_LIMIT_BYTES,
        refusedUploadDiscard: {
          maxBytes: config.REFUSED_UPLOAD_DISCARD_MAX_BYTES,
          maxMs: config.REFUSED_UPLOAD_DISCARD_MAX_MS,
        },
        bodyTimeouts: { idleMs: config.BODY_IDLE_TIMEOUT_MS, totalMs: config.BODY_TIMEOUT_MS },
        bodyBudget,
        ssePingIntervalMs: config.SSE_PING_INTERVAL_MS,
        trustedProxies: config.TRUSTED_PROXIES,
        rateLimitHeaderPrefix: config.RATE_LIMIT_HEADER_PREFIX,
        metrics: edgeMetrics,
        logger,
        refusals,
      },
    ),
    receiveBounds,
  );
  publicServer.keepAliveTimeout = 65_000;
  const adminServer = createHttpServer(
    createAdminApp({
      clients,
      operatorToken: config.ADMIN_TOKEN,
      trustedProxies: config.TRUSTED_PROXIES,
      allowedHosts: config.ADMIN_ALLOWED_HOSTS,
      plans: () => plans,
      logger,
      ready,
    }),
    receiveBounds,
  );
  await listen(publicServer, config.HTTP_PORT, config.HTTP_HOST);
  await listen(adminServer, config.ADMIN_PORT, config.ADMIN_HOST);
  logger.info(
    { host: config.HTTP_HOST, port: config.HTTP_PORT, admin_host: config.ADMIN_HOST, admin_port: config.ADMIN_PORT },
    'ingress serving',
  );

  onShutdown(logger, async () => {
    shuttingDown = true;
    configWatch.close();
    stopping.abort();
    // In Kubernetes the pod left its Services' endpoints during the preStop pause, before this signal.
    // Stop accepting; keep-alive connections close as soon as they are idle; requests in flight, streams
    // included, run for up to SHUTDOWN_GRACE_MS, then are cut (their usage is recorded as cancelled).
    const closed = Promise.all([
      new Promise((resolve) => publicServer.close(resolve)),
      new Promise((resolve) => adminServer.close(resolve)),
    ]);
    const idleSweep = setInterval(() => {
      publicServer.closeIdleConnections();
      adminServer.closeIdleConnections();
    }, 50);
    const cutOff = setTimeout(() => {
      logger.warn({ grace_ms: config.SHUTDOWN_GRACE_MS }, 'shutdown grace over: requests still running are cut');
      publicServer.closeAllConnections();
      adminServer.closeAllConnections();
    }, config.SHUTDOWN_GRACE_MS);
    await closed;
    clearInterval(idleSweep);
    clearTimeout(cutOff);
    logger.info({}, 'requests in flight finished; delivering the usage spool');
    // The whole spool goes to Kafka while it answers (USAGE_SPOOL_DRAIN_MS at most): a pod scaled away
    // leaves nothing on its volume. With Kafka away it stops at once; the events wait on the volume.
    await Promise.all([publisher.disconnect(), refusals.stop()]);
    await revocations.close();
    leases.close();
    await bodyChecks.close();
    await catalogueFollower.close();
    for (const client of Object.values(clients)) client.close();
    await Promise.all([metrics.close(), tracing.shutdown()]);
  });
});
