import type { AdminRoute } from '@gw/admin-api';
import { gatewayError } from '@gw/errors';
import type { GatewayError } from '@gw/errors';
import type { Logger } from '@gw/telemetry';

/**
 * Checks an answer against its route's declared schema before it leaves: an answer that does not match
 * is the gateway's fault, logged with what differs and answered as a 500, never sent as is.
 */
export function answerFault(route: AdminRoute, body: unknown, logger: Logger): GatewayError | undefined {
  const checked = route.response.safeParse(body);
  if (checked.success) return undefined;
  const issue = checked.error.issues[0];
  logger.error(
    { route: route.name, issue: issue && `${issue.path.join('.')}: ${issue.message}` },
    'admin answer does not match its declared schema',
  );
  return gatewayError('api_error', 'The admin API made an answer that does not match its schema.');
}
