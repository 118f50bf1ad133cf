import { readFileSync, statSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { waitUntil } from '@gw/testing';
import { harness } from './harness';
import { admin } from './http';
import { startIngressReplica } from './replicas';
import type { Replica } from './replicas';

const h = harness();
const ingressPort = Number(new URL(h.baseUrl).port);
const model = 'claude-sonnet-5';

/** Longest string a log field carries (@gw/telemetry's maxLoggedChars). */
const maxLoggedChars = 256;

interface Answer {
  status: number;
  /** Header names in lower case. */
  headers: Record<string, string>;
  body: string;
}

interface Envelope {
  type: string;
  error: { type: string; message: string };
  request_id: string;
}

/** The first response in what a connection received; a chunked body is joined. */
function firstAnswer(received: string): Answer {
  const end = received.indexOf('\r\n\r\n');
  const [statusLine = '', ...lines] = received.slice(0, end).split('\r\n');
  const headers = Object.fromEntries(
    lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
  );
  let rest = received.slice(end + 4);
  let body = '';
  if (headers['transfer-encoding'] === 'chunked') {
    for (;;) {
      const size = parseInt(rest.slice(0, rest.indexOf('\r\n')), 16);
      if (!(size > 0)) break;
      const start = rest.indexOf('\r\n') + 2;
      body += rest.slice(start, start + size);
      rest = rest.slice(start + size + 2);
    }
  } else {
    body = rest.slice(0, Number(headers['content-length'] ?? 0));
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body: Buffer.from(body, 'latin1').toString('utf8') };
}

/** Sends `raw` on a new connection to `port` and resolves with what came back once the server closed it. */
function rawExchange(port: number, raw: string | Buffer, timeoutMs = 15_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server kept the connection open for ${timeoutMs} ms`));
    }, timeoutMs);
    socket.on('data', (data: Buffer) => chunks.push(data));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString('latin1'));
    });
    socket.write(raw);
  });
}

/** A POST /v1/messages as raw HTTP/1.1, with the given extra header lines. */
function rawMessages(body: unknown, headerLines: string[]): string {
  const json = Buffer.from(JSON.stringify(body));
  return [
    'POST /v1/messages HTTP/1.1',
    'host: gateway',
    'content-type: application/json',
    `content-length: ${json.length}`,
    ...headerLines,
    '',
    json.toString('latin1'),
  ].join('\r\n');
}

/** Checks the envelope and its request id in both headers; returns it. */
function envelopeOf(answer: Answer): Envelope {
  const envelope = JSON.parse(answer.body) as Envelope;
  expect(envelope.type).toBe('error');
  expect(envelope.request_id).toMatch(/^req_[A-Za-z0-9]{24}$/);
  expect(answer.headers['x-request-id']).toBe(envelope.request_id);
  expect(answer.headers['request-id']).toBe(envelope.request_id);
  return envelope;
}

async function testKey(plan: string): Promise<string> {
  const account = await admin<{ id: string }>(h, 'POST', '/accounts', { name: `edges-${plan}`, plan });
  const key = await admin<{ key: string }>(h, 'POST', '/keys', {
    account_id: account.body.id,
    name: 'edges',
    environment: 'test',
    residency: 'eu',
    privacy_mode: 'off',
  });
  expect(key.status).toBe(201);
  return key.body.key;
}

describe('malformed HTTP is answered in the envelope', () => {
  it.each([
    ['a control character in a header', 'GET /v1/models HTTP/1.1\r\nhost: a\r\nx-note: a\u0001b\r\n\r\n'],
    ['bare LF line ends', 'GET /v1/models HTTP/1.1\nhost: a\n\n'],
    ['an obsolete folded header', 'GET /v1/models HTTP/1.1\r\nhost: a\r\nx-note: a\r\n b\r\n\r\n'],
    ['an unknown method', 'BREW /v1/models HTTP/1.1\r\nhost: a\r\n\r\n'],
  ])('answers %s with 400 invalid_request_error and closes', async (_case, raw) => {
    const answer = firstAnswer(await rawExchange(ingressPort, raw));
    expect(answer.status).toBe(400);
    expect(answer.headers.connection).toBe('close');
    expect(answer.headers['x-should-retry']).toBe('false');
    expect(envelopeOf(answer).error.type).toBe('invalid_request_error');
  });

  it('answers headers over 16 KiB with 413 request_too_large', async () => {
    const raw = `GET /v1/models HTTP/1.1\r\nhost: a\r\nx-note: ${'n'.repeat(17 * 1024)}\r\n\r\n`;
    const answer = firstAnswer(await rawExchange(ingressPort, raw));
    expect(answer.status).toBe(413);
    expect(envelopeOf(answer).error).toEqual({
      type: 'request_too_large',
      message: 'The request headers are larger than the limit of 16384 bytes.',
    });
  });
});

describe('credentials sent twice are refused as ambiguous', () => {
  const ask = { model, max_tokens: 16, messages: [{ role: 'user', content: 'hello' }] };

  it.each([
    ['Authorization', [`authorization: Bearer ${h.testKey}`, `authorization: Bearer ${h.testKey}x`]],
    ['x-api-key', [`x-api-key: ${h.testKey}`, `x-api-key: ${h.testKey}`]],
  ])('refuses two %s headers with 401, even when one of them is valid', async (name, lines) => {
    const answer = firstAnswer(await rawExchange(ingressPort, rawMessages(ask, lines)));
    expect(answer.status).toBe(401);
    expect(envelopeOf(answer).error).toEqual({
      type: 'authentication_error',
      message: `The request has more than one ${name} header; send one API key.`,
    });
  });

  it('still takes one Authorization beside one x-api-key (the bearer token wins)', async () => {
    const lines = [`authorization: Bearer ${h.testKey}`, 'x-api-key: gw_test_not_a_key', 'connection: close'];
    const answer = firstAnswer(await rawExchange(ingressPort, rawMessages(ask, lines)));
    expect(answer.status).toBe(200);
  });
});

describe('a stream asked for with Connection: close', () => {
  it('ends with the connection closed by the gateway', async () => {
    const ask = { model, max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'close after' }] };
    const received = await rawExchange(ingressPort, rawMessages(ask, [`x-api-key: ${h.testKey}`, 'connection: close']));
    const answer = firstAnswer(received);
    expect(answer.status).toBe(200);
    expect(answer.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(answer.headers.connection).toBe('close');
    expect(answer.body).toMatch(/event: message_stop\ndata: .*\n\n$/);
  });
});

describe('caller text is cut in answers and in logs', () => {
  it('refuses a 2 MB model with 400 naming the field, and logs no line longer than the cap', async () => {
    const huge = 'm'.repeat(2 * 1024 * 1024);
    const logFile = join(h.logsDir, 'ingress.log');
    const logOffset = statSync(logFile).size;
    const response = await fetch(`${h.baseUrl}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': h.testKey },
      body: JSON.stringify({ model: huge, max_tokens: 16, messages: [{ role: 'user', content: 'hello' }] }),
    });
    const text = await response.text();
    expect(response.status).toBe(400);
    expect(text.length).toBeLessThan(1024);
    const envelope = JSON.parse(text) as Envelope;
    expect(envelope.error).toEqual({
      type: 'invalid_request_error',
      message: `model: expected at most 256 characters, got ${huge.length}: "${'m'.repeat(64)}…".`,
    });

    const logged = await waitUntil(
      () => readFileSync(logFile).subarray(logOffset).toString('utf8'),
      { what: "the request's log line" },
      (lines) => lines.includes(envelope.request_id),
    );
    for (const line of logged.split('\n')) {
      expect(line.length).toBeLessThan(2048);
      expect(Math.max(0, ...(line.match(/m{64,}/g) ?? []).map((run) => run.length))).toBeLessThanOrEqual(
        maxLoggedChars,
      );
    }
  });

  it('quotes and cuts a long unknown path', async () => {
    const path = `/v1/${'p'.repeat(5_000)}`;
    const response = await fetch(`${h.baseUrl}${path}`);
    expect(response.status).toBe(404);
    const envelope = (await response.json()) as Envelope;
    expect(envelope.error.message).toBe(`Unknown endpoint: GET "${path.slice(0, 64)}…".`);
  });
});

describe('receiving a request is bounded in time and memory', () => {
  const ports = { http: 21111, admin: 21112, metrics: 21113 };
  const bounds = { headersMs: 1_000, bodyIdleMs: 1_000, bodyMs: 3_000 };
  const MiB = 1024 * 1024;
  let ingress: Replica | undefined;
  let key: string;

  beforeAll(async () => {
    key = await testKey('pro');
    ingress = await startIngressReplica(h, ports, h.replica.quotaAddress, {
      HEADERS_TIMEOUT_MS: String(bounds.headersMs),
      BODY_IDLE_TIMEOUT_MS: String(bounds.bodyIdleMs),
      BODY_TIMEOUT_MS: String(bounds.bodyMs),
      BODY_LIMIT_BYTES: String(MiB),
      BODY_BUFFER_MAX_BYTES: String(1.5 * MiB),
    });
  }, 30_000);
  afterAll(() => ingress?.stop());

  const bodyBytesHeld = async () => {
    const text = await (await fetch(`http://127.0.0.1:${ports.metrics}/metrics`)).text();
    return Number(/^gateway_request_body_bytes(?:\{[^}]*\})? (\d+)$/m.exec(text)?.[1]);
  };

  /** Opens a POST /v1/messages declaring `length` bytes and sends `first` of them; the caller goes on. */
  function upload(length: number, first: string) {
    const socket = connect(ports.http, '127.0.0.1');
    let received = '';
    socket.on('data', (data: Buffer) => (received += data.toString('latin1')));
    socket.on('error', () => undefined);
    socket.write(
      `POST /v1/messages HTTP/1.1\r\nhost: gateway\r\ncontent-type: application/json\r\nx-api-key: ${key}\r\ncontent-length: ${length}\r\n\r\n${first}`,
    );
    return { socket, received: () => received };
  }

  it('refuses a body that stops arriving, within the idle bound, and closes the connection', async () => {
    const startedAt = Date.now();
    const stalled = upload(1_000, '{"model":');
    await waitUntil(() => stalled.received().includes('\r\n\r\n'), { what: 'the refusal', timeoutMs: 15_000 });
    expect(Date.now() - startedAt).toBeLessThan(bounds.bodyMs);
    await waitUntil(() => stalled.socket.readableEnded, { what: 'the connection to close', timeoutMs: 15_000 });
    const answer = firstAnswer(stalled.received());
    expect(answer.status).toBe(400);
    expect(envelopeOf(answer).error.message).toBe(
      'The request body arrived too slowly: nothing for 1 s. Send it without pauses.',
    );
  });

  it('refuses a body trickled byte by byte once the whole bound has passed', async () => {
    const trickled = upload(1_000, '{');
    const trickle = setInterval(() => trickled.socket.write(' '), 200);
    try {
      await waitUntil(() => trickled.received().includes('\r\n\r\n'), { what: 'the refusal', timeoutMs: 15_000 });
    } finally {
      clearInterval(trickle);
      trickled.socket.destroy();
    }
    const answer = firstAnswer(trickled.received());
    expect(answer.status).toBe(400);
    expect(envelopeOf(answer).error.message).toBe(
      `The request body arrived too slowly: not complete within ${bounds.bodyMs / 1000} s. Send it without pauses.`,
    );
  });

  it('answers headers that do not arrive in time with 400 in the envelope', async () => {
    const answer = firstAnswer(await rawExchange(ports.http, 'GET /v1/models HTTP/1.1\r\nhost: a\r\n'));
    expect(answer.status).toBe(400);
    expect(envelopeOf(answer).error.message).toBe('The request headers did not arrive within 1 s.');
  });

  it('refuses a body past the cap with 503 while others are held, and frees them when requests end', async () => {
    /** A streamed request of about `bytes`, which the stub answers slowly (about 10 s). */
    const slowAsk = (bytes: number) =>
      JSON.stringify({
        model,
        max_tokens: 64,
        stream: true,
        messages: [{ role: 'user', content: `gw-test:slow ${'x'.repeat(bytes)}` }],
      });
    const held = slowAsk(900 * 1024);
    const first = upload(Buffer.byteLength(held), held);
    await waitUntil(() => first.received().includes('event: message_start'), { what: 'the first stream to start' });
    expect(await bodyBytesHeld()).toBe(Buffer.byteLength(held));

    const second = firstAnswer(
      await rawExchange(ports.http, rawMessages(JSON.parse(slowAsk(800 * 1024)), [`x-api-key: ${key}`])),
    );
    expect(second.status).toBe(503);
    expect(second.headers['retry-after']).toBe('5');
    expect(second.headers['x-should-retry']).toBe('true');
    expect(envelopeOf(second).error.type).toBe('overloaded_error');

    // A small body still fits beside the held one.
    const small = { model, max_tokens: 16, messages: [{ role: 'user', content: 'small' }] };
    const fits = firstAnswer(
      await rawExchange(ports.http, rawMessages(small, [`x-api-key: ${key}`, 'connection: close'])),
    );
    expect(fits.status).toBe(200);

    // The client of the held body goes away mid-stream: its reservation is freed.
    first.socket.destroy();
    await waitUntil(bodyBytesHeld, { what: 'the reservation to be freed' }, (bytes) => bytes === 0);
    const again = firstAnswer(
      await rawExchange(ports.http, rawMessages(small, [`x-api-key: ${key}`, 'connection: close'])),
    );
    expect(again.status).toBe(200);
    expect(await bodyBytesHeld()).toBe(0);
  }, 60_000);
});

describe('what clients try before their first call', () => {
  it('answers GET / and HEAD / with 200 and a request id', async () => {
    for (const method of ['GET', 'HEAD']) {
      const response = await fetch(`${h.baseUrl}/`, { method });
      expect(response.status).toBe(200);
      expect(response.headers.get('request-id')).toMatch(/^req_/);
    }
  });

  it('tells a client that opens with the HTTP/2 preface to use HTTP/1.1 (GOAWAY HTTP_1_1_REQUIRED)', async () => {
    const { connect: connectHttp2, constants } = await import('node:http2');
    const session = connectHttp2(h.baseUrl);
    session.on('error', () => undefined);
    const goAway = await new Promise<number>((resolve, reject) => {
      session.once('goaway', (code: number) => resolve(code));
      session.once('close', () => reject(new Error('closed without GOAWAY')));
    });
    expect(goAway).toBe(constants.NGHTTP2_HTTP_1_1_REQUIRED);
    session.destroy();
  });
});
