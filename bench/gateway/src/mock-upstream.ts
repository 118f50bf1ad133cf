import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { EventStreamCodec } from '@smithy/core/event-streams';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';

/**
 * The fastest upstream that still speaks the Anthropic Messages wire format the router relays, so
 * that the benchmark measures the gateway and not the simulator (bench/sim-upstream validates every
 * field and parses directives, which costs more than some gateway hops). It answers every
 * `POST /v1/messages` with the same short completion, whole or streamed, after a fixed latency; and
 * Bedrock's `POST /model/<id>/invoke-with-response-stream` with the same events framed as an AWS event
 * stream, one frame per event (the signature is not checked: the benchmark measures the signing).
 */

export interface MockUpstreamOptions {
  host: string;
  port: number;
  /** Waited before the response headers of every message, as a model's time to answer. */
  latencyMs: number;
}

export interface MockUpstream {
  /** http://host:port, no trailing slash. */
  url: string;
  close(): Promise<void>;
}

/** The completion, one output token per chunk: a streamed answer sends one content_block_delta each. */
export const completionChunks = ['Hello', ' from', ' the', ' mock', ' upstream.'];
const completionText = completionChunks.join('');

const jsonHeaders = { 'content-type': 'application/json' };

function sseEvent(name: string, data: unknown): string {
  return `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** Like the real API's estimate: about four bytes per token, at least one. */
function inputTokensOf(bodyBytes: number): number {
  return Math.max(1, Math.ceil(bodyBytes / 4));
}

function sendMessage(response: ServerResponse, id: string, model: string, inputTokens: number): void {
  const body = JSON.stringify({
    id,
    type: 'message',
    role: 'assistant',
    model,
    content: [{ type: 'text', text: completionText }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: {
      input_tokens: inputTokens,
      output_tokens: completionChunks.length,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    },
  });
  response.writeHead(200, { ...jsonHeaders, 'request-id': id.replace('msg_', 'req_') }).end(body);
}

/** The events in the upstream's order, each written whole. */
function sendStream(response: ServerResponse, id: string, model: string, inputTokens: number): void {
  response.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'request-id': id.replace('msg_', 'req_'),
  });
  response.write(
    sseEvent('message_start', {
      type: 'message_start',
      message: {
        id,
        type: 'message',
        role: 'assistant',
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: {
          input_tokens: inputTokens,
          output_tokens: 1,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 0,
        },
      },
    }),
  );
  response.write(
    sseEvent('content_block_start', {
      type: 'content_block_start',
      index: 0,
      content_block: { type: 'text', text: '' },
    }),
  );
  response.write(sseEvent('ping', { type: 'ping' }));
  for (const text of completionChunks) {
    response.write(
      sseEvent('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } }),
    );
  }
  response.write(sseEvent('content_block_stop', { type: 'content_block_stop', index: 0 }));
  response.write(
    sseEvent('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { output_tokens: completionChunks.length },
    }),
  );
  response.end(sseEvent('message_stop', { type: 'message_stop' }));
}

const eventStreamCodec = new EventStreamCodec(toUtf8, fromUtf8);

/** One Bedrock `chunk` frame: the event's JSON, base64 in `bytes`. */
function chunkFrame(event: unknown): Uint8Array {
  const string = (value: string) => ({ type: 'string' as const, value });
  return eventStreamCodec.encode({
    headers: {
      ':event-type': string('chunk'),
      ':content-type': string('application/json'),
      ':message-type': string('event'),
    },
    body: Buffer.from(JSON.stringify({ bytes: Buffer.from(JSON.stringify(event)).toString('base64') })),
  });
}

/** The streamed events as Bedrock frames them, each written as its own frame. */
function sendEventStream(response: ServerResponse, id: string, model: string, inputTokens: number): void {
  response.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream', 'x-amzn-requestid': id });
  const usage = { input_tokens: inputTokens, output_tokens: 1 };
  const message = { id, type: 'message', role: 'assistant', model, content: [], stop_reason: null, usage };
  response.write(chunkFrame({ type: 'message_start', message }));
  response.write(chunkFrame({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }));
  for (const text of completionChunks) {
    response.write(chunkFrame({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } }));
  }
  response.write(chunkFrame({ type: 'content_block_stop', index: 0 }));
  response.write(
    chunkFrame({
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { output_tokens: completionChunks.length },
    }),
  );
  const metrics = { inputTokenCount: inputTokens, outputTokenCount: completionChunks.length };
  response.end(chunkFrame({ type: 'message_stop', 'amazon-bedrock-invocationMetrics': metrics }));
}

function sendError(response: ServerResponse, status: number, type: string, message: string): void {
  response.writeHead(status, jsonHeaders).end(JSON.stringify({ type: 'error', error: { type, message } }));
}

function readBody(request: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.once('end', () => resolve(Buffer.concat(chunks)));
    request.once('error', reject);
  });
}

export function startMockUpstream(options: MockUpstreamOptions): Promise<MockUpstream> {
  let served = 0;
  const answer = async (request: IncomingMessage, response: ServerResponse) => {
    // The router's active health check: any answer below 500 proves the endpoint alive.
    if (request.method === 'GET' && request.url === '/v1/models') {
      response.writeHead(200, jsonHeaders).end('{"data":[],"has_more":false,"first_id":null,"last_id":null}');
      return;
    }
    const path = request.url?.split('?')[0] ?? '';
    const bedrockModel = /^\/model\/([^/]+)\/invoke-with-response-stream$/.exec(path)?.[1];
    if (request.method !== 'POST' || (path !== '/v1/messages' && bedrockModel === undefined)) {
      sendError(response, 404, 'not_found_error', 'Not found');
      return;
    }
    const raw = await readBody(request);
    let body: { model?: unknown; stream?: unknown };
    try {
      body = JSON.parse(raw.toString('utf8')) as typeof body;
    } catch {
      sendError(response, 400, 'invalid_request_error', 'The body is not JSON.');
      return;
    }
    served += 1;
    const id = `msg_bench${served.toString().padStart(16, '0')}`;
    const model = typeof body.model === 'string' ? body.model : decodeURIComponent(bedrockModel ?? 'bench');
    if (options.latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, options.latencyMs));
    if (bedrockModel !== undefined) sendEventStream(response, id, model, inputTokensOf(raw.length));
    else if (body.stream === true) sendStream(response, id, model, inputTokensOf(raw.length));
    else sendMessage(response, id, model, inputTokensOf(raw.length));
  };
  const server = createServer((request, response) => {
    answer(request, response).catch(() => response.destroy());
  });
  server.keepAliveTimeout = 65_000;
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : options.port;
      resolve({
        url: `http://${options.host}:${port}`,
        close: () =>
          new Promise<void>((closed) => {
            server.close(() => closed());
            server.closeAllConnections();
          }),
      });
    });
  });
}
