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
import { meteringMetrics } from './metrics';
import { PeriodUsageReader } from './period-usage';
import { priceList } from './pricing';
import { meteringService } from './server';

void runOrExit(async () => {
  const config = readMeteringConfig();
  const loadedConfig = await readGatewayConfigFile(config.GATEWAY_CONFIG);
  const prices = priceList(loadedConfig.config);
  const logger = createLogger('metering', config.LOG_LEVEL);
  const tracing = startTracing(config.tracing);
  const pool = createPool(config.DATABASE_URL, (error) => logger.error({ err: error }, 'database connection failed'));
  const metrics = await startMetricsServer('metering', config.METRICS_HOST, config.METRICS_PORT);
  // The consumer reads the price tables at each event: a reload replaces them.
  const configWatch = watchGatewayConfig(config.GATEWAY_CONFIG, loadedConfig, {
    apply: (next) => Object.assign(prices, priceList(next)),
    report: configReloadReporter(logger, metrics.registry, loadedConfig),
  });
  // The process reports SERVING in grpc.health.v1 once the consumer has joined its group.
  const usage = new PeriodUsageReader(pool, (error) => logger.error({ err: error }, 'usage query failed'));
  const grpc = await startGrpcServer({
    host: config.GRPC_HOST,
    port: config.GRPC_PORT,
    maxMessageBytes: config.GRPC_MAX_MESSAGE_BYTES,
    transport: config.grpcTransport,
    services: [meteringService(usage)],
    onHandlerFailure: logHandlerFailures(logger),
    observeCall: grpcServerMetrics(metrics.registry),
  });
  const kafka = createKafka({
    brokers: config.KAFKA_BROKERS,
    clientId: 'metering',
    log: (level, message, fields) => logger[level](fields, message),
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
    }),
    onCrash: (error) => {
      // A consumer that kafkajs will not restart leaves nothing to do: exit so that the process is restarted.
      logger.fatal({ err: error }, 'usage consumer stopped');
      process.exit(1);
    },
  });
  grpc.setServing(true);
  logger.info({ grpc_port: grpc.port, topic: config.USAGE_TOPIC, group: config.CONSUMER_GROUP }, 'metering consuming');

  onShutdown(logger, async () => {
    configWatch.close();
    grpc.setServing(false);
    await consumer.stop();
    await grpc.shutdown(5_000);
    await Promise.all([pool.end(), metrics.close(), tracing.shutdown()]);
  });
});
