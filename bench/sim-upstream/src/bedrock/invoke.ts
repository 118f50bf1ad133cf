import type { IncomingMessage, ServerResponse } from 'node:http';
import { EventStreamCodec } from '@smithy/core/event-streams';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import type { AnthropicSimOptions } from '../anthropic/common';
import { knownBetas } from '../anthropic/common';
import { handleMessages } from '../anthropic/messages';
import type { SimExchange } from '../exchange';
import type { SimAwsOptions } from './sigv4';
import { verifySigV4 } from './sigv4';
import type { SimAwsIdentities } from './sts';

const codec = new EventStreamCodec(toUtf8, fromUtf8);
/**
 * Whether Bedrock takes this `anthropic_version`: its documented `bedrock-2023-05-31`, or a dated API
 * version, which the current `@anthropic-ai/bedrock-sdk` sends (it moves its `anthropic-version`
 * header into the body).
 */
function isBedrockVersion(version: unknown): boolean {
  return version === 'bedrock-2023-05-31' || (typeof version === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(version));
}

/** Bedrock's error answer: the type in `x-amzn-ErrorType`, `{"message": …}` as the body. */
export function sendBedrockError(
  response: ServerResponse,
  requestId: string,
  status: number,
  type: string,
  message: string,
) {
  response.writeHead(status, {
    'content-type': 'application/json',
    'x-amzn-requestid': requestId,
    'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`,
  });
  response.end(JSON.stringify({ message }));
}

/** The Bedrock exception for the status an Anthropic-protocol answer would have had. */
function exceptionOfStatus(status: number): { status: number; type: string } {
  if (status === 400 || status === 413) return { status: 400, type: 'ValidationException' };
  if (status === 401 || status === 403) return { status: 403, type: 'AccessDeniedException' };
  if (status === 404) return { status: 404, type: 'ResourceNotFoundException' };
  if (status === 429) return { status: 429, type: 'ThrottlingException' };
  if (status === 503 || status === 529) return { status: 503, type: 'ServiceUnavailableException' };
  return { status: 500, type: 'InternalServerException' };
}

/** The `:exception-type` of an Anthropic error event in a begun stream. */
function streamExceptionOf(errorType: string): string {
  if (errorType === 'rate_limit_error') return 'throttlingException';
  if (errorType === 'overloaded_error') return 'serviceUnavailableException';
  return 'modelStreamErrorException';
}

function frame(headers: Record<string, string>, body: string): Uint8Array {
  return codec.encode({
    headers: Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, { type: 'string', value }])),
    body: Buffer.from(body),
  });
}

/**
 * Stands between the Anthropic handler and the real response: an SSE event becomes one event-stream
 * frame, written as the handler writes it (each its own frame, as Bedrock sends them); an error event
 * becomes an exception frame; an error answer becomes Bedrock's; message_stop carries Bedrock's
 * invocation metrics.
 */
function bedrockResponse(real: ServerResponse, requestId: string): ServerResponse {
  let mode: 'stream' | 'json' | 'error' = 'json';
  let errorStatus = 500;
  const usage = { input: 0, output: 0 };
  const started = Date.now();
  const toFrame = (text: string): Uint8Array => {
    const event = /^event: (.*)\ndata: (.*)\n\n$/s.exec(text);
    const name = event?.[1] ?? '';
    let data = event?.[2] ?? '';
    if (name === 'error') {
      const error = (JSON.parse(data) as { error?: { type?: string; message?: string } }).error ?? {};
      return frame(
        {
          ':message-type': 'exception',
          ':exception-type': streamExceptionOf(error.type ?? ''),
          ':content-type': 'application/json',
        },
        JSON.stringify({ message: error.message ?? 'error' }),
      );
    }
    const parsed = JSON.parse(data) as Record<string, { usage?: Record<string, number> } & Record<string, number>>;
    if (name === 'message_start') usage.input = parsed.message?.usage?.input_tokens ?? 0;
    if (name === 'message_delta')
      usage.output = (parsed.usage as unknown as Record<string, number>)?.output_tokens ?? 0;
    if (name === 'message_stop') {
      const latency = Date.now() - started;
      data = JSON.stringify({
        ...parsed,
        'amazon-bedrock-invocationMetrics': {
          inputTokenCount: usage.input,
          outputTokenCount: usage.output,
          invocationLatency: latency,
          firstByteLatency: Math.min(latency, 50),
        },
      });
    }
    const bytes = Buffer.from(data).toString('base64');
    return frame(
      { ':event-type': 'chunk', ':content-type': 'application/json', ':message-type': 'event' },
      JSON.stringify({ bytes }),
    );
  };
  const proxy = {
    writeHead(status: number, headers: Record<string, string> = {}) {
      const type = headers['content-type'] ?? '';
      if (status !== 200) {
        mode = 'error';
        errorStatus = status;
        return proxy;
      }
      mode = type.startsWith('text/event-stream') ? 'stream' : 'json';
      real.writeHead(200, {
        'content-type': mode === 'stream' ? 'application/vnd.amazon.eventstream' : 'application/json',
        'x-amzn-requestid': requestId,
      });
      return proxy;
    },
    write(chunk: string, callback?: (error?: Error | null) => void) {
      return mode === 'stream' ? real.write(toFrame(chunk), callback) : real.write(chunk, callback);
    },
    end(chunk?: string) {
      if (mode === 'error') {
        const message = (JSON.parse(chunk ?? '{}') as { error?: { message?: string } }).error?.message ?? 'error';
        const exception = exceptionOfStatus(errorStatus);
        sendBedrockError(real, requestId, exception.status, exception.type, message);
        return proxy;
      }
      if (mode === 'stream' || chunk === undefined) real.end();
      else real.end(chunk);
      return proxy;
    },
    get headersSent() {
      return real.headersSent;
    },
  };
  return proxy as unknown as ServerResponse;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** What InvokeModel refuses of a body as Bedrock does: fields it does not take, and the version. */
function bodyRefusal(body: Record<string, unknown>): string | undefined {
  for (const field of ['model', 'stream']) {
    if (field in body)
      return `Malformed input request: #: extraneous key [${field}] is not permitted, please reformat your input and try again.`;
  }
  if (!isBedrockVersion(body.anthropic_version))
    return 'Malformed input request: #/anthropic_version: expected bedrock-2023-05-31, please reformat your input and try again.';
  const betas = body.anthropic_beta;
  if (betas !== undefined) {
    if (!Array.isArray(betas) || !betas.every((beta) => typeof beta === 'string'))
      return 'Malformed input request: #/anthropic_beta: expected type: JSONArray of strings';
    const unknown = betas.filter((beta) => !knownBetas.includes(beta));
    if (unknown.length > 0) return `invalid beta flag: ${unknown.join(', ')}`;
  }
  return undefined;
}

/**
 * `POST /model/{modelId}/invoke` and `/invoke-with-response-stream`: the SigV4 signature first, as
 * the real service, then the Bedrock body, then the same simulated model as the Anthropic protocol.
 */
export async function handleInvoke(
  exchange: SimExchange,
  options: AnthropicSimOptions,
  aws: SimAwsOptions,
  identities: SimAwsIdentities,
  modelId: string,
  stream: boolean,
): Promise<void> {
  const { response, requestId } = exchange;
  const verdict = verifySigV4(exchange.request, exchange.raw, aws, identities);
  if (!verdict.ok) return sendBedrockError(response, requestId, verdict.status, verdict.type, verdict.message);
  if (exchange.body.kind !== 'json' || !isRecord(exchange.body.value))
    return sendBedrockError(
      response,
      requestId,
      400,
      'ValidationException',
      'Malformed input request, please reformat your input and try again.',
    );
  const body = exchange.body.value;
  // `sim:bedrock-unavailable`: this provider alone is out, so that failover to another can be shown.
  if (JSON.stringify(body.messages ?? '').includes('sim:bedrock-unavailable'))
    return sendBedrockError(response, requestId, 503, 'ServiceUnavailableException', 'Bedrock is unavailable.');
  const refusal = bodyRefusal(body);
  if (refusal !== undefined) return sendBedrockError(response, requestId, 400, 'ValidationException', refusal);
  const { anthropic_version: _version, anthropic_beta: betas, ...rest } = body;
  const headers = {
    'anthropic-version': '2023-06-01',
    ...(Array.isArray(betas) && betas.length > 0 ? { 'anthropic-beta': betas.join(',') } : {}),
  };
  const inner: SimExchange = {
    ...exchange,
    request: { headers, socket: exchange.request.socket } as unknown as IncomingMessage,
    response: bedrockResponse(response, requestId),
    body: { kind: 'json', value: { ...rest, model: modelId, ...(stream ? { stream: true } : {}) } },
  };
  await handleMessages(inner, { ...options, apiKey: undefined });
}
