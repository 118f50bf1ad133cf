import type { NextFunction, Request, Response } from 'express';
import { gatewayError } from '@gw/errors';
import type { GatewayError } from '@gw/errors';

/** The name a Host header carries, without its port, lower-case; an IPv6 literal keeps its brackets. */
export function hostName(host: string | undefined): string {
  const value = (host ?? '').trim().toLowerCase();
  if (value.startsWith('[')) return value.slice(0, value.indexOf(']') + 1);
  const colon = value.indexOf(':');
  return colon < 0 ? value : value.slice(0, colon);
}

/**
 * The admin port answers only for the names it is configured with: a page of another site whose name
 * an attacker points at this address (DNS rebinding) gets nothing from the browser's requests.
 */
export function requireKnownHost(
  allowedHosts: readonly string[],
  sendError: (response: Response, error: GatewayError) => void,
) {
  const allowed = new Set(allowedHosts.map((name) => name.trim().toLowerCase()));
  return (request: Request, response: Response, next: NextFunction) => {
    if (allowed.has(hostName(request.headers.host))) return next();
    sendError(
      response,
      gatewayError(
        'permission_error',
        'The admin port does not answer for this Host; use one of the names in its ADMIN_ALLOWED_HOSTS.',
      ),
    );
  };
}
