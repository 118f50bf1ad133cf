import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { copyFile, mkdir, readFile, readlink, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { createKafka, ensureTopics } from '@gw/kafka';
import {
  ensureSecrets,
  kafkaConnection,
  pidOf,
  portsFromBase,
  processSpecs,
  repoRoot,
  serviceNames,
  startInfra,
  startProcess,
  startServices,
  stateDir,
  stopInfra,
  stopProcess,
  stopServices,
  waitHealthy,
} from '@gw/local-stack';
import type { Infra, InfraPorts, Ports, StackOptions, StateDir } from '@gw/local-stack';
import { waitUntil } from '@gw/testing';

/**
 * A whole stack of its own for the chaos tests, which stop and start infrastructure: its own state
 * directory, its own PostgreSQL, Redis and Kafka (infra.sh on other ports) and its own service ports.
 * Nothing here touches the tests' shared infrastructure or a developer's `make up`.
 * CHAOS_STATE_DIR and CHAOS_PORT_BASE move it (the soak run, test/soak, uses them to run beside the suite).
 */
export const chaosState: StateDir = stateDir(process.env.CHAOS_STATE_DIR ?? join(repoRoot, '.local', 'chaos'));
/** 23000-23033 and 23092-23432 by default: none on fetch's bad-port list, all below the ephemeral range. */
export const chaosPortBase = Number(process.env.CHAOS_PORT_BASE ?? 23_000);
export const chaosInfraPorts: InfraPorts = {
  postgres: chaosPortBase + 432,
  redis: chaosPortBase + 379,
  kafka: chaosPortBase + 92,
};

export type InfraComponent = 'postgres' | 'kafka' | 'redis';
export type ServiceName = 'metering' | 'ingress' | 'router';

export interface ChaosStack {
  options: StackOptions;
  ports: Ports;
  infra: Infra;
  baseUrl: string;
  adminUrl: string;
  adminToken: string;
  usageTopic: string;
  consumerGroup: string;
}

const log = (line: string) => process.stdout.write(`chaos: ${line}\n`);

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export async function waitGone(pid: number, timeoutMs: number): Promise<boolean> {
  return waitUntil(() => !alive(pid), { what: `process ${pid} to end`, timeoutMs, intervalMs: 100 }).catch(() => false);
}

/** The pid of an infrastructure process this state directory started, checked as infra.sh does (by cwd). */
export async function infraPid(component: InfraComponent): Promise<number> {
  const pid = Number((await readFile(join(chaosState.run, `${component}.pid`), 'utf8')).split('\n')[0]);
  const dir = component === 'postgres' ? join(chaosState.root, 'postgres', 'data') : join(chaosState.root, component);
  const cwd = await readlink(`/proc/${pid}/cwd`).catch(() => '');
  if (!Number.isInteger(pid) || pid <= 0 || cwd !== dir) {
    throw new Error(`${component}: no running process of the chaos stack (pid file says ${pid}, cwd ${cwd || 'none'})`);
  }
  return pid;
}

/**
 * Stops PostgreSQL, Kafka or Redis of the chaos stack by the pid infra.sh recorded. PostgreSQL gets
 * SIGINT (its "fast" shutdown: transactions in progress are aborted, clients disconnected); Kafka and
 * Redis SIGTERM (a controlled shutdown). SIGKILL after 60 s.
 */
export async function stopInfraComponent(component: InfraComponent): Promise<void> {
  const pid = await infraPid(component);
  process.kill(pid, component === 'postgres' ? 'SIGINT' : 'SIGTERM');
  if (!(await waitGone(pid, 60_000))) {
    process.kill(pid, 'SIGKILL');
    await waitGone(pid, 10_000);
  }
}

/** Starts what is not running through infra.sh up, as `make up` does. */
export function restartInfra(): Promise<Infra> {
  return startInfra(repoRoot, chaosState, chaosInfraPorts);
}

function specOf(stack: ChaosStack, name: ServiceName) {
  const spec = processSpecs(stack.options).find((candidate) => candidate.name === name);
  if (!spec) throw new Error(`no process spec for ${name}`);
  return spec;
}

/** The pid of a running service of the chaos stack (its pid file, and its command line names its script). */
export async function servicePid(stack: ChaosStack, name: ServiceName): Promise<number | undefined> {
  const pid = await pidOf(chaosState, name);
  if (pid === undefined) return undefined;
  const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
  return cmdline.includes(specOf(stack, name).script) ? pid : undefined;
}

export async function killService(stack: ChaosStack, name: ServiceName): Promise<number> {
  const pid = await servicePid(stack, name);
  if (pid === undefined) throw new Error(`${name} is not running`);
  process.kill(pid, 'SIGKILL');
  if (!(await waitGone(pid, 10_000))) throw new Error(`${name} (pid ${pid}) survived SIGKILL`);
  return pid;
}

/**
 * SIGTERM, then SIGKILL after 8 s (the grace of stopProcess, which `make down` uses); resolves once
 * the process is gone, telling whether it exited by itself.
 */
export async function stopService(stack: ChaosStack, name: ServiceName): Promise<{ graceful: boolean }> {
  const pid = await servicePid(stack, name);
  if (pid === undefined) throw new Error(`${name} is not running`);
  process.kill(pid, 'SIGTERM');
  const graceful = await waitGone(pid, 8_000);
  if (!graceful) {
    process.kill(pid, 'SIGKILL');
    if (!(await waitGone(pid, 10_000))) throw new Error(`${name} (pid ${pid}) survived SIGKILL`);
  }
  await rm(join(chaosState.run, `${name}.pid`), { force: true });
  return { graceful };
}

export async function startService(stack: ChaosStack, name: ServiceName, timeoutMs = 90_000): Promise<void> {
  const spec = specOf(stack, name);
  await startProcess(chaosState, repoRoot, spec);
  await waitHealthy(chaosState, [spec], timeoutMs);
}

/**
 * Starts a service of the stack again if it exited (metering exits when its consumer stops for good,
 * so that its supervisor restarts it; the local stack has no supervisor). Returns whether it did.
 */
export async function superviseService(stack: ChaosStack, name: ServiceName): Promise<boolean> {
  if ((await servicePid(stack, name)) !== undefined) return false;
  log(`${name} had exited; starting it again as a supervisor would (see ${join(chaosState.logs, `${name}.log`)})`);
  await startService(stack, name);
  return true;
}

/**
 * Starts whatever of the stack is not running (infrastructure, then services), so that a test file
 * finds the stack whole whatever the files before it stopped and left stopped.
 */
export async function startWhatStopped(stack: ChaosStack): Promise<void> {
  await restartInfra();
  // Not startServices: its migrations are an ES module, which a test file's sandbox cannot import.
  const specs = processSpecs(stack.options);
  for (const spec of specs) {
    if ((await pidOf(chaosState, spec.name)) !== undefined) continue;
    log(`${spec.name} was not running; starting it`);
    await startProcess(chaosState, repoRoot, spec);
  }
  await waitHealthy(chaosState, specs, 90_000);
}

/** Stops whatever a previous, interrupted run of this state directory left running. */
async function stopLeftovers(): Promise<void> {
  if (!existsSync(chaosState.root)) return;
  for (const name of [...serviceNames].reverse()) {
    const pid = await pidOf(chaosState, name);
    if (pid === undefined) continue;
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.includes('/dist/main.js')) await stopProcess(chaosState, name);
  }
  await stopInfra(repoRoot, chaosState);
}

/**
 * The stack's own copy of the gateway YAML, which a test may edit while the stack runs (the services
 * reload it); tests that edit it put the original back.
 */
export const chaosGatewayConfig = join(chaosState.root, 'config', 'gateway.yaml');

/** Where the global setup describes the stack it started, for the tests. */
const harnessFile = join(chaosState.root, 'harness.json');

export function chaosStack(): ChaosStack {
  return JSON.parse(readFileSync(harnessFile, 'utf8')) as ChaosStack;
}

/**
 * A fresh state directory, infrastructure, topic and services (from the global setup: the migrations
 * are an ES module, which a test file's sandbox cannot import). `nodeFlags` go to every process, also when a
 * test starts one again.
 */
export async function startChaosStack(nodeFlags?: string[]): Promise<ChaosStack> {
  await stopLeftovers();
  await rm(chaosState.root, { recursive: true, force: true });
  const infra = await startInfra(repoRoot, chaosState, chaosInfraPorts);
  const suffix = randomBytes(4).toString('hex');
  const usageTopic = `gateway.usage.v1.chaos-${suffix}`;
  const consumerGroup = `gateway-metering-chaos-${suffix}`;
  const kafka = createKafka({ ...kafkaConnection(infra), clientId: 'chaos-setup', log: () => undefined });
  await ensureTopics(kafka, [{ topic: usageTopic, numPartitions: 6 }]);
  await mkdir(dirname(chaosGatewayConfig), { recursive: true });
  await copyFile(join(repoRoot, 'deploy/local/gateway.yaml'), chaosGatewayConfig);
  const ports = portsFromBase(chaosPortBase);
  const secrets = await ensureSecrets(chaosState);
  const options: StackOptions = {
    repoRoot,
    state: chaosState,
    ports,
    infra,
    secrets,
    gatewayConfig: chaosGatewayConfig,
    usageTopic,
    consumerGroup,
    nodeFlags,
  };
  await startServices(options, 90_000);
  const stack: ChaosStack = {
    options,
    ports,
    infra,
    baseUrl: `http://127.0.0.1:${ports.http}`,
    adminUrl: `http://127.0.0.1:${ports.admin}`,
    adminToken: secrets.ADMIN_TOKEN,
    usageTopic,
    consumerGroup,
  };
  await writeFile(harnessFile, JSON.stringify(stack, null, 2));
  return stack;
}

/** Stops every service and the infrastructure of the chaos state directory; never throws. */
export async function stopChaosStack(): Promise<void> {
  await stopServices({ state: chaosState }, serviceNames).catch((error: unknown) =>
    log(`stopping the services failed: ${(error as Error).message}`),
  );
  await stopInfra(repoRoot, chaosState).catch((error: unknown) =>
    log(`stopping the infrastructure failed: ${(error as Error).message}`),
  );
}
