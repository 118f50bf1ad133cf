"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.chaosPortOffset = exports.chaosInfraPorts = exports.chaosState = void 0;
exports.infraPid = infraPid;
exports.stopInfraComponent = stopInfraComponent;
exports.restartInfra = restartInfra;
exports.servicePid = servicePid;
exports.killService = killService;
exports.stopService = stopService;
exports.startService = startService;
exports.superviseService = superviseService;
exports.chaosStack = chaosStack;
exports.startChaosStack = startChaosStack;
exports.stopChaosStack = stopChaosStack;
const node_crypto_1 = require("node:crypto");
const node_fs_1 = require("node:fs");
const promises_1 = require("node:fs/promises");
const node_path_1 = require("node:path");
const promises_2 = require("node:timers/promises");
const kafka_1 = require("@gw/kafka");
const local_stack_1 = require("@gw/local-stack");
/**
 * A whole stack of its own for the chaos tests, which stop and start infrastructure: its own state
 * directory, its own PostgreSQL, Redis and Kafka (infra.sh on other ports) and its own service ports.
 * Nothing here touches the tests' shared infrastructure or a developer's `make up`.
 */
exports.chaosState = (0, local_stack_1.stateDir)((0, node_path_1.join)(local_stack_1.repoRoot, '.local', 'chaos'));
exports.chaosInfraPorts = { postgres: 35432, redis: 36379, kafka: 39092 };
/** 13080, 13081, 55051-55055, 14464-14469, 14101-14102: none on fetch's bad-port list. */
exports.chaosPortOffset = 5_000;
const log = (line) => process.stdout.write(`chaos: ${line}\n`);
function alive(pid) {
    try {
        process.kill(pid, 0);
        return true;
    }
    catch {
        return false;
    }
}
async function waitGone(pid, timeoutMs) {
    const deadline = Date.now() + timeoutMs;
    while (alive(pid)) {
        if (Date.now() > deadline)
            return false;
        await (0, promises_2.setTimeout)(100);
    }
    return true;
}
/** The pid of an infrastructure process this state directory started, checked as infra.sh does (by cwd). */
async function infraPid(component) {
    const pid = Number((await (0, promises_1.readFile)((0, node_path_1.join)(exports.chaosState.run, `${component}.pid`), 'utf8')).split('\n')[0]);
    const dir = component === 'postgres' ? (0, node_path_1.join)(exports.chaosState.root, 'postgres', 'data') : (0, node_path_1.join)(exports.chaosState.root, 'kafka');
    const cwd = await (0, promises_1.readlink)(`/proc/${pid}/cwd`).catch(() => '');
    if (!Number.isInteger(pid) || pid <= 0 || cwd !== dir) {
        throw new Error(`${component}: no running process of the chaos stack (pid file says ${pid}, cwd ${cwd || 'none'})`);
    }
    return pid;
}
/**
 * Stops PostgreSQL or Kafka of the chaos stack by the pid infra.sh recorded. PostgreSQL gets SIGINT
 * (its "fast" shutdown: transactions in progress are aborted, clients disconnected); Kafka SIGTERM
 * (its controlled shutdown). SIGKILL after 60 s.
 */
async function stopInfraComponent(component) {
    const pid = await infraPid(component);
    process.kill(pid, component === 'postgres' ? 'SIGINT' : 'SIGTERM');
    if (!(await waitGone(pid, 60_000))) {
        process.kill(pid, 'SIGKILL');
        await waitGone(pid, 10_000);
    }
}
/** Starts what is not running through infra.sh up, as `make up` does. */
function restartInfra() {
    return (0, local_stack_1.startInfra)(local_stack_1.repoRoot, exports.chaosState, exports.chaosInfraPorts);
}
function specOf(stack, name) {
    const spec = (0, local_stack_1.processSpecs)(stack.options).find((candidate) => candidate.name === name);
    if (!spec)
        throw new Error(`no process spec for ${name}`);
    return spec;
}
/** The pid of a running service of the chaos stack (its pid file, and its command line names its script). */
async function servicePid(stack, name) {
    const pid = await (0, local_stack_1.pidOf)(exports.chaosState, name);
    if (pid === undefined)
        return undefined;
    const cmdline = await (0, promises_1.readFile)(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    return cmdline.includes(specOf(stack, name).script) ? pid : undefined;
}
async function killService(stack, name) {
    const pid = await servicePid(stack, name);
    if (pid === undefined)
        throw new Error(`${name} is not running`);
    process.kill(pid, 'SIGKILL');
    if (!(await waitGone(pid, 10_000)))
        throw new Error(`${name} (pid ${pid}) survived SIGKILL`);
    return pid;
}
/** SIGTERM (SIGKILL after 8 s, as stopProcess does); resolves once the process is gone. */
function stopService(name) {
    return (0, local_stack_1.stopProcess)(exports.chaosState, name);
}
async function startService(stack, name, timeoutMs = 90_000) {
    const spec = specOf(stack, name);
    await (0, local_stack_1.startProcess)(exports.chaosState, local_stack_1.repoRoot, spec);
    await (0, local_stack_1.waitHealthy)(exports.chaosState, [spec], timeoutMs);
}
/**
 * Starts a service of the stack again if it exited (metering exits when its consumer stops for good,
 * so that its supervisor restarts it; the local stack has no supervisor). Returns whether it did.
 */
async function superviseService(stack, name) {
    if ((await servicePid(stack, name)) !== undefined)
        return false;
    log(`${name} had exited; starting it again as a supervisor would (see ${(0, node_path_1.join)(exports.chaosState.logs, `${name}.log`)})`);
    await startService(stack, name);
    return true;
}
/** Stops whatever a previous, interrupted run of this state directory left running. */
async function stopLeftovers() {
    if (!(0, node_fs_1.existsSync)(exports.chaosState.root))
        return;
    for (const name of [...local_stack_1.serviceNames].reverse()) {
        const pid = await (0, local_stack_1.pidOf)(exports.chaosState, name);
        if (pid === undefined)
            continue;
        const cmdline = await (0, promises_1.readFile)(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
        if (cmdline.includes('/dist/main.js'))
            await (0, local_stack_1.stopProcess)(exports.chaosState, name);
    }
    await (0, local_stack_1.stopInfra)(local_stack_1.repoRoot, exports.chaosState);
}
/** Where the global setup describes the stack it started, for the tests. */
const harnessFile = (0, node_path_1.join)(exports.chaosState.root, 'harness.json');
function chaosStack() {
    return JSON.parse((0, node_fs_1.readFileSync)(harnessFile, 'utf8'));
}
/**
 * A fresh state directory, infrastructure, topic and services (from the global setup: the migrations
 * are an ES module, which a test file's sandbox cannot import).
 */
async function startChaosStack() {
    await stopLeftovers();
    await (0, promises_1.rm)(exports.chaosState.root, { recursive: true, force: true });
    const infra = await (0, local_stack_1.startInfra)(local_stack_1.repoRoot, exports.chaosState, exports.chaosInfraPorts);
    const suffix = (0, node_crypto_1.randomBytes)(4).toString('hex');
    const usageTopic = `gateway.usage.v1.chaos-${suffix}`;
    const consumerGroup = `gateway-metering-chaos-${suffix}`;
    const kafka = (0, kafka_1.createKafka)({ brokers: infra.kafkaBrokers.split(','), clientId: 'chaos-setup', log: () => undefined });
    await (0, kafka_1.ensureTopics)(kafka, [{ topic: usageTopic, numPartitions: 6 }]);
    const ports = (0, local_stack_1.portsWithOffset)(exports.chaosPortOffset);
    const secrets = await (0, local_stack_1.ensureSecrets)(exports.chaosState);
    const options = {
        repoRoot: local_stack_1.repoRoot,
        state: exports.chaosState,
        ports,
        infra,
        secrets,
        gatewayConfig: (0, node_path_1.join)(local_stack_1.repoRoot, 'deploy/local/gateway.yaml'),
        usageTopic,
        consumerGroup,
    };
    await (0, local_stack_1.startServices)(options, 90_000);
    const stack = {
        options,
        ports,
        infra,
        baseUrl: `http://127.0.0.1:${ports.http}`,
        adminUrl: `http://127.0.0.1:${ports.admin}`,
        adminToken: secrets.ADMIN_TOKEN,
        usageTopic,
        consumerGroup,
    };
    await (0, promises_1.writeFile)(harnessFile, JSON.stringify(stack, null, 2));
    return stack;
}
/** Stops every service and the infrastructure of the chaos state directory; never throws. */
async function stopChaosStack() {
    await (0, local_stack_1.stopServices)({ state: exports.chaosState }, local_stack_1.serviceNames).catch((error) => log(`stopping the services failed: ${error.message}`));
    await (0, local_stack_1.stopInfra)(local_stack_1.repoRoot, exports.chaosState).catch((error) => log(`stopping the infrastructure failed: ${error.message}`));
}
