import { readFile } from 'node:fs/promises';
import { rootCertificates } from 'node:tls';
import { runOrExit, readGatewayConfigFile, watchGatewayConfig } from '@gw/config';
import { createPool } from '@gw/db';
import { logHandlerFailures, startGrpcServer } from '@gw/grpc';
import { createKafka, MissingTopicError, requireTopic, startBatchConsumer } from '@gw/kafka';
import {
  createLogger,
  onShutdown,
  grpcServerMetrics,
  startMetricsServer,
  configReloadReporter,
  startTracing,
} from '@gw/telemetry';
import { readMeteringConfig } from './config';
import { usageChunkHandler } from './consumer';
import { KeyUsageReader } from './key-usage';
import { meteringMetrics } from './metrics';
import { PeriodUsageReader } from './period-usage';
import { priceList } from './pricing';
import { meteringService } from './server';
import { WebhookDispatcher } from './webhooks/dispatcher';
import { httpsSender } from './webhooks/sender';
import { webhookService } from './webhooks/service';
import { systemResolver } from './webhooks/targets';
import { UsageAlerts, hardCeilingsOf } from './webhooks/usage-alerts';

void runOrExit(async () => {
  const config = readMeteringConfig();
  const loadedConfig = await readGatewayConfigFile(config.GATEWAY_CONFIG);
  const prices = priceList(loadedConfig.config);
  let planCeilings = hardCeilingsOf(loadedConfig.config);
  const logger = createLogger('metering', config.LOG_LEVEL);
  const tracing = await startTracing(config.tracing);
  const pool = createPool(config.DATABASE_URL, (error) => logger.error({ err: error }, 'database connection failed'));
  const metrics = await startMetricsServer('metering', config.METRICS_HOST, config.METRICS_PORT);
  // The consumer reads the price tables at each event: a reload replaces them.
  const configWatch = watchGatewayConfig(config.GATEWAY_CONFIG, loadedConfig, {
    apply: (next) => {
      Object.assign(prices, priceList(next));
      planCeilings = hardCeilingsOf(next);
    },
    report: configReloadReporter(logger, metrics.registry, loadedConfig),
  });
  const targetPolicy = {
    resolve: systemResolver,
    allowedPrivateTargets: new Set(config.WEBHOOK_ALLOWED_PRIVATE_TARGETS.map((entry) => entry.toLowerCase())),
  };
  const extraCa = config.WEBHOOK_CA_FILE ? await readFile(config.WEBHOOK_CA_FILE, 'utf8') : undefined;
  const dispatcher = new WebhookDispatcher({
    pool,
    logger,
    registry: metrics.registry,
    policy: targetPolicy,
    send: httpsSender,
    options: {
      pollMs: config.WEBHOOK_POLL_MS,
      concurrency: config.WEBHOOK_CONCURRENCY,
      timeoutMs: config.WEBHOOK_TIMEOUT_MS,
      backoff: { baseMs: config.WEBHOOK_RETRY_BASE_MS, maxMs: config.WEBHOOK_RETRY_MAX_MS },
      ca: extraCa === undefined ? undefined : [...rootCertificates, extraCa],
      keyExpiryScanMs: config.WEBHOOK_KEY_EXPIRY_SCAN_MS,
      retryWindowMs: config.WEBHOOK_RETRY_WINDOW_MS,
    },
  });
  // The process reports SERVING in grpc.health.v1 once the consumer has joined its group.
  const onStoreFailure = (error: unknown) => logger.error({ err: error }, 'usage query failed');
  const usage = new PeriodUsageReader(pool, onStoreFailure);
  const keyUsage = new KeyUsageReader(pool, onStoreFailure);
  const grpc = await startGrpcServer({
    host: config.GRPC_HOST,
    port: config.GRPC_PORT,
    maxMessageBytes: config.GRPC_MAX_MESSAGE_BYTES,
    transport: config.grpcTransport,
    services: [
      meteringService({ usage, keyUsage, pool, onStoreFailure }),
      webhookService({ pool, policy: targetPolicy, retryWindowMs: config.WEBHOOK_RETRY_WINDOW_MS, onStoreFailure }),
    ],
    onHandlerFailure: logHandlerFailures(logger),
    observeCall: grpcServerMetrics(metrics.registry),
  });
  const kafka = createKafka({
    brokers: config.KAFKA_BROKERS,
    clientId: 'metering',
    log: (level, message, fields) => logger[level](fields, message),
    security: config.kafkaSecurity,
  });
  // A clear refusal rather than a consumer crash-looping on UNKNOWN_TOPIC_OR_PARTITION.
  await requireTopic(kafka, config.USAGE_TOPIC).catch((error: unknown) => {
    if (!(error instanceof MissingTopicError)) throw error;
    logger.fatal({ topic: config.USAGE_TOPIC }, error.message);
    process.exit(2);
  });
  const consumer = await startBatchConsumer(kafka, {
    groupId: config.CONSUMER_GROUP,
    topic: config.USAGE_TOPIC,
    sessionTimeoutMs: config.CONSUMER_SESSION_TIMEOUT_MS,
    processChunk: usageChunkHandler({
      pool,
      logger,
      metrics: meteringMetrics(metrics.registry),
      prices,
      alerts: new UsageAlerts(() => planCeilings, config.WEBHOOK_RETRY_WINDOW_MS),
    }),
    onCrash: (error, restartInMs) => {
      logger.error({ err: error, restart_in_ms: restartInMs }, 'usage consumer stopped; a new one joins the group');
    },
  });
  dispatcher.start();
  grpc.setServing(true);
  logger.info({ grpc_port: grpc.port, topic: config.USAGE_TOPIC, group: config.CONSUMER_GROUP }, 'metering consuming');

  onShutdown(logger, async () => {
    configWatch.close();
    grpc.setServing(false);
    await Promise.all([consumer.stop(), dispatcher.stop()]);
    await grpc.shutdown(5_000);
    await Promise.all([pool.end(), metrics.close(), tracing.shutdown()]);
  });
});
