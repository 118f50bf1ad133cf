import Redis from 'ioredis';
import { runOrExit, readGatewayConfigFile, watchGatewayConfig } from '@gw/config';
import { createPool } from '@gw/db';
import { logHandlerFailures, startGrpcServer } from '@gw/grpc';
import { publishNotice, subscribeToNotices } from '@gw/revocations';
import {
  createLogger,
  onShutdown,
  grpcServerMetrics,
  startMetricsServer,
  configReloadReporter,
  startTracing,
} from '@gw/telemetry';
import { adminAccessService } from './admin-access-server';
import { AdminAccessStore } from './admin-access-store';
import { auditHeadPublisher } from './audit-head';
import { AuditLog } from './audit-log';
import { AuditStore } from './audit-store';
import { readAuthConfig } from './config';
import { VerifiedKeyCache } from './key-cache';
import { KeyEvents } from './key-events';
import { KeyFormat } from './key-format';
import { KeyService } from './keys';
import { LastUsedRecorder } from './last-used';
import { authService } from './server';
import { AuthStore } from './store';

void runOrExit(async () => {
  const config = readAuthConfig();
  const loadedConfig = await readGatewayConfigFile(config.GATEWAY_CONFIG);
  /** The key service reads its lists at each call: a reload replaces them in this object. */
  const gatewayConfig = { ...loadedConfig.config };
  const logger = createLogger('auth', config.LOG_LEVEL);
  const tracing = await startTracing(config.tracing);
  const pool = createPool(config.DATABASE_URL, (error) => logger.error({ err: error }, 'database connection failed'));
  const store = new AuthStore(pool);
  const publisher = new Redis(config.REDIS_URL, { maxRetriesPerRequest: 1, connectTimeout: 2_000 });
  publisher.on('error', (error: Error) => logger.warn({ err: error.message }, 'redis publisher connection problem'));
  const cache = new VerifiedKeyCache(config.KEY_CACHE_TTL_MS);
  const subscription = await subscribeToNotices(config.REDIS_URL, {
    onNotice: (notice) => ('keyId' in notice ? cache.dropKey(notice.keyId) : cache.dropAccount(notice.accountId)),
    onConnectionChange: (connected) => {
      cache.setEnabled(connected);
      logger.info({ connected }, 'revocation channel');
    },
    onError: (error) => logger.warn({ err: error.message }, 'redis subscriber connection problem'),
  });
  // API keys and admin keys (adk_…) share one recorder: each batch goes to its own table.
  const lastUsed = new LastUsedRecorder(
    async (keyIds) => {
      const adminKeyIds = keyIds.filter((id) => id.startsWith('adk_'));
      const apiKeyIds = keyIds.filter((id) => !id.startsWith('adk_'));
      await Promise.all([
        apiKeyIds.length > 0 && store.touchKeys(apiKeyIds),
        adminKeyIds.length > 0 && store.touchAdminKeys(adminKeyIds),
      ]);
    },
    (error) => logger.warn({ err: error }, 'last-used write failed; retrying'),
  );
  lastUsed.start(config.LAST_USED_FLUSH_MS);
  const accessStore = new AdminAccessStore(pool);
  const keys = new KeyService({
    store,
    accessStore,
    format: new KeyFormat(config.KEY_ISSUER),
    peppers: config.KEY_PEPPERS,
    config: gatewayConfig,
    cache,
    lastUsed,
    // Indexes and reasons only: the entries are caller text.
    reportUnusableAllowListEntries: (keyId, entries) =>
      logger.warn(
        {
          key_id: keyId,
          entry_indexes: entries.map((entry) => entry.index),
          reasons: entries.map((entry) => entry.reason),
        },
        'stored allow-list entries match nothing; the key admits only its other entries',
      ),
    announce: (notice) => publishNotice(publisher, notice),
  });
  const metrics = await startMetricsServer('auth', config.METRICS_HOST, config.METRICS_PORT);
  const auditStore = new AuditStore(pool);
  const audit = new AuditLog(
    auditStore,
    auditHeadPublisher({
      redis: publisher,
      chainName: () => auditStore.chainName(),
      logger,
      registry: metrics.registry,
    }),
  );
  // For comparison with the heads published before: a log that shrank while auth was down shows here.
  auditStore.head().then(
    (head) =>
      logger.info(
        { audit_seq: head?.seq ?? 0, audit_hash: head?.hash.toString('hex') ?? null },
        'audit chain head stored at start',
      ),
    (error: unknown) => logger.warn({ err: error }, 'audit chain head not read at start'),
  );
  const configWatch = watchGatewayConfig(config.GATEWAY_CONFIG, loadedConfig, {
    apply: (next) => Object.assign(gatewayConfig, next),
    report: configReloadReporter(logger, metrics.registry, loadedConfig),
  });
  const grpc = await startGrpcServer({
    host: config.GRPC_HOST,
    port: config.GRPC_PORT,
    maxMessageBytes: config.GRPC_MAX_MESSAGE_BYTES,
    transport: config.grpcTransport,
    services: [authService(keys, new KeyEvents(pool, logger)), adminAccessService({ keys, store: accessStore, audit })],
    onHandlerFailure: logHandlerFailures(logger),
    observeCall: grpcServerMetrics(metrics.registry),
  });
  grpc.setServing(true);
  logger.info({ grpc_port: grpc.port }, 'auth serving');
  onShutdown(logger, async () => {
    configWatch.close();
    await grpc.shutdown(5_000);
    await lastUsed.stop();
    await subscription.close();
    publisher.disconnect();
    await Promise.all([pool.end(), metrics.close(), tracing.shutdown()]);
  });
});
