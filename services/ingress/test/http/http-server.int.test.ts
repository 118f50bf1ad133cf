import type { Server } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { waitUntil } from '@gw/testing';
import { createHttpServer, keepAlive, maxHeaderBytes } from '../../src/http/http-server';
import type { ReceiveBounds } from '../../src/http/http-server';

/**
 * A server as ingress builds one, in front of a handler that assigns request ids as ingress does and
 * answers `/` at once, `/read` once it has read the body, `/refuse` at once but ending once the body has
 * arrived, and `/stream` in two parts far apart.
 */
async function startServer(bounds: ReceiveBounds) {
  let assigned = 0;
  let finishStream: () => void = () => undefined;
  const server: Server = createHttpServer((request, response) => {
    const requestId = `req_handler${(assigned += 1)}`;
    response.setHeader('x-request-id', requestId);
    if (request.url === '/read') {
      request.resume().on('end', () => response.end('read'));
      return;
    }
    if (request.url === '/refuse') {
      // A refusal written whole at once, its end left until the upload is over (as ingress drops it).
      response.writeHead(401, { 'content-length': '7' });
      response.write('refused');
      request.resume().on('end', () => response.end());
      return;
    }
    if (request.url === '/stream') {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write('event: ping\n\n');
      finishStream = () => response.end('event: done\n\n');
      return;
    }
    response.end('ok');
  }, bounds);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    finishStream: () => finishStream(),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Writes `raw` on a new connection; resolves with everything received once the server has closed it. */
function exchange(port: number, ...raw: (string | Buffer)[]): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (data: Buffer) => (received += data.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(received));
    for (const part of raw) socket.write(part);
  });
}

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Every response in what a connection received, in order. */
function answersIn(received: string): Answer[] {
  const answers: Answer[] = [];
  let rest = received;
  while (rest.startsWith('HTTP/1.1 ')) {
    const end = rest.indexOf('\r\n\r\n');
    const [statusLine = '', ...lines] = rest.slice(0, end).split('\r\n');
    const headers = Object.fromEntries(
      lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
    );
    const length = Number(headers['content-length'] ?? 0);
    answers.push({ status: Number(statusLine.split(' ')[1]), headers, body: rest.slice(end + 4, end + 4 + length) });
    rest = rest.slice(end + 4 + length);
  }
  return answers;
}

/** The one answer in what a connection received: the envelope, with the id in both headers and the body. */
function envelopeAnswer(received: string) {
  const answers = answersIn(received);
  expect(answers).toHaveLength(1);
  const [answer] = answers as [Answer];
  const envelope = JSON.parse(answer.body) as {
    type: string;
    error: { type: string; message: string };
    request_id: string;
  };
  expect(envelope.type).toBe('error');
  expect(envelope.request_id).toMatch(/^req_[A-Za-z0-9]+$/);
  expect(answer.headers['x-request-id']).toBe(envelope.request_id);
  expect(answer.headers['request-id']).toBe(envelope.request_id);
  expect(answer.headers.connection).toBe('close');
  expect(answer.headers['content-type']).toBe('application/json');
  expect(answer.headers['x-should-retry']).toBe('false');
  return { status: answer.status, error: envelope.error, requestId: envelope.request_id };
}

const patient: ReceiveBounds = { headersTimeoutMs: 10_000, requestTimeoutMs: 60_000 };

describe('requests Node cannot read are answered in the envelope', () => {
  let server: Awaited<ReturnType<typeof startServer>>;
  beforeAll(async () => {
    server = await startServer(patient);
  });
  afterAll(() => server.close());

  it.each([
    ['a control character in a header value', 'GET / HTTP/1.1\r\nhost: a\r\nx-note: a\u0001b\r\n\r\n'],
    ['a NUL in a header value', 'GET / HTTP/1.1\r\nhost: a\r\nx-note: a\u0000b\r\n\r\n'],
    ['bare LF line ends', 'GET / HTTP/1.1\nhost: a\n\n'],
    ['a bare LF after one header', 'GET / HTTP/1.1\r\nhost: a\nx-note: b\r\n\r\n'],
    ['an obsolete folded header', 'GET / HTTP/1.1\r\nhost: a\r\nx-note: b\r\n c\r\n\r\n'],
    ['an unknown method', 'BREW / HTTP/1.1\r\nhost: a\r\n\r\n'],
    ['a space before a header colon', 'GET / HTTP/1.1\r\nhost: a\r\nx-note : b\r\n\r\n'],
    ['two Content-Length headers', 'POST / HTTP/1.1\r\nhost: a\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\nab'],
  ])('answers %s with 400 invalid_request_error and closes', async (_case, raw) => {
    const { status, error } = envelopeAnswer(await exchange(server.port, raw));
    expect(status).toBe(400);
    expect(error).toEqual({
      type: 'invalid_request_error',
      message: 'The request is not valid HTTP/1.1; it was not read.',
    });
  });

  it(`answers headers over ${maxHeaderBytes} bytes with 413 request_too_large`, async () => {
    const raw = `GET / HTTP/1.1\r\nhost: a\r\nx-note: ${'n'.repeat(maxHeaderBytes)}\r\n\r\n`;
    const { status, error } = envelopeAnswer(await exchange(server.port, raw));
    expect(status).toBe(413);
    expect(error).toEqual({
      type: 'request_too_large',
      message: 'The request headers are larger than the limit of 16384 bytes.',
    });
  });

  it('still serves headers just within the limit', async () => {
    const line = 'GET / HTTP/1.1\r\nhost: a\r\nconnection: close\r\nx-note: ';
    const raw = `${line}${'n'.repeat(maxHeaderBytes - line.length - 200)}\r\n\r\n`;
    expect(answersIn(await exchange(server.port, raw)).map((answer) => answer.status)).toEqual([200]);
  });

  it.each([
    ['an HTTP/1.1 request without Host', 'GET / HTTP/1.1\r\n\r\n', 'An HTTP/1.1 request needs a Host header.'],
    [
      'an Expect other than 100-continue',
      'POST / HTTP/1.1\r\nhost: a\r\nexpect: something\r\ncontent-length: 2\r\n\r\n{}',
      'The Expect header asks for something other than 100-continue.',
    ],
    [
      'an empty Expect',
      'GET / HTTP/1.1\r\nhost: a\r\nexpect:\r\n\r\n',
      'The Expect header asks for something other than 100-continue.',
    ],
  ])('answers %s, which Node would refuse bare, with 400 in the envelope', async (_case, raw, message) => {
    const { status, error } = envelopeAnswer(await exchange(server.port, raw));
    expect(status).toBe(400);
    expect(error).toEqual({ type: 'invalid_request_error', message });
  });

  it('still serves HTTP/1.0 without Host, and a request expecting 100-continue', async () => {
    const statuses = async (raw: string) => answersIn(await exchange(server.port, raw)).map((answer) => answer.status);
    expect(await statuses('GET / HTTP/1.0\r\n\r\n')).toEqual([200]);
    const expecting =
      'POST /read HTTP/1.1\r\nhost: a\r\nexpect: 100-continue\r\nconnection: close\r\ncontent-length: 2\r\n\r\n{}';
    expect(await statuses(expecting)).toEqual([100, 200]);
  });

  it('announces a shorter keep-alive than it keeps, so that clients let go of a connection first', async () => {
    // The malformed second request ends the connection, once the first has been answered.
    const received = await exchange(server.port, 'GET / HTTP/1.1\r\nhost: a\r\n\r\n', 'BREW / HTTP/1.1\r\n\r\n');
    const keptAlive = answersIn(received);
    expect(keptAlive[0]!.headers['keep-alive']).toBe('timeout=55');
    expect(keepAlive.idleMs).toBeGreaterThanOrEqual(55_000 + 10_000);
    // A connection that closes after its answer announces nothing.
    const closing = answersIn(await exchange(server.port, 'GET / HTTP/1.1\r\nhost: a\r\nconnection: close\r\n\r\n'));
    expect(closing[0]!.headers['keep-alive']).toBeUndefined();
    expect(closing[0]!.headers.connection).toBe('close');
  });

  it('answers a malformed request after a good one on the same connection, after its answer', async () => {
    const received = await exchange(server.port, 'GET / HTTP/1.1\r\nhost: a\r\n\r\n', 'BREW / HTTP/1.1\r\n\r\n');
    const [first, second] = answersIn(received);
    expect(first!.status).toBe(200);
    expect(second!.status).toBe(400);
    expect(JSON.parse(second!.body)).toEqual(expect.objectContaining({ type: 'error' }));
  });

  it('answers a malformed request pipelined behind one still being answered, after that answer whole', async () => {
    const socket = connect(server.port, '127.0.0.1');
    let received = '';
    socket.on('data', (data: Buffer) => (received += data.toString('latin1')));
    const closed = new Promise((resolve) => socket.on('close', resolve));
    socket.write('GET /stream HTTP/1.1\r\nhost: a\r\n\r\nBREW / HTTP/1.1\r\n\r\n');
    await waitUntil(() => received.includes('event: ping'), { what: 'the stream to start' });
    server.finishStream();
    await closed;
    expect(received).toContain('event: done\n\n');
    const refusal = received.slice(received.indexOf('event: done\n\n'));
    expect(refusal).toContain('HTTP/1.1 400 Bad Request');
    expect(refusal).toContain('"type":"invalid_request_error"');
  });

  it('gives the id of the request being read when its body turns out malformed', async () => {
    const raw = 'POST /read HTTP/1.1\r\nhost: a\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n';
    const { status, requestId } = envelopeAnswer(await exchange(server.port, raw));
    expect(status).toBe(400);
    expect(requestId).toMatch(/^req_handler\d+$/);
  });

  it('delivers an answer written before the body turned out malformed, and adds nothing to it', async () => {
    const raw = 'POST /refuse HTTP/1.1\r\nhost: a\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n';
    const answers = answersIn(await exchange(server.port, raw));
    expect(answers.map((answer) => [answer.status, answer.body])).toEqual([[401, 'refused']]);
  });

  it('adds nothing to a request already answered whose body turns out malformed', async () => {
    const raw = 'POST / HTTP/1.1\r\nhost: a\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n';
    const answers = answersIn(await exchange(server.port, raw));
    expect(answers.map((answer) => answer.status)).toEqual([200]);
  });
});

describe('receiving a request is bounded in time, its response is not', () => {
  const bounds: ReceiveBounds = { headersTimeoutMs: 300, requestTimeoutMs: 1_000 };
  let server: Awaited<ReturnType<typeof startServer>>;
  beforeAll(async () => {
    server = await startServer(bounds);
  });
  afterAll(() => server.close());

  it('answers headers that do not arrive in time with 400 and closes', async () => {
    const startedAt = Date.now();
    const { status, error } = envelopeAnswer(await exchange(server.port, 'GET / HTTP/1.1\r\nhost: a\r\n'));
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(bounds.headersTimeoutMs - 20);
    expect(status).toBe(400);
    expect(error).toEqual({
      type: 'invalid_request_error',
      message: 'The request headers did not arrive within 0.3 s.',
    });
  });

  it('closes a connection that sends nothing, without an answer', async () => {
    expect(await exchange(server.port)).toBe('');
  });

  /** A body trickled to `/read` (one byte every 100 ms), until the server closes the connection. */
  async function trickledBody(): Promise<{ received: string; startedAt: number }> {
    const startedAt = Date.now();
    const socket = connect(server.port, '127.0.0.1');
    let received = '';
    socket.on('data', (data: Buffer) => (received += data.toString('latin1')));
    socket.write('POST /read HTTP/1.1\r\nhost: a\r\ncontent-length: 1000\r\n\r\n');
    const trickle = setInterval(() => socket.write('x'), 100);
    try {
      await waitUntil(() => socket.readableEnded || socket.destroyed, {
        what: 'the server to close',
        timeoutMs: 5_000,
      });
    } finally {
      clearInterval(trickle);
      socket.destroy();
    }
    return { received, startedAt };
  }

  it('answers a body nobody reads that does not arrive in time, with the id of its request', async () => {
    const { received, startedAt } = await trickledBody();
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(bounds.requestTimeoutMs - 20);
    const { status, error, requestId } = envelopeAnswer(received);
    expect(status).toBe(400);
    expect(error.message).toBe('The request did not arrive within 1 s of its first byte.');
    expect(requestId).toMatch(/^req_handler\d+$/);
  });

  it('lets a response run past every bound', async () => {
    const socket = connect(server.port, '127.0.0.1');
    let received = '';
    socket.on('data', (data: Buffer) => (received += data.toString('latin1')));
    socket.write('GET /stream HTTP/1.1\r\nhost: a\r\nconnection: close\r\n\r\n');
    await waitUntil(() => received.includes('event: ping'), { what: 'the stream to start' });
    // A request begun after the stream and refused for its slowness: the bounds have been applied since.
    const refused = await trickledBody();
    expect(answersIn(refused.received).map((answer) => answer.status)).toEqual([400]);
    expect(socket.readableEnded).toBe(false);
    server.finishStream();
    await waitUntil(() => socket.readableEnded, { what: 'the stream to end' });
    expect(received).toContain('event: done\n\n\r\n0\r\n\r\n');
  });
});
