import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'node:http';
import Anthropic from '@anthropic-ai/sdk';
import { harness } from './harness';
import { admin } from './http';

const h = harness();
const MiB = 1024 * 1024;
/** The starter plan's body limit in deploy/local/gateway.yaml. */
const starterBodyLimitBytes = 1 * MiB;
/** The gateway's own limit (ingress BODY_LIMIT_BYTES, not set by the test stack); plans without one get it. */
const gatewayBodyLimitBytes = 32 * MiB;

async function keyFor(
  plan: string,
  environment: 'live' | 'test',
  privacyMode: 'off' | 'redact' = 'off',
): Promise<string> {
  const account = await admin<{ id: string }>(h, 'POST', '/accounts', { name: `bodies-${plan}`, plan });
  const key = await admin<{ key: string }>(h, 'POST', '/keys', {
    account_id: account.body.id,
    name: 'bodies',
    environment,
    residency: 'eu',
    privacy_mode: privacyMode,
  });
  expect(key.status).toBe(201);
  return key.body.key;
}

const sdk = (apiKey: string) => new Anthropic({ baseURL: h.baseUrl, apiKey, maxRetries: 0 });

/** A Messages request whose JSON body is `textBytes` and a little more. */
const askWithText = (textBytes: number) => ({
  model: 'claude-sonnet-5',
  max_tokens: 16,
  messages: [{ role: 'user' as const, content: 'x'.repeat(textBytes) }],
});

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * POSTs `body` as a chunked upload (no Content-Length) in 64 KiB pieces, as fast as the connection takes
 * them. Rejects when the connection fails before the answer arrived; the upload may be cut after it.
 */
function chunkedUpload(path: string, apiKey: string, body: Buffer): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const outgoing = request(`${h.baseUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
    });
    outgoing.on('response', (response) => {
      const parts: Buffer[] = [];
      response.on('data', (part: Buffer) => parts.push(part));
      response.on('end', () =>
        resolve({
          status: response.statusCode ?? 0,
          headers: response.headers,
          body: Buffer.concat(parts).toString('utf8'),
        }),
      );
    });
    outgoing.on('error', reject);
    let offset = 0;
    const writeMore = () => {
      while (offset < body.length && !outgoing.destroyed) {
        const piece = body.subarray(offset, offset + 64 * 1024);
        offset += piece.length;
        if (!outgoing.write(piece)) return void outgoing.once('drain', writeMore);
      }
      if (!outgoing.destroyed) outgoing.end();
    };
    writeMore();
  });
}

/** Runs `count` calls of `attempt`, `parallel` at a time. */
async function repeat<T>(count: number, parallel: number, attempt: () => Promise<T>): Promise<T[]> {
  const results: T[] = [];
  while (results.length < count) {
    const batch = Math.min(parallel, count - results.length);
    results.push(...(await Promise.all(Array.from({ length: batch }, attempt))));
  }
  return results;
}

describe('request bodies over the limit', () => {
  let starter: string;
  let pro: string;

  beforeAll(async () => {
    [starter, pro] = await Promise.all([keyFor('starter', 'test'), keyFor('pro', 'test')]);
  });

  // Just over the limit, the whole upload fits in the connection's buffers before the answer comes; at four
  // times the limit the client is still writing when it does, which is when closing at once lost the answer.
  const overLimit = [
    ['just over the plan limit', starterBodyLimitBytes],
    ['four times the plan limit', 4 * starterBodyLimitBytes],
  ] as const;

  it.each(overLimit)('answers every SDK upload %s with 413, never a reset', async (_size, textBytes) => {
    const body = askWithText(textBytes);
    const failures = await repeat(100, 4, () =>
      sdk(starter)
        .messages.create(body)
        .then(
          () => new Error('the request was served'),
          (error: unknown) => error,
        ),
    );
    const classes = failures.map((failure) => (failure as Error).constructor.name);
    expect(classes).toEqual(Array(100).fill('ContentTooLargeError'));
    const first = failures[0] as InstanceType<typeof Anthropic.ContentTooLargeError>;
    expect(first).toBeInstanceOf(Anthropic.ContentTooLargeError);
    expect(first.type).toBe('request_too_large');
    expect(first.headers.get('x-should-retry')).toBe('false');
    expect(first.headers.get('connection')).toBe('close');
  });

  it.each(overLimit)('answers every chunked upload %s with 413, never a reset', async (_size, textBytes) => {
    const body = Buffer.from(JSON.stringify(askWithText(textBytes)));
    const answers = await repeat(100, 4, () => chunkedUpload('/v1/messages', starter, body));
    expect(answers.map((answer) => answer.status)).toEqual(Array(100).fill(413));
    for (const answer of answers) {
      expect(answer.headers['x-should-retry']).toBe('false');
      expect(answer.headers.connection).toBe('close');
      const envelope = JSON.parse(answer.body) as { type: string; error: { type: string }; request_id: string };
      expect(envelope).toEqual(expect.objectContaining({ type: 'error', request_id: answer.headers['request-id'] }));
      expect(envelope.error.type).toBe('request_too_large');
    }
  });

  it('answers every SDK upload declaring more than the gateway limit with 413', async () => {
    const body = askWithText(gatewayBodyLimitBytes);
    const failures = await repeat(10, 1, () =>
      sdk(pro)
        .messages.create(body)
        .then(
          () => new Error('the request was served'),
          (error: unknown) => error,
        ),
    );
    expect(failures.map((failure) => (failure as Error).constructor.name)).toEqual(
      Array(10).fill('ContentTooLargeError'),
    );
    expect((failures[0] as InstanceType<typeof Anthropic.ContentTooLargeError>).message).toMatch(
      new RegExp(`limit of ${gatewayBodyLimitBytes} bytes`),
    );
  });

  it('answers chunked count_tokens uploads that cross the plan limit with 413 too', async () => {
    const { max_tokens: _unused, ...counted } = askWithText(4 * starterBodyLimitBytes);
    const body = Buffer.from(JSON.stringify(counted));
    const answers = await repeat(100, 4, () => chunkedUpload('/v1/messages/count_tokens', starter, body));
    expect(answers.map((answer) => answer.status)).toEqual(Array(100).fill(413));
  });
});

interface RecordedImageRequest {
  headers: Record<string, string | string[] | undefined>;
  body: { messages?: { content?: { type: string; source?: { data?: string } }[] }[] } | null;
}

describe('big request bodies through every hop', () => {
  /** Bedrock in Ireland, the model's first pool for an EU key: the body is signed whole, 20 MiB included. */
  const simEu = h.simUrls[4]!;
  let live: string;

  beforeAll(async () => {
    live = await keyFor('pro', 'live');
  });
  beforeEach(() => fetch(`${simEu}/_sim/requests`, { method: 'DELETE' }));

  it.each([
    ['5 MB', 5_000_000],
    ['20 MiB', 20 * MiB],
  ])(
    'carries a %s base64 image to the upstream byte for byte and answers 200',
    async (_size, bodyBytes) => {
      // Base64 of random bytes, sized so that the whole JSON body is about `bodyBytes`.
      const data = randomBytes(((bodyBytes - 1024) / 4) * 3).toString('base64');
      const message = await sdk(live).messages.create({
        model: 'claude-sonnet-5',
        max_tokens: 16,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data } },
              { type: 'text', text: 'describe this image' },
            ],
          },
        ],
      });
      expect(message.content).toEqual([expect.objectContaining({ type: 'text', text: 'describe this image' })]);

      const recorded = (await (await fetch(`${simEu}/_sim/requests`)).json()) as RecordedImageRequest[];
      const upstream = recorded.find((entry) => entry.headers['x-request-id'] === message._request_id);
      const image = upstream?.body?.messages?.[0]?.content?.[0];
      expect(image?.type).toBe('image');
      const received = image?.source?.data ?? '';
      expect({ length: received.length, sha256: sha256(received) }).toEqual({
        length: data.length,
        sha256: sha256(data),
      });
    },
    120_000,
  );

  describe('in redact mode', () => {
    const personal = 'Reach alice.smith@example.com or +44 20 7946 0958 about card 4111 1111 1111 1111. ';
    const prose = 'The quarterly review covered revenue, hiring plans and the roadmap for the next two years. ';
    const ofSize = (unit: string) => unit.repeat(Math.floor((30 * MiB) / unit.length));
    let redact: string;
    beforeAll(async () => {
      redact = await keyFor('pro', 'test', 'redact');
    });

    it('decides a 30 MiB body, half of its sentences with personal data, with time for its size, and answers 200', async () => {
      // Redacting it takes a thread about 2 s: under the control calls' flat 2 s deadline it could never be
      // decided, and its caller got a 503 telling it to retry. Policy's deadline now grows with the body.
      const message = await sdk(redact).messages.create({
        model: 'claude-sonnet-5',
        max_tokens: 16,
        messages: [{ role: 'user', content: ofSize(personal + prose) }],
      });
      expect(message.type).toBe('message');
      expect(message.usage.input_tokens).toBeGreaterThan(1_000_000);
    }, 120_000);
  });
});

describe('bodies whose parsing would take too much memory', () => {
  it('refuses 30 MiB of empty JSON objects before parsing them, and serves on', async () => {
    // Parsed, they would take about 700 MB of a check thread's heap (and of policy's privacy thread after it).
    const key = await keyFor('pro', 'test');
    const body = Buffer.from(`{"model":"claude-sonnet-5","max_tokens":16,"messages":[${'{},'.repeat(10 * MiB)}{}]}`);
    const answer = await chunkedUpload('/v1/messages', key, body);
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toEqual(
      expect.objectContaining({
        error: {
          type: 'invalid_request_error',
          message: 'The request body holds more than 1000000 JSON objects and arrays.',
        },
      }),
    );
    expect((await sdk(key).messages.create(askWithText(1_000))).type).toBe('message');
  }, 120_000);
});

describe('memory that large bodies take', () => {
  /** Ingress's default BODY_BUFFER_MAX_BYTES, which the test stack keeps. */
  const heldBodiesMaxBytes = 96 * MiB;
  const ingressPid = () => Number(readFileSync(join(h.logsDir, '..', 'run', 'ingress.pid'), 'utf8').trim());
  const residentMiB = (pid: number) =>
    Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;

  it('keeps ingress within 7 × BODY_BUFFER_MAX_BYTES + 256 MiB while one account sends eight 29 MiB bodies at once', async () => {
    // The chart sizes ingress's memory limit by this rule: one account within its concurrency must not be
    // able to take a pod past it and end every other account's requests there.
    const key = await keyFor('pro', 'test');
    const body = askWithText(29 * MiB);
    const pid = ingressPid();
    let peak = residentMiB(pid);
    const sampler = setInterval(() => (peak = Math.max(peak, residentMiB(pid))), 10);
    const answers = await Promise.all(
      Array.from({ length: 8 }, () =>
        sdk(key)
          .messages.create(body)
          .then(
            () => 200,
            (error: unknown) => (error as InstanceType<typeof Anthropic.APIError>).status,
          ),
      ),
    ).finally(() => clearInterval(sampler));
    process.stdout.write(
      `eight 29 MiB bodies: ingress resident at most ${peak.toFixed(0)} MiB; answers ${answers.join(' ')}\n`,
    );
    // Three fit under the cap at once; the rest are told the gateway holds too many bodies (503, retryable).
    expect(answers.filter((status) => status === 200).length).toBeGreaterThanOrEqual(3);
    expect(answers.every((status) => status === 200 || status === 503)).toBe(true);
    expect(peak).toBeLessThan((7 * heldBodiesMaxBytes) / MiB + 256);
  }, 120_000);
});
