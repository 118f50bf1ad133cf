import { loadGatewayConfig, runOrExit } from '@gw/config';
import { createPool } from '@gw/db';
import { startGrpcServer } from '@gw/grpc';
import { createLogger, onShutdown, startMetricsServer } from '@gw/telemetry';
import { readAuthConfig } from './config';
import { KeyFormat } from './key-format';
import { KeyService } from './keys';
import { authService } from './server';
import { AuthStore } from './store';

void runOrExit(async () => {
  const config = readAuthConfig();
  const gatewayConfig = await loadGatewayConfig(config.GATEWAY_CONFIG);
  const logger = createLogger('auth', config.LOG_LEVEL);
  const pool = createPool(config.DATABASE_URL, (error) =>
    logger.error({ err: error }, 'idle database connection failed'),
  );
  const keys = new KeyService(new AuthStore(pool), new KeyFormat(config.KEY_ISSUER), config.KEY_PEPPERS, gatewayConfig);
  const metrics = await startMetricsServer('auth', config.METRICS_HOST, config.METRICS_PORT);
  const grpc = await startGrpcServer({
    host: config.GRPC_HOST,
    port: config.GRPC_PORT,
    services: [authService(keys)],
    onHandlerFailure: (error, method) => logger.error({ err: error, method }, 'handler failed'),
  });
  grpc.setServing(true);
  logger.info({ port: grpc.port }, 'auth serving');
  onShutdown(logger, async () => {
    await grpc.shutdown(5_000);
    await Promise.all([pool.end(), metrics.close()]);
  });
});
