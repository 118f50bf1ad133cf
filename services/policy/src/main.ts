import { loadGatewayConfig, runOrExit } from '@gw/config';
import { startGrpcServer } from '@gw/grpc';
import { createLogger, onShutdown, grpcServerMetrics, startMetricsServer } from '@gw/telemetry';
import { Catalogue } from './catalogue';
import { readPolicyConfig } from './config';
import { policyService } from './server';

void runOrExit(async () => {
  const config = readPolicyConfig();
  const catalogue = new Catalogue(await loadGatewayConfig(config.GATEWAY_CONFIG));
  const logger = createLogger('policy', config.LOG_LEVEL);
  const metrics = await startMetricsServer('policy', config.METRICS_HOST, config.METRICS_PORT);
  const grpc = await startGrpcServer({
    host: config.GRPC_HOST,
    port: config.GRPC_PORT,
    maxMessageBytes: config.GRPC_MAX_MESSAGE_BYTES,
    services: [policyService(catalogue)],
    onHandlerFailure: (error, method, requestId) =>
      logger.error({ err: error, method, request_id: requestId }, 'handler failed'),
    observeCall: grpcServerMetrics(metrics.registry),
  });
  grpc.setServing(true);
  logger.info({ port: grpc.port }, 'policy serving');
  onShutdown(logger, async () => {
    await grpc.shutdown(5_000);
    await metrics.close();
  });
});
