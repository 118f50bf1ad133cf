import { runOrExit } from '@gw/config';
import { registration, startGrpcServer } from '@gw/grpc';
import { routerv1 } from '@gw/proto';
import { createLogger, onShutdown, startMetricsServer } from '@gw/telemetry';
import { createAdapterRegistry } from './adapters';
import { loadRouterConfig } from './config';
import { createRouterMetrics } from './metrics';
import { createPoolDirectory } from './pools';
import { createRouter } from './router';
import { routerHandlers } from './server';
import { defaultTestStubOptions } from './test-stub';
import { createUpstreamHttp } from './upstream-http';

/** Streams may run for minutes; on shutdown the running ones get this long to finish. */
const shutdownGraceMs = 25_000;

void runOrExit(async () => {
  const config = await loadRouterConfig();
  const logger = createLogger('router', config.logLevel);
  const credential = (envName: string) => process.env[envName] || undefined;
  const pools = createPoolDirectory(config.gateway);
  for (const pool of pools.values()) {
    if (pool.credentialEnv !== undefined && credential(pool.credentialEnv) === undefined) {
      logger.error(
        { poolId: pool.id, credentialEnv: pool.credentialEnv },
        'upstream credential env var is not set: the pool cannot serve',
      );
    }
  }

  const metricsServer = await startMetricsServer('router', config.metricsHost, config.metricsPort);
  const http = createUpstreamHttp(config.upstreamTimeouts);
  const router = createRouter({
    pools,
    adapters: createAdapterRegistry(),
    http,
    credential,
    logger,
    metrics: createRouterMetrics(metricsServer.registry),
    testStub: defaultTestStubOptions,
  });
  const grpc = await startGrpcServer({
    host: config.grpcHost,
    port: config.grpcPort,
    services: [registration(routerv1.RouterService, routerHandlers(router, logger))],
    onHandlerFailure: (error, method) => logger.error({ err: error, method }, 'handler failed'),
  });
  grpc.setServing(true);
  logger.info({ grpcHost: config.grpcHost, grpcPort: grpc.port, pools: [...pools.keys()] }, 'router serving');

  onShutdown(logger, async () => {
    await grpc.shutdown(shutdownGraceMs);
    await http.close();
    await metricsServer.close();
  });
});
