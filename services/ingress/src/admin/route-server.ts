import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { sourceAddress } from '@gw/addresses';
import { gatewayError } from '@gw/errors';
import type { GatewayError } from '@gw/errors';
import type { PlanConfig } from '@gw/config';
import type { Logger } from '@gw/telemetry';
import type { Clients } from '../clients';
import { answerFault } from './answer-check';
import type { AuditTrail } from './audit-trail';
import type { CredentialThrottle } from './credential-throttle';
import { decodeInput } from './input';
import { authenticatePrincipal, requireOperator, requireWriteAccess } from './principal';
import type { ServedRoute } from './route-kit';

export interface RouteServerOptions {
  clients: Clients;
  operatorToken: string;
  trustedProxies: readonly string[];
  logger: Logger;
  sendError(response: Response, error: GatewayError): void;
  plans(): readonly PlanConfig[];
  throttle: CredentialThrottle;
  trail: AuditTrail;
}

const throttled = (waitMs: number) =>
  gatewayError(
    'rate_limit_error',
    'Too many bad admin credentials from this address; wait before trying again (see retry-after).',
    { retryAfterMs: waitMs },
  );

/**
 * What every admin route does around its handler, in this order: a throttled address is refused before
 * any credential is checked; the credential names the principal (a bad one is counted and recorded); a
 * suspended account's key may only read; an operator route refuses admin keys; the input is checked
 * against the route's declaration; the handler answers; a change is recorded; the answer is checked
 * against its declared schema and sent.
 */
export function routeServer(options: RouteServerOptions): (served: ServedRoute) => RequestHandler {
  const { throttle, trail, sendError, logger } = options;

  const serveRoute = async ({ route, handle }: ServedRoute, request: Request, response: Response) => {
    const address = sourceAddress(
      request.socket.remoteAddress ?? '',
      request.headers['x-forwarded-for'] as string | undefined,
      options.trustedProxies,
    );
    const waitMs = throttle.waitMs(address);
    if (waitMs > 0) return sendError(response, throttled(waitMs));
    const principal = await authenticatePrincipal(
      request.headers.authorization,
      options.operatorToken,
      options.clients.auth,
    );
    if (!principal.ok && principal.error.type === 'authentication_error') {
      const emptied = throttle.refused(address);
      const requestId = response.getHeader('x-request-id');
      logger.warn({ source_address: address, request_id: requestId, throttled: emptied }, 'admin credential refused');
      await trail.refusedCredential(address);
    }
    if (!principal.ok) return sendError(response, principal.error);
    const writable = requireWriteAccess(principal.value, request.method);
    if (!writable.ok) return sendError(response, writable.error);
    const operator = route.who === 'operator' ? requireOperator(principal.value) : writable;
    if (!operator.ok) return sendError(response, operator.error);
    const input = decodeInput(route, request);
    if (!input.ok) return sendError(response, input.error);
    const context = { principal: principal.value, clients: options.clients, plans: options.plans };
    const result = await handle(input.value, context);
    if (!result.ok) return sendError(response, result.error);
    const answer = result.value;
    if (answer.kind === 'csv') {
      response
        .status(200)
        .type('text/csv; charset=utf-8')
        .set('content-disposition', `attachment; filename="${answer.filename}"`)
        .send(answer.text);
      return;
    }
    if (answer.audit) await trail.record(principal.value, address, answer.audit);
    const fault = answerFault(route, answer.body, logger);
    if (fault) return sendError(response, fault);
    response.status(route.status).json(answer.body);
  };

  return (served) => (request: Request, response: Response, next: NextFunction) => {
    serveRoute(served, request, response).catch(next);
  };
}
