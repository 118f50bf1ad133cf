import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import { errorEnvelope, httpStatusOf, retryHeaders } from '@gw/errors';
import { waitUntil } from '@gw/testing';
import { BodyBudget } from '@gw/workers';
import { discardRestOfBody, readBody } from '../../src/http/body';
import type { BodyTimeouts } from '../../src/http/body';

const KiB = 1024;
const limitBytes = 1024 * KiB;

/**
 * A server that reads bodies as ingress does: each request's share of one budget, given back when its
 * response is over; a refusal answered at once in the envelope, the rest of the upload dropped. A body
 * read whole is held until the test lets go of it (`letGo`), as a request in flight holds its body.
 */
async function startReadingServer(timeouts: BodyTimeouts, budget: BodyBudget) {
  const held: (() => void)[] = [];
  const server: Server = createServer((incoming, response) => {
    const reservation = budget.reservation();
    response.once('close', reservation.release);
    void readBody(incoming, { limitBytes, timeouts, reservation }).then(async (body) => {
      if (body.ok) {
        await new Promise<void>((resolve) => held.push(resolve));
        response.writeHead(200, { 'content-type': 'text/plain' }).end(String(body.value.length));
        return;
      }
      const envelope = JSON.stringify(errorEnvelope(body.error, 'req_test'));
      response.writeHead(httpStatusOf(body.error.type), {
        ...retryHeaders(body.error),
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(envelope),
        connection: 'close',
      });
      response.write(envelope);
      await discardRestOfBody(incoming, { maxBytes: limitBytes, maxMs: 1_000 });
      response.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    /** Bodies read whole and held. */
    held: () => held.length,
    letGo: () => held.splice(0).forEach((release) => release()),
    close: () =>
      new Promise<void>((resolve) => {
        held.splice(0).forEach((release) => release());
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** A raw connection that keeps what the server sends and whether it closed. */
function rawConnection(port: number) {
  const socket: Socket = connect(port, '127.0.0.1');
  const state = { received: '', closed: false };
  socket.on('data', (data: Buffer) => (state.received += data.toString('latin1')));
  socket.on('close', () => (state.closed = true));
  socket.on('error', () => undefined);
  return { socket, state };
}

const head = (length: number | 'chunked') =>
  `POST / HTTP/1.1\r\nhost: test\r\ncontent-type: application/json\r\n${
    length === 'chunked' ? 'transfer-encoding: chunked' : `content-length: ${length}`
  }\r\n\r\n`;

interface Answer {
  status: number;
  headers: string;
  body: { error: { type: string; message: string } };
}

/** Status, header block and JSON body of a whole answer. */
function answerOf(received: string): Answer {
  const [headers = '', body = ''] = received.split('\r\n\r\n');
  return { status: Number(headers.split(' ')[1]), headers, body: JSON.parse(body) as Answer['body'] };
}

const answered = (state: { received: string }) => state.received.includes('\r\n\r\n{');

describe('receiving a body is bounded in time', () => {
  const timeouts: BodyTimeouts = { idleMs: 300, totalMs: 1_500 };
  let server: Awaited<ReturnType<typeof startReadingServer>>;
  beforeEach(async () => {
    server = await startReadingServer(timeouts, new BodyBudget(limitBytes));
  });
  afterEach(() => server.close());

  it('refuses a body that pauses longer than the idle bound, and closes the connection', async () => {
    const { socket, state } = rawConnection(server.port);
    const startedAt = Date.now();
    socket.write(head(100));
    socket.write('{"model":');
    await waitUntil(() => answered(state), { what: 'the refusal', timeoutMs: 5_000 });
    const waited = Date.now() - startedAt;
    expect(waited).toBeGreaterThanOrEqual(timeouts.idleMs - 20);
    expect(waited).toBeLessThan(timeouts.totalMs);
    const answer = answerOf(state.received);
    expect(answer.status).toBe(400);
    expect(answer.body.error).toEqual({
      type: 'invalid_request_error',
      message: 'The request body arrived too slowly: nothing for 0.3 s. Send it without pauses.',
    });
    await waitUntil(() => state.closed, { what: 'the connection to close', timeoutMs: 5_000 });
  });

  it('refuses a body trickled within the idle bound once the whole bound has passed', async () => {
    const { socket, state } = rawConnection(server.port);
    const startedAt = Date.now();
    socket.write(head(10_000));
    // One byte every 100 ms: no pause the idle bound refuses, and never the whole body either.
    const trickle = setInterval(() => socket.write('x'), 100);
    try {
      await waitUntil(() => answered(state), { what: 'the refusal', timeoutMs: 5_000 });
    } finally {
      clearInterval(trickle);
    }
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(timeouts.totalMs - 20);
    const answer = answerOf(state.received);
    expect(answer.status).toBe(400);
    expect(answer.body.error.message).toBe(
      'The request body arrived too slowly: not complete within 1.5 s. Send it without pauses.',
    );
  });
});

describe('the bytes of bodies held at once are capped', () => {
  let budget: BodyBudget;
  let server: Awaited<ReturnType<typeof startReadingServer>>;
  beforeEach(async () => {
    budget = new BodyBudget(limitBytes);
    server = await startReadingServer({ idleMs: 5_000, totalMs: 30_000 }, budget);
  });
  afterEach(() => server.close());

  /** A request of `length` declared bytes, sent whole, whose body the server then holds. */
  async function holdBody(length: number) {
    const connection = rawConnection(server.port);
    const before = server.held();
    connection.socket.write(head(length));
    connection.socket.write(Buffer.alloc(length, 'x'));
    await waitUntil(() => server.held() > before, { what: 'the body to be read and held' });
    return connection;
  }

  it('reserves a declared length before reading, refuses a body past the cap with 503, and frees it at the end', async () => {
    const first = await holdBody(768 * KiB);
    expect(budget.heldBytes).toBe(768 * KiB);

    const second = rawConnection(server.port);
    second.socket.write(head(512 * KiB));
    await waitUntil(() => answered(second.state), { what: 'the refusal' });
    const answer = answerOf(second.state.received);
    expect(answer.status).toBe(503);
    expect(answer.body.error.type).toBe('overloaded_error');
    expect(answer.headers).toMatch(/\r\nretry-after: 5\r\n/);
    expect(answer.headers).toMatch(/\r\nx-should-retry: true\r\n/);
    expect(budget.heldBytes).toBe(768 * KiB);

    server.letGo();
    await waitUntil(() => first.state.received.startsWith('HTTP/1.1 200 '), { what: 'the first answer' });
    await waitUntil(
      () => budget.heldBytes,
      { what: 'the reservation to be freed' },
      (held) => held === 0,
    );
    const third = await holdBody(512 * KiB);
    expect(budget.heldBytes).toBe(512 * KiB);
    third.socket.destroy();
  });

  it('counts a chunked body as it arrives and refuses it where it crosses the cap', async () => {
    const first = await holdBody(768 * KiB);
    const chunked = rawConnection(server.port);
    chunked.socket.write(head('chunked'));
    const piece = Buffer.alloc(64 * KiB, 'x');
    for (let sent = 0; sent < 512 * KiB; sent += piece.length) {
      chunked.socket.write(`${piece.length.toString(16)}\r\n`);
      chunked.socket.write(piece);
      chunked.socket.write('\r\n');
    }
    await waitUntil(() => answered(chunked.state), { what: 'the refusal' });
    expect(answerOf(chunked.state.received).status).toBe(503);
    // What the chunked body had taken before the refusal is back.
    expect(budget.heldBytes).toBe(768 * KiB);
    first.socket.destroy();
    await waitUntil(
      () => budget.heldBytes,
      { what: 'the reservation to be freed' },
      (held) => held === 0,
    );
  });

  it('frees the reservation of a client that goes away, mid-upload or while its body is held', async () => {
    const partial = rawConnection(server.port);
    partial.socket.write(head(768 * KiB));
    partial.socket.write(Buffer.alloc(100 * KiB, 'x'));
    await waitUntil(
      () => budget.heldBytes,
      { what: 'the declared length reserved' },
      (held) => held === 768 * KiB,
    );
    partial.socket.destroy();
    await waitUntil(
      () => budget.heldBytes,
      { what: 'the upload to be given up' },
      (held) => held === 0,
    );

    const whole = await holdBody(768 * KiB);
    expect(budget.heldBytes).toBe(768 * KiB);
    whole.socket.destroy();
    await waitUntil(
      () => budget.heldBytes,
      { what: 'the held body to be given up' },
      (held) => held === 0,
    );
  });
});
