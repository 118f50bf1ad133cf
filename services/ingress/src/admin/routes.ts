import express from 'express';
import type { NextFunction, Request, Response } from 'express';
import { openApiDocument } from '@gw/admin-api/dist/openapi';
import { gatewayError, quoted } from '@gw/errors';
import type { GatewayError } from '@gw/errors';
import type { PlanConfig } from '@gw/config';
import type { Logger } from '@gw/telemetry';
import { tooLarge } from '../http/body';
import type { Clients } from '../clients';
import { auditTrail } from './audit-trail';
import { CredentialThrottle } from './credential-throttle';
import { servedRoutes } from './endpoints';
import { routeServer } from './route-server';

export interface AdminRoutesOptions {
  clients: Clients;
  operatorToken: string;
  /** Load balancers whose X-Forwarded-For is believed, as on the public port. */
  trustedProxies: readonly string[];
  logger: Logger;
  sendError(response: Response, error: GatewayError): void;
  /** The plans of the gateway YAML in force (reloaded with it). */
  plans(): readonly PlanConfig[];
  throttle?: CredentialThrottle;
}

/** Admin bodies are small JSON documents; a larger one is refused before it is parsed. */
const bodyLimitBytes = 1024 * 1024;

/** What the body parser's refusals say; none repeats the body. */
const unreadableBodyMessages: Record<string, string> = {
  'entity.parse.failed': 'The request body is not valid JSON.',
  'encoding.unsupported': 'The request body has a Content-Encoding the admin API cannot read; send it uncompressed.',
  'charset.unsupported': 'The request body has a charset the admin API cannot read; send UTF-8.',
};

/**
 * The refusal for a request the router could not read: a path segment that is not percent-encoded
 * UTF-8, or a body the parser refused (which carries a 4xx status and a type). Anything else is not a
 * refusal but a fault, left to the app's error handler.
 */
function unreadableRequest(error: unknown): GatewayError | undefined {
  if (error instanceof URIError) {
    return gatewayError('invalid_request_error', 'The path is not valid percent-encoded UTF-8.');
  }
  if (typeof error !== 'object' || error === null) return undefined;
  const { status, type } = error as { status?: unknown; type?: unknown };
  if (typeof status !== 'number' || status < 400 || status > 499) return undefined;
  if (status === 413) return tooLarge(bodyLimitBytes);
  const message = typeof type === 'string' ? unreadableBodyMessages[type] : undefined;
  return gatewayError('invalid_request_error', message ?? 'The request body could not be read.');
}

/** `/keys/{id}` as express writes it: `/keys/:id`. */
const expressPath = (path: string) => path.replace(/\{(\w+)\}/g, ':$1');

/**
 * The admin API of docs/admin-api.md: each route as @gw/admin-api declares it (requests and answers
 * checked against the declaration), served by its handler in endpoints/; every decision is the services'.
 */
export function adminRoutes(options: AdminRoutesOptions): express.Router {
  const { sendError } = options;
  const router = express.Router();
  router.use(express.json({ limit: bodyLimitBytes }));
  // The API's own description, made once from the declarations; no credential needed to read it.
  const document = JSON.stringify(openApiDocument());
  router.get('/openapi.json', (_request, response) => void response.type('application/json').send(document));

  const serve = routeServer({
    ...options,
    throttle: options.throttle ?? new CredentialThrottle(),
    trail: auditTrail(options.clients.adminAccess, options.logger),
  });
  for (const served of servedRoutes) {
    const path = expressPath(served.route.path);
    const method = served.route.method;
    if (method === 'GET') router.get(path, serve(served));
    else if (method === 'POST') router.post(path, serve(served));
    else if (method === 'PATCH') router.patch(path, serve(served));
    else router.delete(path, serve(served));
  }

  // The path is caller text: cut in the message like any other echoed value.
  router.use((request: Request, response: Response) => {
    const path = quoted(`${request.baseUrl}${request.path}`);
    sendError(response, gatewayError('not_found_error', `Unknown endpoint: ${request.method.slice(0, 16)} ${path}.`));
  });

  router.use((error: unknown, _request: Request, response: Response, next: NextFunction) => {
    const refusal = unreadableRequest(error);
    if (refusal) sendError(response, refusal);
    else next(error);
  });

  return router;
}
