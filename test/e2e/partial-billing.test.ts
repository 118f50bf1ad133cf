import { request } from 'node:http';
import Redis from 'ioredis';
import { estimateInputTokens } from '@gw/sim-upstream';
import { waitUntil } from '@gw/testing';
import { harness } from './harness';
import { admin, rawRequest } from './http';
import { waitForUsageRow } from './usage';

const h = harness();
const model = 'claude-sonnet-5';

interface SseEvent {
  event: string;
  data: string;
}

/** A streamed POST /v1/messages as it arrives: the events so far, and a way to hang up. */
interface OpenStream {
  requestId: string;
  status: number;
  events: SseEvent[];
  /** Resolves when the response ended or the connection closed. */
  closed: Promise<void>;
  hangUp(): void;
}

function openStream(key: string, body: unknown): Promise<OpenStream> {
  return new Promise((resolve, reject) => {
    const outgoing = request(`${h.baseUrl}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
    });
    outgoing.on('error', reject);
    outgoing.on('response', (response) => {
      const events: SseEvent[] = [];
      let pending = '';
      response.setEncoding('utf8');
      response.on('data', (text: string) => {
        pending += text;
        for (let end = pending.indexOf('\n\n'); end >= 0; end = pending.indexOf('\n\n')) {
          const block = pending.slice(0, end);
          pending = pending.slice(end + 2);
          const field = (name: string) =>
            block
              .split('\n')
              .find((line) => line.startsWith(`${name}: `))
              ?.slice(name.length + 2) ?? '';
          events.push({ event: field('event'), data: field('data') });
        }
      });
      // A hang-up on purpose ends the response with an error: that is the point, not a failure.
      response.on('error', () => undefined);
      resolve({
        requestId: String(response.headers['request-id']),
        status: response.statusCode ?? 0,
        events,
        closed: new Promise((done) => response.once('close', done)),
        hangUp: () => outgoing.destroy(),
      });
    });
    outgoing.end(JSON.stringify(body));
  });
}

const contentDeltas = (stream: OpenStream) => stream.events.filter((item) => item.event === 'content_block_delta');

async function liveAccount(): Promise<{ accountId: string; key: string }> {
  const account = await admin<{ id: string }>(h, 'POST', '/accounts', { name: 'partial billing', plan: 'pro' });
  expect(account.status).toBe(201);
  const key = await admin<{ key: string }>(h, 'POST', '/keys', {
    account_id: account.body.id,
    name: 'partial billing',
    environment: 'live',
    residency: 'eu',
    privacy_mode: 'off',
  });
  expect(key.status).toBe(201);
  return { accountId: account.body.id, key: key.body.key };
}

/** Quota's allowance counter of a live account for this month (services/quota/src/limits.ts). */
const allowanceCounter = (accountId: string) =>
  `q:{a:${accountId}:live}:tokens:${new Date().toISOString().slice(0, 7)}`;

async function tokensUsed(key: string): Promise<number> {
  const response = await rawRequest(`${h.baseUrl}/v1/usage`, { method: 'GET', headers: { 'x-api-key': key } });
  expect(response.status).toBe(200);
  return (JSON.parse(response.body) as { tokens: { used: number } }).tokens.used;
}

/** A streamed request whose last user message the simulated upstream echoes word by word. */
const streamedAsk = (content: string) => ({
  model,
  max_tokens: 64,
  stream: true,
  messages: [{ role: 'user', content }],
});

const words = 'alpha bravo charlie delta echo foxtrot golf hotel india juliet';
const deltasBeforeTheEnd = 4;

describe('a stream that ends early is billed for its input and the output so far', () => {
  const redis = new Redis(h.replica.redisUrl);
  afterAll(() => redis.disconnect());

  /**
   * The three places a request's tokens reach: its usage event in Postgres, `/v1/usage` (metered
   * aggregates) and quota's allowance counter in Redis. Each must move by exactly `billable`.
   */
  async function expectBilledEverywhere(
    account: { accountId: string; key: string },
    counterBefore: number,
    requestId: string,
    expected: {
      input: number;
      output: number;
      outcome: string;
      errorType: string | null;
      streamed?: boolean;
      cacheRead?: number;
    },
  ): Promise<void> {
    const billable = expected.input + expected.output + Math.ceil((expected.cacheRead ?? 0) / 10);
    const row = await waitForUsageRow(h.databaseUrl, requestId);
    expect({
      outcome: row.outcome,
      error_type: row.error_type || null,
      streamed: row.streamed,
      input_tokens: Number(row.input_tokens),
      output_tokens: Number(row.output_tokens),
      cache_read_input_tokens: Number(row.cache_read_input_tokens),
      billable_tokens: Number(row.billable_tokens),
    }).toEqual({
      outcome: expected.outcome,
      error_type: expected.errorType,
      streamed: expected.streamed ?? true,
      input_tokens: expected.input,
      output_tokens: expected.output,
      cache_read_input_tokens: expected.cacheRead ?? 0,
      billable_tokens: billable,
    });
    // A fresh account: everything it used is this one request.
    expect(await tokensUsed(account.key)).toBe(billable);
    // The release that charges the counter is retried until quota has it; it may land after the event.
    const counter = await waitUntil(
      async () => Number((await redis.get(allowanceCounter(account.accountId))) ?? 0),
      { what: 'the allowance counter to be charged' },
      (value) => value !== counterBefore,
    );
    expect(counter - counterBefore).toBe(billable);
  }

  it('bills input + N when the client reads N content deltas and hangs up', async () => {
    const account = await liveAccount();
    const counterBefore = Number((await redis.get(allowanceCounter(account.accountId))) ?? 0);
    // Paced so that no further delta can be relayed between the N-th and the hang-up.
    const body = streamedAsk(`sim:pace=400 ${words}`);
    const stream = await openStream(account.key, body);
    expect(stream.status).toBe(200);
    await waitUntil(
      () => contentDeltas(stream).length,
      { what: `${deltasBeforeTheEnd} content deltas` },
      (seen) => seen >= deltasBeforeTheEnd,
    );
    stream.hangUp();
    await stream.closed;
    expect(contentDeltas(stream)).toHaveLength(deltasBeforeTheEnd);
    expect(stream.events.some((item) => item.event === 'message_stop')).toBe(false);

    const start = JSON.parse(stream.events.find((item) => item.event === 'message_start')!.data) as {
      message: { usage: { input_tokens: number } };
    };
    const input = estimateInputTokens(body);
    expect(start.message.usage.input_tokens).toBe(input);
    await expectBilledEverywhere(account, counterBefore, stream.requestId, {
      input,
      output: deltasBeforeTheEnd,
      outcome: 'client_cancelled',
      errorType: null,
    });
  });

  it.each([
    ['an error event', `sim:stream-error-after=${deltasBeforeTheEnd}`, 'overloaded_error'],
    ['a broken connection', `sim:drop-after=${deltasBeforeTheEnd}`, 'api_error'],
  ])('bills input + N when the upstream fails after N deltas with %s', async (_failure, directive, errorType) => {
    const account = await liveAccount();
    const counterBefore = Number((await redis.get(allowanceCounter(account.accountId))) ?? 0);
    const body = streamedAsk(`${directive} ${words}`);
    const stream = await openStream(account.key, body);
    expect(stream.status).toBe(200);
    await stream.closed;
    expect(contentDeltas(stream)).toHaveLength(deltasBeforeTheEnd);
    const last = stream.events.at(-1)!;
    expect(last.event).toBe('error');
    expect((JSON.parse(last.data) as { error: { type: string } }).error.type).toBe(errorType);
    expect(stream.events.some((item) => item.event === 'message_stop')).toBe(false);

    await expectBilledEverywhere(account, counterBefore, stream.requestId, {
      input: estimateInputTokens(body),
      output: deltasBeforeTheEnd,
      outcome: 'upstream_error',
      errorType,
    });
  });

  it.each([true, false])(
    'bills the input of a request the client cancels before the response headers (streamed %s)',
    async (stream) => {
      const account = await liveAccount();
      const counterBefore = Number((await redis.get(allowanceCounter(account.accountId))) ?? 0);
      const marker = `cancelled-before-headers-${stream}-${Date.now()}`;
      const body = { ...streamedAsk(`sim:latency=10000 ${marker} ${words}`), stream };
      const outgoing = request(`${h.baseUrl}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': account.key },
      });
      let answered = false;
      outgoing.on('response', () => (answered = true));
      outgoing.on('error', () => undefined);
      outgoing.end(JSON.stringify(body));
      // The upstream has the request (its answer is 10 s away): the client gives up before any header.
      const received = await waitUntil(
        () => upstreamRequestWith(marker),
        { what: 'the upstream to receive the request' },
        (found) => found !== undefined,
      );
      outgoing.destroy();
      expect(answered).toBe(false);
      await expectBilledEverywhere(account, counterBefore, String(received!.headers['x-request-id']), {
        input: estimateInputTokens(body),
        output: 0,
        outcome: 'client_cancelled',
        errorType: null,
        streamed: stream,
      });
    },
  );

  it('gives an absurd upstream count one result in Postgres, /v1/usage and Redis: capped to 10^12', async () => {
    const account = await liveAccount();
    const counterBefore = Number((await redis.get(allowanceCounter(account.accountId))) ?? 0);
    const body = streamedAsk(`sim:cache-read=50000000000000 ${words}`);
    const stream = await openStream(account.key, body);
    expect(stream.status).toBe(200);
    await stream.closed;
    expect(stream.events.some((item) => item.event === 'message_stop')).toBe(true);
    await expectBilledEverywhere(account, counterBefore, stream.requestId, {
      input: estimateInputTokens(body),
      output: (
        JSON.parse(stream.events.filter((item) => item.event === 'message_delta').at(-1)!.data) as {
          usage: { output_tokens: number };
        }
      ).usage.output_tokens,
      cacheRead: 10 ** 12,
      outcome: 'success',
      errorType: null,
    });
  });
});

interface RecordedRequest {
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

/** The request an upstream listener received whose body holds `marker`, if any did. */
async function upstreamRequestWith(marker: string): Promise<RecordedRequest | undefined> {
  for (const url of h.simUrls) {
    const recorded = (await (await fetch(`${url}/_sim/requests`)).json()) as RecordedRequest[];
    const found = recorded.find((entry) => JSON.stringify(entry.body).includes(marker));
    if (found !== undefined) return found;
  }
  return undefined;
}
