import { createServer, request } from 'node:http';
import type { ClientRequest, Server } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { waitUntil } from '@gw/testing';
import { BodyBudget } from '@gw/workers';
import { discardRestOfBody, readBody } from '../../src/http/body';
import type { BodyTimeouts, DiscardBounds, DiscardOutcome } from '../../src/http/body';

const MiB = 1024 * 1024;
const limitBytes = 1 * MiB;
const chunk = Buffer.alloc(64 * 1024, 'x');
const patient: BodyTimeouts = { idleMs: 10_000, totalMs: 60_000 };
/** A reading of the whole limit with room in the budget, for the tests of what follows a refusal. */
const unbounded = () => ({ limitBytes, timeouts: patient, reservation: new BodyBudget(64 * MiB).reservation() });

/**
 * A server that reads each body with the limit and, past it, refuses the way ingress does: the answer
 * goes at once, the rest of the upload is discarded, and only then the response ends and the connection
 * closes.
 */
async function startRefusingServer(bounds: DiscardBounds) {
  const outcomes: DiscardOutcome[] = [];
  const server: Server = createServer((incoming, response) => {
    void readBody(incoming, unbounded()).then(async (body) => {
      if (body.ok) {
        response.writeHead(200, { 'content-type': 'text/plain' }).end(String(body.value.length));
        return;
      }
      const envelope = JSON.stringify({ type: 'error', error: body.error });
      response.writeHead(413, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(envelope),
        connection: 'close',
      });
      response.write(envelope);
      outcomes.push(await discardRestOfBody(incoming, bounds));
      response.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    outcomes,
    url: `http://127.0.0.1:${port}/`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

interface Answer {
  status: number;
  body: string;
}

/**
 * A chunked upload (no Content-Length) of `totalBytes`, written as fast as the connection takes it;
 * `afterWriting` decides what happens once it is all written (by default: the body ends). Resolves with
 * the answer, whenever it comes; a failure of the upload after the answer arrived does not matter.
 */
function chunkedUpload(
  url: string,
  totalBytes: number,
  afterWriting: (outgoing: ClientRequest) => void = (outgoing) => outgoing.end(),
): { answer: Promise<Answer>; outgoing: ClientRequest } {
  const outgoing = request(url, { method: 'POST', headers: { 'content-type': 'application/json' } });
  const answer = new Promise<Answer>((resolve, reject) => {
    outgoing.on('response', (response) => {
      const parts: Buffer[] = [];
      response.on('data', (part: Buffer) => parts.push(part));
      response.on('end', () =>
        resolve({ status: response.statusCode ?? 0, body: Buffer.concat(parts).toString('utf8') }),
      );
    });
    outgoing.on('error', reject);
  });
  let written = 0;
  const writeMore = () => {
    while (written < totalBytes && !outgoing.destroyed) {
      const part = chunk.subarray(0, Math.min(chunk.length, totalBytes - written));
      written += part.length;
      if (!outgoing.write(part)) return void outgoing.once('drain', writeMore);
    }
    if (!outgoing.destroyed) afterWriting(outgoing);
  };
  writeMore();
  return { answer, outgoing };
}

/**
 * A raw HTTP/1.1 chunked upload of `bodyBytes` on a connection that is not read until the whole upload is
 * written. Resolves with what the server sent, or with the socket's error code.
 */
function uploadThenRead(url: string, bodyBytes: number): Promise<string> {
  const { port } = new URL(url);
  const socket = connect(Number(port), '127.0.0.1');
  socket.pause();
  return new Promise((resolve) => {
    let received = '';
    socket.on('data', (data: Buffer) => (received += data.toString('latin1')));
    socket.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    socket.on('end', () => resolve(received));
    socket.write('POST / HTTP/1.1\r\nhost: test\r\ntransfer-encoding: chunked\r\n\r\n');
    socket.write(`${bodyBytes.toString(16)}\r\n`);
    socket.write(Buffer.alloc(bodyBytes, 'x'));
    socket.write('\r\n0\r\n\r\n', () => socket.resume());
  });
}

const generous: DiscardBounds = { maxBytes: 64 * MiB, maxMs: 10_000 };

describe('readBody and discardRestOfBody over a real connection', () => {
  let server: Awaited<ReturnType<typeof startRefusingServer>> | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('reads a body within the limit whole', async () => {
    server = await startRefusingServer(generous);
    const { answer } = chunkedUpload(server.url, limitBytes);
    expect(await answer).toEqual({ status: 200, body: String(limitBytes) });
  });

  it('refuses every chunked upload that crosses the limit, and the client reads the refusal', async () => {
    const running = await startRefusingServer(generous);
    server = running;
    for (let attempt = 0; attempt < 20; attempt++) {
      const { answer } = chunkedUpload(running.url, 3 * MiB);
      const { status, body } = await answer;
      expect(status).toBe(413);
      expect(JSON.parse(body)).toEqual({
        type: 'error',
        error: expect.objectContaining({ type: 'request_too_large' }),
      });
    }
    await waitUntil(() => running.outcomes.length === 20, { what: 'every upload discarded' });
    for (const outcome of running.outcomes) {
      expect(outcome.stoppedBy).toBe('end');
      // Everything after the chunk that crossed the limit was read and dropped.
      expect(outcome.discardedBytes).toBeGreaterThanOrEqual(2 * MiB - chunk.length);
      expect(outcome.discardedBytes).toBeLessThanOrEqual(2 * MiB);
    }
  });

  it('answers a client that reads only once its whole upload is written', async () => {
    // Closing on unread bytes would reset this client's connection before it looks at the answer.
    const running = await startRefusingServer(generous);
    server = running;
    for (let attempt = 0; attempt < 10; attempt++) {
      expect(await uploadThenRead(running.url, 8 * MiB)).toMatch(/^HTTP\/1\.1 413 /);
    }
  });

  it('stops reading an upload that goes on past the byte bound', async () => {
    const running = await startRefusingServer({ maxBytes: 2 * MiB, maxMs: 10_000 });
    server = running;
    const { answer } = chunkedUpload(running.url, 64 * MiB);
    expect((await answer).status).toBe(413);
    const [outcome] = await waitUntil(
      () => running.outcomes,
      { what: 'the discard to stop' },
      (o) => o.length > 0,
    );
    expect(outcome).toEqual({ stoppedBy: 'max_bytes', discardedBytes: expect.any(Number) });
    expect(outcome!.discardedBytes).toBeGreaterThan(2 * MiB);
    expect(outcome!.discardedBytes).toBeLessThan(2 * MiB + 2 * chunk.length);
  });

  it('stops reading an upload that stalls, after the time bound', async () => {
    const running = await startRefusingServer({ maxBytes: 64 * MiB, maxMs: 200 });
    server = running;
    // A raw connection: an HTTP client would hang up once it has the answer; this one stays, silent,
    // with its body over the limit and never ended.
    const { port } = new URL(running.url);
    const socket = connect(Number(port), '127.0.0.1');
    let received = '';
    let closed = false;
    socket.on('data', (data: Buffer) => (received += data.toString('latin1')));
    socket.on('close', () => (closed = true));
    socket.write('POST / HTTP/1.1\r\nhost: test\r\ntransfer-encoding: chunked\r\n\r\n');
    socket.write(`${(2 * MiB).toString(16)}\r\n`);
    socket.write(Buffer.alloc(2 * MiB, 'x'));
    await waitUntil(() => closed, { what: 'the server to close the connection' });
    expect(received).toMatch(/^HTTP\/1\.1 413 /);
    expect(running.outcomes).toEqual([{ stoppedBy: 'max_ms', discardedBytes: expect.any(Number) }]);
  });

  it('stops reading when the client goes after reading the refusal', async () => {
    const running = await startRefusingServer(generous);
    server = running;
    const { outgoing } = chunkedUpload(running.url, 64 * MiB);
    // As the SDK's fetch does: once the whole answer is in, it drops the rest of its upload.
    outgoing.on('response', (response) => response.on('end', () => outgoing.destroy()).resume());
    const [outcome] = await waitUntil(
      () => running.outcomes,
      { what: 'the discard to stop' },
      (o) => o.length > 0,
    );
    expect(outcome!.stoppedBy).toBe('client_gone');
    expect(outcome!.discardedBytes).toBeLessThan(63 * MiB);
  });

  it('has nothing to discard once the body has ended', async () => {
    const outcomes: DiscardOutcome[] = [];
    const plain = createServer((incoming, response) => {
      void readBody(incoming, unbounded()).then(async () => {
        outcomes.push(await discardRestOfBody(incoming, generous));
        response.end();
      });
    });
    await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
    const { port } = plain.address() as AddressInfo;
    const { answer } = chunkedUpload(`http://127.0.0.1:${port}/`, 1000);
    await answer;
    expect(outcomes).toEqual([{ stoppedBy: 'end', discardedBytes: 0 }]);
    await new Promise<void>((resolve) => plain.close(() => resolve()));
  });
});
