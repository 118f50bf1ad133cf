import { readdir } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { waitUntil } from '@gw/testing';
import {
  chaosStack,
  chaosState,
  restartInfra,
  servicePid,
  startService,
  stopInfraComponent,
  superviseService,
  waitGone,
} from './chaos-stack';
import type { ChaosStack, ServiceName } from './chaos-stack';
import { Load, model } from './load';
import { meteredEvents, spoolDepth, waitUntilSettled } from './metered';

/**
 * Graceful stops, as a rolling update or a scale-in sends them: on SIGTERM a service takes no new
 * connection or call, finishes the streams in flight (whole, up to its SHUTDOWN_GRACE_MS), and ingress
 * then delivers its whole usage spool to Kafka before it exits, leaving nothing on its volume.
 */

let stack: ChaosStack;

const print = (line: string) => process.stdout.write(`${line}\n`);
const seconds = (ms: number) => `${(ms / 1_000).toFixed(1)} s`;

async function admin<T>(method: string, path: string, body: unknown): Promise<T> {
  const response = await fetch(`${stack.adminUrl}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${stack.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`admin ${method} ${path}: ${response.status} ${text}`);
  return JSON.parse(text) as T;
}

async function liveAccount(name: string): Promise<{ accountId: string; key: string }> {
  const account = await admin<{ id: string }>('POST', '/accounts', { name, plan: 'pro' });
  await admin('PATCH', `/accounts/${account.id}/limits`, { requests_per_minute: 100_000, concurrency: 200 });
  const key = await admin<{ key: string }>('POST', '/keys', {
    account_id: account.id,
    name,
    environment: 'live',
    residency: 'eu',
    privacy_mode: 'off',
  });
  return { accountId: account.id, key: key.key };
}

/** The simulated upstream echoes it word by word, 200 ms apart: a stream of 6 s, whole only if the text comes back. */
const slowPrompt = `${Array.from({ length: 29 }, (_, index) => `word${index}`).join(' ')} sim:pace=200`;

function slowStream(key: string) {
  const sdk = new Anthropic({ baseURL: stack.baseUrl, apiKey: key, maxRetries: 0, timeout: 120_000 });
  return sdk.messages.stream({ model, max_tokens: 200, messages: [{ role: 'user', content: slowPrompt }] });
}

/** The stream's message came back whole: all the echoed text, ended by the upstream. */
function expectWhole(message: Anthropic.Message): void {
  expect(message.stop_reason).toBe('end_turn');
  expect(message.content.map((block) => (block.type === 'text' ? block.text : '')).join('')).toBe(slowPrompt);
  expect(message.usage.output_tokens).toBe(30);
}

/** Whether a new TCP connection to the port is refused. */
function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'));
  });
}

/** SIGTERM to a service of the stack; resolves with its pid and the time of the signal. */
async function terminate(name: ServiceName): Promise<{ pid: number; at: number }> {
  const pid = await servicePid(stack, name);
  if (pid === undefined) throw new Error(`${name} is not running`);
  process.kill(pid, 'SIGTERM');
  return { pid, at: Date.now() };
}

async function spoolSegments(): Promise<string[]> {
  const names = await readdir(join(chaosState.root, 'spool', 'ingress')).catch(() => [] as string[]);
  return names.filter((name) => name.endsWith('.spool'));
}

describe('graceful stops', () => {
  beforeAll(() => {
    stack = chaosStack();
  });

  beforeEach(async () => {
    await restartInfra();
    for (const name of ['metering', 'router', 'ingress'] as const) await superviseService(stack, name);
  }, 180_000);

  it('ingress on SIGTERM refuses new connections, finishes the open stream, delivers its whole spool, then exits', async () => {
    const { accountId, key } = await liveAccount('graceful-ingress');
    // Usage parked while Kafka is away: ingress's drainer backs off for longer and longer.
    await stopInfraComponent('kafka');
    const parked = await new Load({
      baseUrl: stack.baseUrl,
      apiKey: key,
      requests: 30,
      concurrency: 6,
      ratePerSecond: 15,
    }).run();
    expect(parked.completed.length).toBe(30);
    await restartInfra();

    const stream = slowStream(key);
    const firstText = new Promise<void>((resolve) => stream.once('text', () => resolve()));
    await firstText;
    const parkedAtStop = await spoolDepth(stack);
    const { pid, at } = await terminate('ingress');
    // The listener is closed at once: a load balancer that still sent here would be refused, not hang.
    await waitUntil(() => refused(stack.ports.http), {
      what: 'the HTTP port closed',
      timeoutMs: 2_000,
      intervalMs: 20,
    });
    const refusedMs = Date.now() - at;
    const message = await stream.finalMessage();
    const streamEndedMs = Date.now() - at;
    expect(await waitGone(pid, 30_000)).toBe(true);
    const exitedMs = Date.now() - at;
    const left = await spoolSegments();
    print(
      `graceful: ingress SIGTERM with a stream open and ${parkedAtStop} events parked in its spool: port refused ` +
        `after ${seconds(refusedMs)}, stream ended whole after ${seconds(streamEndedMs)} (${message.usage.output_tokens} ` +
        `tokens, ${message.stop_reason}), exited after ${seconds(exitedMs)} leaving ${left.length} spool segment(s)`,
    );
    expectWhole(message);
    // The spool was delivered whole before the exit: nothing waits on the volume.
    expect(parkedAtStop).toBeGreaterThan(0);
    expect(left).toEqual([]);

    await startService(stack, 'ingress');
    const settled = await waitUntilSettled(stack, accountId, 60_000);
    expect(settled.settled).toBe(true);
    const events = await meteredEvents(stack.infra.databaseUrl, accountId);
    const ids = events.map((event) => event.eventId).sort();
    const expected = [
      ...parked.completed.map((request) => request.requestId),
      stream.request_id ?? 'no request id',
    ].sort();
    expect(ids).toEqual(expected);
  }, 240_000);

  it('the router on SIGTERM finishes the stream it carries before it exits', async () => {
    const { key } = await liveAccount('graceful-router');
    const stream = slowStream(key);
    await new Promise<void>((resolve) => stream.once('text', () => resolve()));
    const { pid, at } = await terminate('router');
    const message = await stream.finalMessage();
    const streamEndedMs = Date.now() - at;
    expect(await waitGone(pid, 30_000)).toBe(true);
    const exitedMs = Date.now() - at;
    print(
      `graceful: router SIGTERM with a stream open: stream ended whole after ${seconds(streamEndedMs)} ` +
        `(${message.usage.output_tokens} tokens), router exited after ${seconds(exitedMs)}`,
    );
    expectWhole(message);
    expect(exitedMs).toBeGreaterThanOrEqual(streamEndedMs - 100);
    await startService(stack, 'router');
  }, 240_000);
});
