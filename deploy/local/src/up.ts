import { join, resolve } from 'node:path';
import { readEnvFile, writeEnvFile } from './env-file';
import { portsFromBase, portsWithOffset, repoRoot, stateDir } from './layout';
import { seedDemo } from './seed';
import { ensureSecrets, startInfra, startServices, writeSimWebIdentityToken } from './stack';
import { startTraceViewer, traceViewerMode } from './trace-viewer';

/** `make up`: the whole local stack in the background, healthy, seeded, described in stack.env. */
async function up(): Promise<void> {
  const state = stateDir(resolve(process.env.GW_STATE_DIR ?? join(repoRoot, '.local')));
  // GW_PORT_BASE puts the whole stack in one block of ports (tests); otherwise the ports of docs/conventions.md, shifted.
  const ports = process.env.GW_PORT_BASE
    ? portsFromBase(Number(process.env.GW_PORT_BASE))
    : portsWithOffset(Number(process.env.GW_PORT_OFFSET ?? 0));
  const infra = await startInfra(repoRoot, state, {
    postgres: Number(process.env.GW_PG_PORT ?? 5432),
    redis: Number(process.env.GW_REDIS_PORT ?? 6379),
    kafka: Number(process.env.GW_KAFKA_PORT ?? 9092),
  });
  const secrets = await ensureSecrets(state);
  // The trace viewer first, so that the services export to it from their first request.
  const traces = await startTraceViewer(repoRoot, state, ports.traces, traceViewerMode(process.env.GW_TRACE_VIEWER));
  const started = await startServices({
    repoRoot,
    state,
    ports,
    infra,
    secrets,
    gatewayConfig: process.env.GW_GATEWAY_CONFIG ?? join(repoRoot, 'deploy/local/gateway.yaml'),
    usageTopic: 'gateway.usage.v1',
    consumerGroup: 'gateway-metering',
    tracingEnv: traces && { OTEL_EXPORTER_OTLP_ENDPOINT: traces.otlpEndpoint, OTEL_BSP_SCHEDULE_DELAY: '1000' },
    // Bedrock is signed with credentials from the simulated STS, as on EKS with a service account's role.
    awsWebIdentityTokenFile: await writeSimWebIdentityToken(join(state.root, 'aws', 'web-identity-token')),
  });
  if (traces?.started) started.unshift('jaeger');
  const previous = await readEnvFile(state.stackEnv);
  // `make up` runs the services plaintext (no grpcTls): one developer's machine, every port on loopback.
  const demo = await seedDemo(
    `127.0.0.1:${ports.grpc.auth}`,
    { kind: 'plaintext' },
    {
      accountId: previous.GW_DEMO_ACCOUNT,
      testKey: previous.GW_DEMO_TEST_KEY,
      liveKey: previous.GW_DEMO_LIVE_KEY,
    },
  );
  const baseUrl = `http://127.0.0.1:${ports.http}`;
  await writeEnvFile(state.stackEnv, {
    GW_BASE_URL: baseUrl,
    GW_ADMIN_URL: `http://127.0.0.1:${ports.admin}`,
    GW_ADMIN_TOKEN: secrets.ADMIN_TOKEN,
    GW_DEMO_ACCOUNT: demo.accountId,
    GW_DEMO_TEST_KEY: demo.testKey,
    GW_DEMO_LIVE_KEY: demo.liveKey,
    GW_SIM_URLS: Object.values(ports.sim)
      .map((port) => `http://127.0.0.1:${port}`)
      .join(','),
    ...(traces && { GW_TRACES_URL: traces.url }),
  });
  process.stdout.write(
    [
      started.length > 0 ? `started: ${started.join(', ')}` : 'already running; nothing changed',
      `base URL:  ${baseUrl}`,
      `test key:  ${demo.testKey}`,
      `live key:  ${demo.liveKey}`,
      traces ? `traces:    ${traces.url}` : 'traces:    off (GW_TRACE_VIEWER)',
      `details:   ${state.stackEnv}`,
      '',
    ].join('\n'),
  );
}

up().catch((error: unknown) => {
  process.stderr.write(`make up failed: ${(error as Error).message}\n`);
  process.exit(1);
});
