import Redis, { Cluster } from 'ioredis';
import { runOrExit, readGatewayConfigFile, watchGatewayConfig } from '@gw/config';
import { createPool } from '@gw/db';
import { logHandlerFailures, startGrpcServer } from '@gw/grpc';
import {
  createLogger,
  grpcServerMetrics,
  onShutdown,
  startMetricsServer,
  configReloadReporter,
  startTracing,
  Counter,
} from '@gw/telemetry';
import { usageCappedMetric } from '@gw/usage';
import { readQuotaConfig } from './config';
import { UsageLedger } from './ledger';
import { Limits } from './limits';
import { redisMetrics } from './metrics';
import { quotaService } from './server';

void runOrExit(async () => {
  const config = readQuotaConfig();
  const loadedConfig = await readGatewayConfigFile(config.GATEWAY_CONFIG);
  const logger = createLogger('quota', config.LOG_LEVEL);
  const tracing = await startTracing(config.tracing);
  // Fail fast while Redis is away rather than queueing decisions behind a reconnect.
  const options = { maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 2_000 };
  const redis =
    config.REDIS_CLUSTER_NODES.length > 0
      ? new Cluster(
          config.REDIS_CLUSTER_NODES.map((node) => {
            const [host, port] = node.split(':');
            return { host: host!, port: Number(port) };
          }),
          { enableOfflineQueue: false, redisOptions: options },
        )
      : new Redis(config.REDIS_URL, options);
  redis.on('error', (error: Error) => logger.warn({ err: error.message }, 'redis connection problem'));
  const pool = createPool(config.DATABASE_URL, (error) => logger.error({ err: error }, 'database connection failed'));
  const metrics = await startMetricsServer('quota', config.METRICS_HOST, config.METRICS_PORT);
  const configWatch = watchGatewayConfig(config.GATEWAY_CONFIG, loadedConfig, {
    apply: (next) => {
      plans.clear();
      for (const plan of next.plans) plans.set(plan.id, plan);
    },
    report: configReloadReporter(logger, metrics.registry, loadedConfig),
  });
  /** Read at each decision: a reload replaces the plans in place. */
  const plans = new Map(loadedConfig.config.plans.map((plan) => [plan.id, plan]));
  const limits = new Limits(
    redis,
    plans,
    new UsageLedger(pool),
    config.LEASE_TTL_MS,
    () => new Date(),
    redisMetrics(metrics.registry, redis),
  );
  const usageCapped = new Counter({ ...usageCappedMetric, registers: [metrics.registry] });
  await new Promise<void>((resolve) => redis.once('ready', () => resolve()));
  const grpc = await startGrpcServer({
    host: config.GRPC_HOST,
    port: config.GRPC_PORT,
    maxMessageBytes: config.GRPC_MAX_MESSAGE_BYTES,
    transport: config.grpcTransport,
    services: [quotaService(limits, () => usageCapped.inc())],
    onHandlerFailure: logHandlerFailures(logger),
    observeCall: grpcServerMetrics(metrics.registry),
  });
  grpc.setServing(true);
  logger.info({ grpc_port: grpc.port }, 'quota serving');
  onShutdown(logger, async () => {
    configWatch.close();
    await grpc.shutdown(5_000);
    redis.disconnect();
    await Promise.all([pool.end(), metrics.close(), tracing.shutdown()]);
  });
});
