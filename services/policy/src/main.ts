import { loadGatewayConfig, runOrExit } from '@gw/config';
import { startGrpcServer } from '@gw/grpc';
import { createLogger, onShutdown, grpcServerMetrics, startMetricsServer } from '@gw/telemetry';
import { Catalogue } from '@gw/catalogue';
import { readPolicyConfig } from './config';
import { CurrentValue } from './current-value';
import { policyService } from './server';

void runOrExit(async () => {
  const config = readPolicyConfig();
  const catalogues = new CurrentValue(Catalogue.fromConfig(await loadGatewayConfig(config.GATEWAY_CONFIG)));
  const logger = createLogger('policy', config.LOG_LEVEL);
  const metrics = await startMetricsServer('policy', config.METRICS_HOST, config.METRICS_PORT);
  const grpc = await startGrpcServer({
    host: config.GRPC_HOST,
    port: config.GRPC_PORT,
    maxMessageBytes: config.GRPC_MAX_MESSAGE_BYTES,
    transport: config.grpcTransport,
    services: [policyService(catalogues)],
    onHandlerFailure: (error, method, requestId) =>
      logger.error({ err: error, method, request_id: requestId }, 'handler failed'),
    observeCall: grpcServerMetrics(metrics.registry),
  });
  grpc.setServing(true);
  logger.info({ port: grpc.port }, 'policy serving');
  onShutdown(logger, async () => {
    const stopped = grpc.shutdown(5_000);
    // Catalogue watchers stay subscribed for good: end their streams so that the graceful part can finish.
    catalogues.close();
    await stopped;
    await metrics.close();
  });
});
