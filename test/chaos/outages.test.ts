import { waitUntil } from '@gw/testing';
import { chaosStack, restartInfra, startWhatStopped, stopInfraComponent, superviseService } from './chaos-stack';
import type { ChaosStack } from './chaos-stack';

/**
 * Outages of a dependency, against the real processes of the chaos stack: a revocation published
 * while Redis was down still ends the key's open stream once Redis is back, and every dependency
 * outage (PostgreSQL behind auth and metering, Redis behind quota) answers the same way: 503
 * overloaded_error with Retry-After.
 */

let stack: ChaosStack;

const print = (line: string) => process.stdout.write(`${line}\n`);

beforeAll(async () => {
  stack = chaosStack();
  await startWhatStopped(stack);
}, 180_000);

// Metering exits when its consumer gives up on PostgreSQL, for its supervisor to restart it.
afterAll(async () => {
  await superviseService(stack, 'metering');
});

async function admin<T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const response = await fetch(`${stack.adminUrl}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${stack.adminToken}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as T };
}

async function liveKey(name: string): Promise<{ keyId: string; key: string }> {
  const account = await admin<{ id: string }>('POST', '/accounts', { name, plan: 'pro' });
  expect(account.status).toBe(201);
  const created = await admin<{ id: string; key: string }>('POST', '/keys', {
    account_id: account.body.id,
    name,
    environment: 'live',
    residency: 'eu',
    privacy_mode: 'off',
  });
  expect(created.status).toBe(201);
  return { keyId: created.body.id, key: created.body.key };
}

function ask(key: string, content: string, stream: boolean): Promise<Response> {
  return fetch(`${stack.baseUrl}/v1/messages`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({
      model: 'claude-sonnet-5',
      max_tokens: 1_000,
      stream,
      messages: [{ role: 'user', content }],
    }),
  });
}

/** A stream's events as they arrive: names in order, the data of an error event, whether it ended. */
class StreamReader {
  readonly events: string[] = [];
  error: { type: string; message: string } | undefined;
  endedAt: number | undefined;
  private buffer = '';

  constructor(response: Response) {
    void this.read(response);
  }

  deltas(): number {
    return this.events.filter((event) => event === 'content_block_delta').length;
  }

  private async read(response: Response): Promise<void> {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        this.buffer += decoder.decode(chunk, { stream: true });
        let end: number;
        while ((end = this.buffer.indexOf('\n\n')) >= 0) {
          this.take(this.buffer.slice(0, end));
          this.buffer = this.buffer.slice(end + 2);
        }
      }
    } finally {
      this.endedAt = Date.now();
    }
  }

  private take(block: string): void {
    const event = /^event: (.*)$/m.exec(block)?.[1];
    if (event === undefined) return;
    this.events.push(event);
    if (event === 'error') {
      const data = JSON.parse(/^data: (.*)$/m.exec(block)![1]!) as { error: { type: string; message: string } };
      this.error = data.error;
    }
  }
}

/** The same answer for every outage: 503, the envelope with overloaded_error, and when to come back. */
async function expectOutageAnswer(response: Response, dependency: string): Promise<void> {
  const body = (await response.json()) as {
    type: string;
    error: { type: string; message: string };
    request_id: string;
  };
  print(`  ${dependency}: ${response.status} retry-after ${response.headers.get('retry-after')} ${body.error.message}`);
  expect(response.status).toBe(503);
  expect(response.headers.get('retry-after')).toMatch(/^[1-9][0-9]*$/);
  expect(response.headers.get('x-should-retry')).toBe('true');
  expect(body).toEqual({
    type: 'error',
    error: { type: 'overloaded_error', message: expect.stringMatching(/^The gateway cannot reach its .+ right now\./) },
    request_id: expect.stringMatching(/^req_/),
  });
  expect(body.error.message).toContain(dependency);
}

describe('a revocation while Redis is down', () => {
  it('ends the open stream of the revoked key once Redis is back, and the key is refused after', async () => {
    const { keyId, key } = await liveKey('revoked-in-outage');
    // The simulator echoes the words a quarter of a second apart: a stream of about a minute.
    const words = Array.from({ length: 240 }, (_, index) => `word${index}`).join(' ');
    const response = await ask(key, `sim:pace=250 ${words}`, true);
    expect(response.status).toBe(200);
    const stream = new StreamReader(response);
    await waitUntil(() => stream.deltas() >= 2, { what: 'the stream to start' });

    await stopInfraComponent('redis');
    let restartedAt = 0;
    try {
      // Auth saves the revocation, but cannot tell the gateway: the notice is lost.
      const revoked = await admin<{ error?: { type: string } }>('POST', `/keys/${keyId}/revoke`);
      print(`  revoked while Redis is down: admin answered ${revoked.status}`);
      expect([200, 503]).toContain(revoked.status);
      // The stream goes on while nothing can tell the ingress.
      const deltasAtRevocation = stream.deltas();
      await waitUntil(() => stream.deltas() >= deltasAtRevocation + 2, { what: 'the stream to go on' });
      expect(stream.endedAt).toBeUndefined();
    } finally {
      restartedAt = Date.now();
      await restartInfra();
    }

    await waitUntil(() => stream.endedAt, { what: 'the stream to end after the reconnect', timeoutMs: 30_000 });
    const endedAfterMs = stream.endedAt! - restartedAt;
    print(`  stream ended ${endedAfterMs} ms after Redis was started again, after ${stream.deltas()} deltas of 240`);
    expect(stream.error).toMatchObject({ type: 'authentication_error', message: expect.stringMatching(/revoked/) });
    expect(stream.deltas()).toBeLessThan(240);
    // Redis starts in about a second, the reconnect backs off up to 2 s, the re-verification is one call to auth.
    expect(endedAfterMs).toBeLessThan(15_000);

    const again = await ask(key, 'hello', false);
    expect(again.status).toBe(401);
    expect(((await again.json()) as { error: { type: string } }).error.type).toBe('authentication_error');
  });
});

describe('a dependency outage', () => {
  it('answers 503 overloaded_error with Retry-After alike for the key store, the usage store and the limits store', async () => {
    const used = await liveKey('outage-used');
    const unused = await liveKey('outage-never-used');
    // Verified and cached by the ingress: the usage request below reaches metering without auth. (Quota
    // may still be reconnecting to a Redis an earlier test restarted.)
    await waitUntil(
      async () => (await ask(used.key, 'hello', false)).status,
      { what: 'a first request to succeed', timeoutMs: 30_000, intervalMs: 500 },
      (status) => status === 200,
    );

    await stopInfraComponent('postgres');
    try {
      // A key never used before: no cache has it, so auth must ask PostgreSQL.
      await expectOutageAnswer(await ask(unused.key, 'hello', false), 'key store');
      const usage = await fetch(`${stack.baseUrl}/v1/usage`, { headers: { 'x-api-key': used.key } });
      await expectOutageAnswer(usage, 'usage store');
    } finally {
      await restartInfra();
    }

    await stopInfraComponent('redis');
    try {
      await expectOutageAnswer(await ask(used.key, 'hello', false), 'limits store');
    } finally {
      await restartInfra();
    }

    // Back to normal once the stores are: the key never used before now verifies.
    await waitUntil(
      async () => (await ask(unused.key, 'hello', false)).status,
      {
        what: 'requests to succeed again',
        timeoutMs: 30_000,
        intervalMs: 500,
      },
      (status) => status === 200,
    );
  });
});
