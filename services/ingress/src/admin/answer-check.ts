import type { Request } from 'express';
import { adminApi } from '@gw/admin-api';
import type { AdminRoute } from '@gw/admin-api';
import { gatewayError } from '@gw/errors';
import type { GatewayError } from '@gw/errors';
import type { Logger } from '@gw/telemetry';

/** A path's shape whatever its parameters are called: `/keys/:id` and `/keys/{id}` alike. */
const shape = (method: string, path: string) => `${method} ${path.replace(/(:\w+|\{\w+\})/g, ':')}`;

const routesByShape = new Map<string, AdminRoute>(
  Object.values(adminApi).map((route: AdminRoute) => [shape(route.method, route.path), route]),
);

/** The declaration of the route that answers the request (its express path), if the table has it. */
export function declaredRoute(request: Request): AdminRoute | undefined {
  const path = (request.route as { path?: unknown } | undefined)?.path;
  return typeof path === 'string' ? routesByShape.get(shape(request.method, path)) : undefined;
}

/**
 * Checks an answer against its route's declared status and schema before it leaves: an answer that does
 * not match is the gateway's fault, logged with what differs and answered as a 500, never sent as is.
 */
export function answerFault(request: Request, status: number, body: unknown, logger: Logger): GatewayError | undefined {
  const route = declaredRoute(request);
  const checked = route?.response.safeParse(body);
  if (route && status === route.status && checked?.success) return undefined;
  const issue = checked?.success === false ? checked.error.issues[0] : undefined;
  logger.error(
    {
      route: route?.name ?? shape(request.method, String((request.route as { path?: unknown } | undefined)?.path)),
      status,
      issue: issue && `${issue.path.join('.')}: ${issue.message}`,
    },
    'admin answer does not match its declared schema',
  );
  return gatewayError('api_error', 'The admin API made an answer that does not match its schema.');
}
