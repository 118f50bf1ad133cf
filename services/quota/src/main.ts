import Redis from 'ioredis';
import { loadGatewayConfig, runOrExit } from '@gw/config';
import { startGrpcServer } from '@gw/grpc';
import { createLogger, onShutdown, grpcServerMetrics, startMetricsServer } from '@gw/telemetry';
import { readQuotaConfig } from './config';
import { Limits } from './limits';
import { quotaService } from './server';

void runOrExit(async () => {
  const config = readQuotaConfig();
  const gatewayConfig = await loadGatewayConfig(config.GATEWAY_CONFIG);
  const logger = createLogger('quota', config.LOG_LEVEL);
  // Fail fast while Redis is away rather than queueing decisions behind a reconnect.
  const redis = new Redis(config.REDIS_URL, {
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    connectTimeout: 2_000,
  });
  redis.on('error', (error: Error) => logger.warn({ err: error.message }, 'redis connection problem'));
  const limits = new Limits(redis, new Map(gatewayConfig.plans.map((plan) => [plan.id, plan])), config.LEASE_TTL_MS);
  const metrics = await startMetricsServer('quota', config.METRICS_HOST, config.METRICS_PORT);
  await new Promise<void>((resolve) => redis.once('ready', () => resolve()));
  const grpc = await startGrpcServer({
    host: config.GRPC_HOST,
    port: config.GRPC_PORT,
    services: [quotaService(limits)],
    onHandlerFailure: (error, method) => logger.error({ err: error, method }, 'handler failed'),
    observeCall: grpcServerMetrics(metrics.registry),
  });
  grpc.setServing(true);
  logger.info({ port: grpc.port }, 'quota serving');
  onShutdown(logger, async () => {
    await grpc.shutdown(5_000);
    redis.disconnect();
    await metrics.close();
  });
});
