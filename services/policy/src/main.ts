import { join } from 'node:path';
import { runOrExit, readGatewayConfigFile, watchGatewayConfig } from '@gw/config';
import { logHandlerFailures, startGrpcServer } from '@gw/grpc';
import {
  createLogger,
  onShutdown,
  grpcServerMetrics,
  startMetricsServer,
  configReloadReporter,
  startTracing,
} from '@gw/telemetry';
import { Catalogue } from '@gw/catalogue';
import { readPolicyConfig } from './config';
import { CurrentValue } from './current-value';
import { PrivacyPool } from './privacy-pool';
import { privacyStep } from './privacy-step';
import { policyService } from './server';

void runOrExit(async () => {
  const config = readPolicyConfig();
  const loadedConfig = await readGatewayConfigFile(config.GATEWAY_CONFIG);
  const catalogues = new CurrentValue(Catalogue.fromConfig(loadedConfig.config));
  const logger = createLogger('policy', config.LOG_LEVEL);
  const tracing = await startTracing(config.tracing);
  const privacyPool = await PrivacyPool.start({
    threads: config.PRIVACY_WORKERS,
    queuedPerAccount: config.PRIVACY_QUEUE_PER_ACCOUNT,
    queuedTotal: config.PRIVACY_QUEUE_TOTAL,
    // Built next to this file by tsc.
    script: join(__dirname, 'privacy-thread.js'),
    onThreadFailure: (failure) =>
      logger.error(
        { exit_code: failure.exitCode, error_name: failure.errorName, error_code: failure.errorCode },
        'a privacy thread died; its request failed and a new thread took its place',
      ),
  });
  const metrics = await startMetricsServer('policy', config.METRICS_HOST, config.METRICS_PORT);
  // A reloaded YAML reaches ingress too: the catalogue in force is pushed to every follower.
  const configWatch = watchGatewayConfig(config.GATEWAY_CONFIG, loadedConfig, {
    apply: (next) => catalogues.set(Catalogue.fromConfig(next)),
    report: configReloadReporter(logger, metrics.registry, loadedConfig),
  });
  const grpc = await startGrpcServer({
    host: config.GRPC_HOST,
    port: config.GRPC_PORT,
    maxMessageBytes: config.GRPC_MAX_MESSAGE_BYTES,
    transport: config.grpcTransport,
    services: [policyService(catalogues, privacyStep(privacyPool))],
    onHandlerFailure: logHandlerFailures(logger),
    observeCall: grpcServerMetrics(metrics.registry),
  });
  grpc.setServing(true);
  logger.info({ port: grpc.port }, 'policy serving');
  onShutdown(logger, async () => {
    configWatch.close();
    const stopped = grpc.shutdown(5_000);
    // Catalogue watchers stay subscribed for good: end their streams so that the graceful part can finish.
    catalogues.close();
    await stopped;
    // Only now: calls still running in the grace period need the threads.
    await privacyPool.close();
    await Promise.all([metrics.close(), tracing.shutdown()]);
  });
});
