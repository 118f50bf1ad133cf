import { createServer, STATUS_CODES } from 'node:http';
import type { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { errorEnvelope, gatewayError, httpStatusOf, retryHeaders } from '@gw/errors';
import type { GatewayError } from '@gw/errors';
import { newRequestId } from '@gw/ids';

/** Most bytes of a request's head (request line and headers): Node's default, chosen here on purpose. */
export const maxHeaderBytes = 16 * 1024;

/**
 * An idle keep-alive connection stays open 65 s, longer than the 60 s idle timeout of common load
 * balancers, so that the balancer, not the gateway, closes the connections it pools. Clients connecting
 * directly are told 10 s less: one that honours the Keep-Alive header stops reusing a connection before
 * the server closes it, instead of sending a request on it at the instant the server closes it, which
 * fails as "other side closed" (clients' idle timers run late under load, by a second or more).
 */
export const keepAlive = { idleMs: 65_000, announced: 'timeout=55' } as const;

/** How long Node waits for a request to arrive, counted from its first byte. */
export interface ReceiveBounds {
  /** For the request line and headers; a connection that sends nothing is closed after it too. */
  headersTimeoutMs: number;
  /**
   * For the whole request, body included: the bound of bodies no handler reads (an unknown endpoint, a
   * refused request). The body reader refuses slow bodies sooner, in the pipeline. Responses are not bounded.
   */
  requestTimeoutMs: number;
}

/** The request a connection received last, with its response; kept until the connection is collected. */
interface Exchange {
  request: IncomingMessage;
  response: ServerResponse;
}

const seconds = (ms: number) => `${ms / 1000} s`;

/** What to tell a client whose request Node could not read or did not receive in time; none when it is gone. */
function refusalOf(
  error: NodeJS.ErrnoException,
  receivingBody: boolean,
  bounds: ReceiveBounds,
): GatewayError | undefined {
  const code = error.code ?? '';
  if (code === 'HPE_HEADER_OVERFLOW') {
    return gatewayError(
      'request_too_large',
      `The request headers are larger than the limit of ${maxHeaderBytes} bytes.`,
    );
  }
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return gatewayError(
      'invalid_request_error',
      receivingBody
        ? `The request did not arrive within ${seconds(bounds.requestTimeoutMs)} of its first byte.`
        : `The request headers did not arrive within ${seconds(bounds.headersTimeoutMs)}.`,
    );
  }
  if (code.startsWith('HPE_')) {
    return gatewayError('invalid_request_error', 'The request is not valid HTTP/1.1; it was not read.');
  }
  return undefined;
}

/** A whole HTTP/1.1 response carrying the error envelope; the connection closes after it. */
function rawErrorResponse(error: GatewayError, requestId: string): string {
  const body = JSON.stringify(errorEnvelope(error, requestId));
  const status = httpStatusOf(error.type);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(body)),
    'x-request-id': requestId,
    'request-id': requestId,
    ...retryHeaders(error),
    connection: 'close',
  };
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  return `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${lines.join('')}\r\n${body}`;
}

/**
 * What an HTTP/2 client that opened with the connection preface (prior knowledge, no upgrade) reads as "use
 * HTTP/1.1": the server's connection preface (an empty SETTINGS frame), then GOAWAY with the error code
 * HTTP_1_1_REQUIRED and a reason. The public port speaks HTTP/1.1 only; such a client can retry with it.
 */
export function http2RefusalFrames(): Buffer {
  const reason = Buffer.from('This endpoint speaks HTTP/1.1; retry with HTTP/1.1.', 'ascii');
  const frame = (type: number, payload: Buffer) => {
    const header = Buffer.alloc(9);
    header.writeUIntBE(payload.length, 0, 3);
    header.writeUInt8(type, 3);
    return Buffer.concat([header, payload]);
  };
  const goAway = Buffer.alloc(8);
  goAway.writeUInt32BE(0, 0); // last stream id: none was processed
  goAway.writeUInt32BE(0xd, 4); // HTTP_1_1_REQUIRED
  return Buffer.concat([frame(0x4, Buffer.alloc(0)), frame(0x7, Buffer.concat([goAway, reason]))]);
}

/**
 * Node answers a request it cannot parse (or that arrives too slowly) with a bare status and no body. Here
 * it gets the error envelope with a request id, wherever an answer cannot be mistaken for another: not
 * inside a response already under way (after it, when the bad request was pipelined behind a good one), not
 * to a connection that never sent a byte, not to a peer gone.
 */
function answerUnreadableRequests(server: Server, bounds: ReceiveBounds): void {
  const exchanges = new WeakMap<Duplex, Exchange>();
  const answered = new WeakSet<Duplex>();
  server.on('request', (request: IncomingMessage, response: ServerResponse) =>
    exchanges.set(request.socket, { request, response }),
  );
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    // The parser stays failed and reports every later piece of data again.
    if (answered.has(socket)) return;
    answered.add(socket);
    if (error.code === 'HPE_PAUSED_H2_UPGRADE' && socket.writable) {
      socket.end(http2RefusalFrames(), () => socket.destroy());
      return;
    }
    const exchange = exchanges.get(socket);
    const receiving = exchange !== undefined && !exchange.request.complete ? exchange : undefined;
    const refusal = refusalOf(error, receiving !== undefined, bounds);
    const answerable = receiving
      ? !receiving.response.headersSent
      : exchange === undefined || exchange.response.writableEnded;
    const spoke = !(socket instanceof Socket) || socket.bytesRead > 0;
    const answering = exchange?.request.complete && !exchange.response.writableEnded ? exchange : undefined;
    if (refusal && answering && socket.writable) {
      // Pipelined after a request whose answer is still being written: that answer goes out whole first,
      // then the refusal, instead of both being thrown away with the connection.
      answering.response.once('close', () => {
        if (answering.response.writableFinished && socket.writable) {
          socket.end(rawErrorResponse(refusal, newRequestId()), () => socket.destroy());
        } else socket.destroy();
      });
      return;
    }
    if (refusal && receiving?.response.headersSent && socket.writable) {
      // Answered before its body had all arrived (a refusal whose upload is being dropped): what was
      // written leaves before the connection closes, instead of being thrown away with it.
      socket.end(() => socket.destroy());
      return;
    }
    if (!refusal || !answerable || !spoke || !socket.writable) {
      socket.destroy();
      return;
    }
    const assigned = receiving?.response.getHeader('x-request-id');
    const requestId = typeof assigned === 'string' ? assigned : newRequestId();
    socket.end(rawErrorResponse(refusal, requestId), () => socket.destroy());
  });
}

/** Answers a request the app never sees in the envelope, and closes the connection after it. */
function refuseBeforeApp(request: IncomingMessage, response: ServerResponse, error: GatewayError): void {
  const requestId = newRequestId();
  const body = JSON.stringify(errorEnvelope(error, requestId));
  request.resume();
  response.writeHead(httpStatusOf(error.type), {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    'x-request-id': requestId,
    'request-id': requestId,
    ...retryHeaders(error),
    connection: 'close',
  });
  response.end(body);
}

/**
 * Node answers two requests it can parse by itself, with a bare status and no body: an HTTP/1.1 request
 * without Host (400) and an Expect other than 100-continue (417). Here they get the envelope and a
 * request id too; the unmet expectation is a 400, since the catalogue has no 417.
 */
function answerNodeRefusals(app: RequestListener): RequestListener {
  return (request, response) => {
    if (request.httpVersion === '1.1' && request.headers.host === undefined) {
      refuseBeforeApp(
        request,
        response,
        gatewayError('invalid_request_error', 'An HTTP/1.1 request needs a Host header.'),
      );
      return;
    }
    if (response.shouldKeepAlive) response.setHeader('Keep-Alive', keepAlive.announced);
    app(request, response);
  };
}

function refuseExpectation(request: IncomingMessage, response: ServerResponse): void {
  refuseBeforeApp(
    request,
    response,
    gatewayError('invalid_request_error', 'The Expect header asks for something other than 100-continue.'),
  );
}

/**
 * An HTTP/1.1 server with the gateway's bounds on receiving requests, envelope answers to unreadable ones
 * and its keep-alive rule.
 */
export function createHttpServer(app: RequestListener, bounds: ReceiveBounds): Server {
  const server = createServer(
    {
      maxHeaderSize: maxHeaderBytes,
      headersTimeout: bounds.headersTimeoutMs,
      requestTimeout: bounds.requestTimeoutMs,
      // How often Node looks for requests past those bounds: every 30 s by default, too coarse for them.
      connectionsCheckingInterval: Math.min(1_000, bounds.headersTimeoutMs / 4),
      // Checked by answerNodeRefusals instead, which answers in the envelope.
      requireHostHeader: false,
    },
    answerNodeRefusals(app),
  );
  server.keepAliveTimeout = keepAlive.idleMs;
  server.on('checkExpectation', refuseExpectation);
  answerUnreadableRequests(server, bounds);
  return server;
}
