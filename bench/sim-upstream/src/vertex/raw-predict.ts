import type { IncomingMessage, ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import type { AnthropicSimOptions } from '../anthropic/common';
import { handleCountTokens } from '../anthropic/count-tokens';
import { sendError } from '../anthropic/errors';
import { handleMessages } from '../anthropic/messages';
import type { SimExchange } from '../exchange';

export const vertexAnthropicVersion = 'vertex-2023-10-16';

/**
 * Access tokens the simulated Google metadata server issued (bounded): Vertex routes accept only
 * these, or the listener's fixed token when one is configured.
 */
export class GoogleTokens {
  private readonly issued = new Set<string>();

  constructor(private readonly fixed?: string) {}

  issue(): string {
    const token = `ya29.sim-${randomBytes(24).toString('base64url')}`;
    if (this.issued.size >= 10_000) this.issued.clear();
    this.issued.add(token);
    return token;
  }

  accepts(authorization: string | undefined): boolean {
    const token = /^Bearer (\S+)$/.exec(authorization ?? '')?.[1];
    return token !== undefined && (token === this.fixed || this.issued.has(token));
  }
}

/** Google's error envelope, which Vertex sends for what it refuses before the model sees it. */
function sendGoogleError(response: ServerResponse, status: number, grpcStatus: string, message: string): void {
  response.writeHead(status, { 'content-type': 'application/json; charset=UTF-8' });
  response.end(JSON.stringify({ error: { code: status, message, status: grpcStatus } }));
}

/**
 * The simulated GKE metadata server's token endpoints (as workload identity serves them), so that
 * Google's application default credentials run for real against it.
 */
export function handleMetadata(
  request: IncomingMessage,
  response: ServerResponse,
  path: string,
  tokens: GoogleTokens,
): void {
  if (request.headers['metadata-flavor'] !== 'Google') {
    response.writeHead(403, { 'content-type': 'text/plain' }).end('Missing Metadata-Flavor:Google header.');
    return;
  }
  const headers = { 'metadata-flavor': 'Google' };
  if (path.endsWith('/instance/service-accounts/default/token')) {
    response.writeHead(200, { ...headers, 'content-type': 'application/json' });
    response.end(JSON.stringify({ access_token: tokens.issue(), expires_in: 3599, token_type: 'Bearer' }));
  } else if (path.endsWith('/project/project-id')) response.writeHead(200, headers).end('demo-project');
  else if (path.endsWith('/universe/universe-domain')) response.writeHead(200, headers).end('googleapis.com');
  else response.writeHead(200, headers).end('');
}

const modelPathPattern =
  /^\/v1\/projects\/([^/]+)\/locations\/([^/]+)\/publishers\/anthropic\/models\/([^/:]+):(rawPredict|streamRawPredict)$/;

export function isVertexPath(path: string): boolean {
  return modelPathPattern.test(path);
}

/**
 * rawPredict / streamRawPredict: the bearer token first, then the Vertex body (`anthropic_version`,
 * no `model`; `"stream": true` only on streamRawPredict), then the same simulated model; the
 * `count-tokens` model counts as the Anthropic API does. Answers are the Anthropic API's own.
 */
export async function handleRawPredict(
  exchange: SimExchange,
  options: AnthropicSimOptions,
  tokens: GoogleTokens,
  path: string,
) {
  const { response } = exchange;
  const [, , , model, method] = modelPathPattern.exec(path) as unknown as string[];
  if (!tokens.accepts(exchange.request.headers.authorization))
    return sendGoogleError(
      response,
      401,
      'UNAUTHENTICATED',
      'Request had invalid authentication credentials. Expected OAuth 2 access token.',
    );
  const value = exchange.body.kind === 'json' ? exchange.body.value : undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return sendGoogleError(response, 400, 'INVALID_ARGUMENT', 'Invalid JSON payload received.');
  const body = value as Record<string, unknown>;
  // The documented version, or a dated API version, which the current vertex SDK sends.
  const version = body.anthropic_version;
  if (version !== vertexAnthropicVersion && !(typeof version === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(version)))
    return sendError(response, exchange.requestId, 400, "anthropic_version: Input should be 'vertex-2023-10-16'");
  const counting = model === 'count-tokens';
  if (!counting && 'model' in body)
    return sendError(response, exchange.requestId, 400, 'model: Extra inputs are not permitted');
  const streaming = body.stream === true;
  if (!counting && streaming !== (method === 'streamRawPredict'))
    return sendGoogleError(
      response,
      400,
      'FAILED_PRECONDITION',
      `Stream must be ${method === 'streamRawPredict'} for ${method}.`,
    );
  const { anthropic_version: _version, anthropic_beta: betas, ...rest } = body;
  const headers = {
    'anthropic-version': '2023-06-01',
    ...(Array.isArray(betas) && betas.length > 0 ? { 'anthropic-beta': betas.join(',') } : {}),
  };
  const inner: SimExchange = {
    ...exchange,
    request: { headers, socket: exchange.request.socket } as unknown as IncomingMessage,
    body: { kind: 'json', value: counting ? rest : { ...rest, model } },
  };
  const protocol = { ...options, apiKey: undefined };
  await (counting ? handleCountTokens(inner, protocol) : handleMessages(inner, protocol));
}
