import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { loadGatewayConfig, runOrExit } from '@gw/config';
import { create, eventsv1 } from '@gw/proto';
import { createKafka, UsageEventProducer } from '@gw/kafka';
import { createLogger, onShutdown, startMetricsServer } from '@gw/telemetry';
import { subscribeToNotices } from '@gw/revocations';
import { createClients } from './clients';
import { InFlightRequests } from './in-flight';
import { readIngressConfig } from './config';
import { createAdminApp, createPublicApp } from './server';

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
}

void runOrExit(async () => {
  const config = readIngressConfig();
  const gatewayConfig = await loadGatewayConfig(config.GATEWAY_CONFIG);
  const planBodyLimits = new Map(
    gatewayConfig.plans.map((plan) => [plan.id, Math.min(plan.bodyLimitBytes ?? Infinity, config.BODY_LIMIT_BYTES)]),
  );
  const logger = createLogger('ingress', config.LOG_LEVEL);
  const clients = createClients(config);
  const kafka = createKafka({
    brokers: config.KAFKA_BROKERS,
    clientId: 'ingress',
    log: (level, message, fields) => logger[level](fields, message),
  });
  const producer = new UsageEventProducer(kafka, { topic: config.USAGE_TOPIC });
  await producer.connect();
  const metrics = await startMetricsServer('ingress', config.METRICS_HOST, config.METRICS_PORT);
  const requestLog = logger.child({ event: 'request' });
  const inFlight = new InFlightRequests();
  const revocations = await subscribeToNotices(config.REDIS_URL, {
    onNotice: (notice) => {
      if (!('keyId' in notice)) return;
      const ended = inFlight.revokeKey(notice.keyId);
      if (ended > 0) logger.info({ key_id: notice.keyId, ended }, 'revoked key: requests in flight ended');
    },
    onConnectionChange: (connected) => logger.info({ connected }, 'revocation channel'),
    onError: (error) => logger.warn({ err: error.message }, 'redis subscriber connection problem'),
  });

  const publicServer = createServer(
    createPublicApp(
      {
        clients,
        inFlight,
        bodyLimitFor: (plan) => planBodyLimits.get(plan) ?? config.BODY_LIMIT_BYTES,
        recordUsage: (event) =>
          producer
            .send(create(eventsv1.UsageEventSchema, event))
            .catch((error: unknown) =>
              logger.error({ err: error, request_id: event.eventId }, 'usage event not delivered'),
            ),
        logRequest: (fields) => requestLog.info(fields),
      },
      {
        bodyLimitBytes: config.BODY_LIMIT_BYTES,
        ssePingIntervalMs: config.SSE_PING_INTERVAL_MS,
        trustedProxies: config.TRUSTED_PROXIES,
        rateLimitHeaderPrefix: config.RATE_LIMIT_HEADER_PREFIX,
        logger,
      },
    ),
  );
  // Streams may be silent for long thinking phases; the SDKs wait up to 10 minutes.
  publicServer.requestTimeout = 0;
  publicServer.keepAliveTimeout = 65_000;
  const adminServer = createServer(createAdminApp({ clients, operatorToken: config.ADMIN_TOKEN, logger }));
  await listen(publicServer, config.HTTP_PORT, config.HTTP_HOST);
  await listen(adminServer, config.ADMIN_PORT, config.HTTP_HOST);
  logger.info({ port: config.HTTP_PORT, admin_port: config.ADMIN_PORT }, 'ingress serving');

  onShutdown(logger, async () => {
    await new Promise((resolve) => adminServer.close(resolve));
    await new Promise((resolve) => {
      publicServer.close(resolve);
      publicServer.closeIdleConnections();
    });
    await producer.disconnect();
    await revocations.close();
    for (const client of Object.values(clients)) client.close();
    await metrics.close();
  });
});
