import type { Server } from 'node:http';
import { join } from 'node:path';
import { runOrExit, readGatewayConfigFile, watchGatewayConfig } from '@gw/config';
import type { GatewayConfig, LoadedGatewayConfig } from '@gw/config';
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
  sampledTraceIdOf,
} from '@gw/telemetry';
import type { Logger, Registry } from '@gw/telemetry';
import { subscribeToNotices } from '@gw/revocations';
import { BodyBudget, heldBodyBytesGauge } from '@gw/workers';
import { BodyChecks } from './body-checks/body-checks';
import { CatalogueFollower, catalogueStreamOf } from './catalogue/catalogue-snapshot';
import { createClients, serviceClients } from './clients';
import { readIngressConfig } from './config';
import type { IngressConfig } from './config';
import { InFlightRequests } from './domain/in-flight';
import { LeaseKeeper } from './domain/leases';
import { PlanBodyLimits } from './domain/plan-body-limits';
import { revocationHandling } from './domain/revocation-notices';
import { VerifiedKeys } from './domain/verified-keys';
import type { VerifyWithAuth } from './domain/verified-keys';
import { createHttpServer } from './http/http-server';
import type { RequestLog, SettleDeps } from './pipeline/types';
import { admitDeps, publicEndpoints } from './endpoints';
import { createAdminApp, createPublicApp } from './server';
import { createEdgeMetrics } from './telemetry/edge-metrics';
import type { EdgeMetrics } from './telemetry/edge-metrics';
import { leaseReports } from './telemetry/lease-reports';
import { refusalCounts } from './telemetry/refusal-counts';
import { traceSettledRequest } from './telemetry/request-tracing';
import { createUsagePublisher, registerUsageSpoolMetrics, requestUsageRecorder } from './usage-spool/billing-spool';

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
}

/** What ingress reads of the gateway YAML itself (models and pools come in policy's catalogue), reloaded with it. */
function followGatewayConfig(config: IngressConfig, loaded: LoadedGatewayConfig, logger: Logger, registry: Registry) {
  let plans = loaded.config.plans;
  const planBodyLimits = new PlanBodyLimits(config.BODY_LIMIT_BYTES, plans);
  const labelValuesOf = (next: GatewayConfig) => ({
    models: next.models.map((model) => model.alias),
    regions: next.regions.map((region) => region.id),
  });
  const edgeMetrics = createEdgeMetrics(registry, labelValuesOf(loaded.config));
  const watch = watchGatewayConfig(config.GATEWAY_CONFIG, loaded, {
    apply: (next) => {
      planBodyLimits.set(next.plans);
      plans = next.plans;
      edgeMetrics.addLabelValues(labelValuesOf(next));
    },
    report: configReloadReporter(logger, registry, loaded),
  });
  return { planBodyLimits, plans: () => plans, edgeMetrics, close: () => watch.close() };
}

/** Usage events go to the durable spool, then Kafka; the spool's state decides whether live requests are served. */
async function startUsageRecording(config: IngressConfig, logger: Logger, registry: Registry, metrics: EdgeMetrics) {
  const kafka = createKafka({
    brokers: config.KAFKA_BROKERS,
    clientId: 'ingress',
    log: (level, message, fields) => logger[level](fields, message),
    security: config.kafkaSecurity,
  });
  const publisher = createUsagePublisher(kafka, config, logger, metrics.usageAcknowledged);
  await publisher.connect();
  registerUsageSpoolMetrics(registry, publisher);
  const settle: Omit<SettleDeps, 'log'> = {
    beginUsage: requestUsageRecorder(publisher, config.USAGE_TOPIC, logger, metrics),
    reportSettled: (settled, request) => {
      metrics.settled(settled, sampledTraceIdOf(request.traceContext));
      traceSettledRequest(settled, request.traceContext);
    },
  };
  /** True while the spool cannot take the events of new requests (full, disk failing): live requests are refused (503). */
  return { publisher, settle, billingUnavailable: () => !publisher.acceptsEvents() };
}

function requestLog(logger: Logger): RequestLog {
  const lines = logger.child({ event: 'request' });
  return {
    request: (request, fields) => lines.info({ ...requestLogFields(request), ...fields }),
    failure: (error, request, fields) =>
      logger.error({ ...requestLogFields(request), ...fields, err: error }, 'request failed in the gateway'),
  };
}

function privacyFlagCounter(registry: Registry) {
  const entities = new Counter({
    name: 'gateway_privacy_entities_total',
    help: 'Personal data found in requests of keys in privacy mode flag, by entity type (counts, never values).',
    labelNames: ['type'],
    registers: [registry],
  });
  return (counts: Record<string, number>) => {
    for (const [type, count] of Object.entries(counts)) entities.inc({ type }, count);
  };
}

function startBodyChecks(config: IngressConfig, logger: Logger): Promise<BodyChecks> {
  return BodyChecks.start({
    inlineMaxBytes: config.BODY_CHECK_INLINE_MAX_BYTES,
    threads: config.BODY_CHECK_THREADS,
    queuedPerAccount: config.BODY_CHECK_QUEUED_PER_ACCOUNT,
    queuedTotal: config.BODY_CHECK_QUEUED_TOTAL,
    script: join(__dirname, 'body-checks', 'body-check-thread.js'),
    onThreadFailure: (failure) => logger.error(failure, 'a body check thread died; another took its place'),
  });
}

/** How the public port reads requests and answers, from the configuration. */
function publicEdgeOptions(config: IngressConfig, logger: Logger) {
  return {
    bodyLimitBytes: config.BODY_LIMIT_BYTES,
    refusedUploadDiscard: {
      maxBytes: config.REFUSED_UPLOAD_DISCARD_MAX_BYTES,
      maxMs: config.REFUSED_UPLOAD_DISCARD_MAX_MS,
    },
    bodyTimeouts: { idleMs: config.BODY_IDLE_TIMEOUT_MS, totalMs: config.BODY_TIMEOUT_MS },
    ssePingIntervalMs: config.SSE_PING_INTERVAL_MS,
    trustedProxies: config.TRUSTED_PROXIES,
    rateLimitHeaderPrefix: config.RATE_LIMIT_HEADER_PREFIX,
    logger,
  };
}

/** Stops in order: listeners and requests in flight, then the usage spool, then everything else. */
function stopGracefully(config: IngressConfig, logger: Logger, servers: Server[], stopRest: () => Promise<void>) {
  return async () => {
    // In Kubernetes the pod left its Services' endpoints during the preStop pause, before this signal.
    // Stop accepting; keep-alive connections close as soon as they are idle; requests in flight, streams
    // included, run for up to SHUTDOWN_GRACE_MS, then are cut (their usage is recorded as cancelled).
    const closed = Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
    const idleSweep = setInterval(() => servers.forEach((server) => server.closeIdleConnections()), 50);
    const cutOff = setTimeout(() => {
      logger.warn({ grace_ms: config.SHUTDOWN_GRACE_MS }, 'shutdown grace over: requests still running are cut');
      servers.forEach((server) => server.closeAllConnections());
    }, config.SHUTDOWN_GRACE_MS);
    await closed;
    clearInterval(idleSweep);
    clearTimeout(cutOff);
    logger.info({}, 'requests in flight finished; delivering the usage spool');
    await stopRest();
  };
}

void runOrExit(async () => {
  const config = readIngressConfig();
  const loadedConfig = await readGatewayConfigFile(config.GATEWAY_CONFIG);
  const logger = createLogger('ingress', config.LOG_LEVEL);
  const tracing = await startTracing(config.tracing);
  const connections = createClients(config);
  const clients = serviceClients(connections, (callee, field) =>
    logger.error({ callee, field }, 'a service answered without a field ingress needs: refused as api_error'),
  );
  // Subscribed from the start, so that a catalogue is at hand by the time requests read it.
  const catalogue = new CatalogueFollower({ watch: catalogueStreamOf(connections.policy), logger });
  /** Set at SIGTERM: /readyz answers 503 from then on, so that whatever balances by readiness stops first. */
  let shuttingDown = false;
  /** Ready once policy's catalogue has arrived (requests are then decided, not refused as unavailable), until the stop. */
  const ready = () => !shuttingDown && catalogue.current() !== undefined;
  const metrics = await startMetricsServer('ingress', config.METRICS_HOST, config.METRICS_PORT);
  const gatewayConfig = followGatewayConfig(config, loadedConfig, logger, metrics.registry);
  const usage = await startUsageRecording(config, logger, metrics.registry, gatewayConfig.edgeMetrics);
  const bodyBudget = new BodyBudget(config.BODY_BUFFER_MAX_BYTES);
  new Gauge({ ...heldBodyBytesGauge(bodyBudget), registers: [metrics.registry] });
  const bodyChecks = await startBodyChecks(config, logger);
  const inFlight = new InFlightRequests();
  const verifyWithAuth: VerifyWithAuth = (key, address, scope) => clients.auth.verifyKey(key, address, scope);
  const keys = new VerifiedKeys(verifyWithAuth, {
    ttlMs: config.KEY_CACHE_TTL_MS,
    maxEntries: config.KEY_CACHE_MAX_ENTRIES,
  });
  const refusals = refusalCounts(clients.metering, logger, metrics.registry);
  refusals.start(config.REFUSAL_FLUSH_MS);
  const leaseReporter = leaseReports(logger, metrics.registry);
  const leases = new LeaseKeeper(clients.quota, leaseReporter);
  leaseReporter.watch(leases);
  /** Aborted at shutdown: background work stops. */
  const stopping = new AbortController();
  const revocations = await subscribeToNotices(
    config.REDIS_URL,
    revocationHandling({ keys, inFlight, verifyWithAuth, logger, stopping: stopping.signal }),
  );
  const endpoints = publicEndpoints({
    config,
    clients,
    keys: gatewayConfig.edgeMetrics.watchKeys(refusals.watch(keys)),
    admit: admitDeps(config, { ...gatewayConfig, bodyChecks, catalogue, clients, usage }),
    settle: usage.settle,
    leases,
    inFlight,
    catalogue,
    log: requestLog(logger),
    countPrivacyFlags: privacyFlagCounter(metrics.registry),
  });
  // Receiving a request is bounded; a response is not: streams may be silent for long thinking phases.
  const receiveBounds = {
    headersTimeoutMs: config.HEADERS_TIMEOUT_MS,
    requestTimeoutMs: config.HEADERS_TIMEOUT_MS + config.BODY_TIMEOUT_MS,
  };
  const publicApp = createPublicApp(endpoints, {
    ...publicEdgeOptions(config, logger),
    ready,
    bodyBudget,
    metrics: gatewayConfig.edgeMetrics,
    refusals,
  });
  const publicServer = createHttpServer(publicApp, receiveBounds);
  const adminApp = createAdminApp({
    clients: connections,
    operatorToken: config.ADMIN_TOKEN,
    trustedProxies: config.TRUSTED_PROXIES,
    allowedHosts: config.ADMIN_ALLOWED_HOSTS,
    plans: gatewayConfig.plans,
    logger,
    ready,
  });
  const adminServer = createHttpServer(adminApp, receiveBounds);
  await listen(publicServer, config.HTTP_PORT, config.HTTP_HOST);
  await listen(adminServer, config.ADMIN_PORT, config.ADMIN_HOST);
  logger.info(
    { host: config.HTTP_HOST, port: config.HTTP_PORT, admin_host: config.ADMIN_HOST, admin_port: config.ADMIN_PORT },
    'ingress serving',
  );

  const stop = stopGracefully(config, logger, [publicServer, adminServer], async () => {
    // The whole spool goes to Kafka while it answers (USAGE_SPOOL_DRAIN_MS at most): a pod scaled away
    // leaves nothing on its volume. With Kafka away it stops at once; the events wait on the volume.
    await Promise.all([usage.publisher.disconnect(), refusals.stop()]);
    await revocations.close();
    leases.close();
    await bodyChecks.close();
    await catalogue.close();
    for (const client of Object.values(connections)) client.close();
    await Promise.all([metrics.close(), tracing.shutdown()]);
  });
  onShutdown(logger, async () => {
    shuttingDown = true;
    gatewayConfig.close();
    stopping.abort();
    await stop();
  });
});
