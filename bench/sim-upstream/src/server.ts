import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AnthropicSimOptions } from './anthropic/common';
import { handleCountTokens } from './anthropic/count-tokens';
import { sendError } from './anthropic/errors';
import { handleMessages } from './anthropic/messages';
import type { ParsedBody, SimExchange } from './exchange';
import { randomId } from './ids';
import { handleChatCompletions } from './openai/chat';
import { sendOpenAIError } from './openai/errors';
import { handleInvoke } from './bedrock/invoke';
import type { SimAwsOptions } from './bedrock/sigv4';
import { handleSts, SimAwsIdentities } from './bedrock/sts';
import { rawBodyLimitBytes, RequestLog, withoutCredentials } from './request-log';
import { GoogleTokens, handleMetadata, handleRawPredict, isVertexPath } from './vertex/raw-predict';
import type { RecordedRequest } from './request-log';

export interface SimUpstreamOptions {
  host: string;
  /** 0 picks a free port. */
  port: number;
  /**
   * When set, requests must carry it: in `x-api-key` for the Anthropic protocol, as
   * `Authorization: Bearer` (or Azure's `api-key`) for chat completions.
   */
  apiKey?: string;
  /** The AWS identity and region the listener's Bedrock routes verify SigV4 against. */
  aws?: SimAwsOptions;
  /**
   * The temporary credentials of the simulated STS (`POST /`, as on sts.amazonaws.com), which the Bedrock routes also
   * accept; listeners of one process share one. Absent: the listener has its own.
   */
  awsIdentities?: SimAwsIdentities;
  /** A bearer token Vertex routes accept besides those the simulated metadata server issues. */
  googleToken?: string;
}

/** The identity a simulated Bedrock listener accepts unless told otherwise (not a real key). */
export const defaultSimAws: SimAwsOptions = {
  accessKeyId: 'AKIASIMULATED0000001',
  secretAccessKey: 'sim/secret/key/not/a/real/one/0000000000',
  region: 'eu-west-2',
};

export interface RunningSimUpstream {
  /** Base URL without a trailing slash, e.g. http://127.0.0.1:9101. */
  url: string;
  port: number;
  close(): Promise<void>;
}

/** The upstream's own limit (32 MB); bigger bodies get 413 like there. */
const bodyLimitBytes = 32 * 1024 * 1024;
const requestLogCapacity = 100;

/** Reads the whole body; undefined when it exceeds the limit. */
async function readBody(request: IncomingMessage): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > bodyLimitBytes) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

function parseBody(raw: Buffer): ParsedBody {
  try {
    return { kind: 'json', value: JSON.parse(raw.toString('utf8')) as unknown };
  } catch {
    return { kind: 'invalid' };
  }
}

function sendJson(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json', 'request-id': randomId('req_') });
  response.end(JSON.stringify(body));
}

/** How each protocol refuses a body over the limit, in its own error envelope. */
const tooLarge = {
  anthropic: (response: ServerResponse, requestId: string) =>
    sendError(response, requestId, 413, 'Request exceeds the maximum allowed number of bytes.', {
      connection: 'close',
    }),
  openai: (response: ServerResponse, requestId: string) =>
    sendOpenAIError(response, requestId, 413, 'Request exceeds the maximum allowed number of bytes.', {
      headers: { connection: 'close' },
    }),
};

/** One protocol request as the listener received it, and the handler it goes to. */
interface Recorded {
  handler: (exchange: SimExchange, protocolOptions: AnthropicSimOptions) => Promise<void>;
  request: IncomingMessage;
  response: ServerResponse;
  path: string;
  protocolName: keyof typeof tooLarge;
}

/** Reads, records and hands one protocol request to its handler; the log follows what became of the response. */
async function serveRecordedWith(
  log: RequestLog,
  protocol: AnthropicSimOptions,
  { handler, request, response, path, protocolName }: Recorded,
): Promise<void> {
  const requestId = randomId('req_');
  const raw = await readBody(request);
  if (raw === undefined) {
    tooLarge[protocolName](response, requestId);
    return;
  }
  const body = parseBody(raw);
  const record: RecordedRequest = {
    requestId,
    receivedAt: new Date().toISOString(),
    method: request.method ?? '',
    path,
    headers: withoutCredentials(request.headers),
    body: body.kind === 'json' ? body.value : null,
    ...(raw.length <= rawBodyLimitBytes ? { rawBody: raw.toString('utf8') } : {}),
    outcome: 'in_progress',
  };
  log.add(record);

  const clientGone = new AbortController();
  let dropped = false;
  response.on('close', () => {
    if (response.writableFinished) record.outcome = 'completed';
    else {
      record.outcome = dropped ? 'dropped' : 'client_closed';
      clientGone.abort();
    }
  });
  const exchange: SimExchange = {
    request,
    response,
    requestId,
    body,
    raw,
    signal: clientGone.signal,
    drop: () => {
      dropped = true;
      request.socket.destroy();
    },
  };
  await handler(exchange, protocol);
}

/** Starts one listener of the simulated upstream. */
export async function startSimUpstream(options: SimUpstreamOptions): Promise<RunningSimUpstream> {
  const log = new RequestLog(requestLogCapacity);

  const protocol: AnthropicSimOptions = { apiKey: options.apiKey };
  const aws = options.aws ?? defaultSimAws;
  const awsIdentities = options.awsIdentities ?? new SimAwsIdentities();
  const googleTokens = new GoogleTokens(options.googleToken);

  const serveRecorded = (
    handler: (exchange: SimExchange, protocolOptions: AnthropicSimOptions) => Promise<void>,
    request: IncomingMessage,
    response: ServerResponse,
    path: string,
    protocolName: keyof typeof tooLarge = 'anthropic',
  ) => serveRecordedWith(log, protocol, { handler, request, response, path, protocolName });

  const dispatch = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const url = new URL(request.url ?? '/', 'http://sim');
    const route = `${request.method ?? ''} ${url.pathname}`;
    switch (route) {
      case 'POST /v1/messages':
        return serveRecorded(handleMessages, request, response, url.pathname + url.search);
      case 'POST /v1/messages/count_tokens':
        return serveRecorded(handleCountTokens, request, response, url.pathname + url.search);
      case 'POST /v1/chat/completions':
        return serveRecorded(handleChatCompletions, request, response, url.pathname + url.search, 'openai');
      // STS's query protocol posts to the endpoint's root, which no other protocol uses.
      case 'POST /':
        return handleSts((await readBody(request)) ?? Buffer.alloc(0), response, awsIdentities);
      case 'GET /_sim/requests':
        return sendJson(response, 200, log.list());
      case 'DELETE /_sim/requests':
        log.clear();
        response.writeHead(204).end();
        return;
      default:
        {
          const invoke = /^\/model\/([^/]+)\/(invoke|invoke-with-response-stream)$/.exec(url.pathname);
          if (request.method === 'POST' && invoke !== null) {
            const modelId = decodeURIComponent(invoke[1]!);
            const stream = invoke[2] === 'invoke-with-response-stream';
            return serveRecorded(
              (exchange) => handleInvoke(exchange, protocol, aws, awsIdentities, modelId, stream),
              request,
              response,
              url.pathname,
            );
          }
          if (request.method === 'POST' && isVertexPath(url.pathname))
            return serveRecorded(
              (exchange) => handleRawPredict(exchange, protocol, googleTokens, url.pathname),
              request,
              response,
              url.pathname,
            );
          if (request.method === 'GET' && url.pathname.startsWith('/computeMetadata/v1/'))
            return handleMetadata(request, response, url.pathname, googleTokens);
        }
        // Unknown routes answer like the upstream does, in its error envelope.
        return sendError(response, randomId('req_'), 404, `Not found: ${route}`);
    }
  };

  const server = createServer((request, response) => {
    dispatch(request, response).catch(() => {
      // Only a bug of the simulator gets here; the client must still get an answer.
      if (!response.headersSent) sendError(response, randomId('req_'), 500, 'sim: internal error');
      else response.destroy();
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    url: `http://${host}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Keep-alive and in-flight connections would hold close() open.
        server.closeAllConnections();
      }),
  };
}
