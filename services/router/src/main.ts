import { join } from 'node:path';
import { runOrExit, readGatewayConfigFile, watchGatewayConfig } from '@gw/config';
import { logHandlerFailures, registration, startGrpcServer } from '@gw/grpc';
import { routerv1 } from '@gw/proto';
import {
  createLogger,
  onShutdown,
  grpcServerMetrics,
  startMetricsServer,
  startTracing,
  configReloadReporter,
  Gauge,
} from '@gw/telemetry';
import { BodyBudget, heldBodyBytesGauge } from '@gw/workers';
import { createAdapterRegistry } from './adapters';
import { readRouterConfig } from './config';
import { createEndpointBalancer } from './balancer';
import { startHealthChecks } from './health-checks';
import { createEndpointMetrics, createRouterMetrics, registerBreakerStates, registerPoolInfo } from './metrics';
import { createPoolDirectory, poolsWithoutCredential, replacePools } from './pools';
import { createProviderCredentials } from './provider-credentials';
import { createRouter } from './router';
import { routerHandlers } from './server';
import { StubPlans } from './stub-plans';
import { defaultTestStubOptions } from './test-stub';
import { createUpstreamHttp } from './upstream-http';

void runOrExit(async () => {
  const config = readRouterConfig();
  const loadedConfig = await readGatewayConfigFile(config.GATEWAY_CONFIG);
  const logger = createLogger('router', config.LOG_LEVEL);
  const tracing = await startTracing(config.tracing);
  const credential = (envName: string) => process.env[envName] || undefined;
  // One directory for the router, the balancer and the probes: a reload replaces its pools in place.
  const providerCredentials = createProviderCredentials();
  const pools = new Map(createPoolDirectory(loadedConfig.config, providerCredentials));
  const reportUnsetCredentials = () => {
    for (const unset of poolsWithoutCredential(pools, credential)) {
      logger.error(unset, 'upstream credential env var is not set: the pool cannot serve');
    }
  };
  reportUnsetCredentials();

  const metricsServer = await startMetricsServer('router', config.METRICS_HOST, config.METRICS_PORT);
  const http = createUpstreamHttp({
    connectMs: config.UPSTREAM_CONNECT_TIMEOUT_MS,
    streamHeadersMs: config.UPSTREAM_STREAM_HEADERS_TIMEOUT_MS,
    messageHeadersMs: config.UPSTREAM_MESSAGE_TIMEOUT_MS,
    bodySilenceMs: config.UPSTREAM_BODY_SILENCE_TIMEOUT_MS,
  });
  const endpointMetrics = createEndpointMetrics(metricsServer.registry);
  registerPoolInfo(metricsServer.registry, pools);
  const balancer = createEndpointBalancer(pools, {
    settings: {
      failureThreshold: config.UPSTREAM_EJECT_AFTER_FAILURES,
      baseEjectionMs: config.UPSTREAM_EJECT_BASE_MS,
      maxEjectionMs: config.UPSTREAM_EJECT_MAX_MS,
    },
    metrics: endpointMetrics,
    logger,
  });
  registerBreakerStates(metricsServer.registry, () => balancer.status());
  const healthChecks = startHealthChecks({
    pools,
    balancer,
    http,
    settings: { intervalMs: config.UPSTREAM_HEALTH_INTERVAL_MS, timeoutMs: config.UPSTREAM_HEALTH_TIMEOUT_MS },
    logger,
    metrics: endpointMetrics,
  });
  const stubPlans = await StubPlans.start({
    inlineMaxBytes: config.LARGE_BODY_INLINE_MAX_BYTES,
    threads: config.LARGE_BODY_THREADS,
    queuedPerAccount: config.LARGE_BODY_QUEUED_PER_ACCOUNT,
    queuedTotal: config.LARGE_BODY_QUEUED_TOTAL,
    script: join(__dirname, 'stub-plan-thread.js'),
    onThreadFailure: (failure) => logger.error(failure, 'a large-body thread died; another took its place'),
  });
  const bodies = new BodyBudget(config.BODY_BUFFER_MAX_BYTES);
  new Gauge({ ...heldBodyBytesGauge(bodies), registers: [metricsServer.registry] });
  const router = createRouter({
    pools,
    adapters: createAdapterRegistry(),
    http,
    credential,
    logger,
    metrics: createRouterMetrics(metricsServer.registry),
    balancer,
    testStub: defaultTestStubOptions,
    planStub: (request, signal) => stubPlans.plan(request, signal),
    bodies,
  });
  const configWatch = watchGatewayConfig(config.GATEWAY_CONFIG, loadedConfig, {
    apply: (next) => {
      replacePools(pools, createPoolDirectory(next, providerCredentials));
      reportUnsetCredentials();
      healthChecks.retarget();
    },
    report: configReloadReporter(logger, metricsServer.registry, loadedConfig),
  });
  const grpc = await startGrpcServer({
    host: config.GRPC_HOST,
    port: config.GRPC_PORT,
    maxMessageBytes: config.GRPC_MAX_MESSAGE_BYTES,
    transport: config.grpcTransport,
    services: [registration(routerv1.RouterService, routerHandlers(router, logger))],
    onHandlerFailure: logHandlerFailures(logger),
    observeCall: grpcServerMetrics(metricsServer.registry),
  });
  grpc.setServing(true);
  logger.info({ grpc_host: config.GRPC_HOST, grpc_port: grpc.port, pools: [...pools.keys()] }, 'router serving');

  onShutdown(logger, async () => {
    configWatch.close();
    // NOT_SERVING at once (readiness drops), no new calls, and the calls in flight (streams) run for
    // up to SHUTDOWN_GRACE_MS before they are cut; the upstreams' health checks go on meanwhile.
    await grpc.shutdown(config.SHUTDOWN_GRACE_MS);
    await healthChecks.stop();
    await http.close();
    await stubPlans.close();
    await Promise.all([metricsServer.close(), tracing.shutdown()]);
  });
});
