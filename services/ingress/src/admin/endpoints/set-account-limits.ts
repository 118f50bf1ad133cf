import { adminApi } from '@gw/admin-api';
import { err, gatewayError } from '@gw/errors';
import { accountResource } from '../resources';
import { json, serve } from '../route-kit';

const big = (value: number | null | undefined) => (value === null || value === undefined ? undefined : BigInt(value));

/** Only the fields sent change; null clears an override. */
export const setAccountLimits = serve(adminApi.setAccountLimits, async ({ params, body }, { clients }) => {
  const fields = Object.keys(body);
  if (fields.length === 0) {
    return err(
      gatewayError(
        'invalid_request_error',
        'Expected at least one of requests_per_minute, concurrency, monthly_tokens, hard_ceiling_tokens, overage.',
      ),
    );
  }
  const accountId = params.id;
  const before = await clients.auth.getAccount({ id: accountId });
  if (!before.ok) return before;
  const changed = await clients.auth.setAccountLimits({
    accountId,
    fields,
    limits: {
      requestsPerMinute: big(body.requests_per_minute),
      concurrency: big(body.concurrency),
      monthlyTokens: big(body.monthly_tokens),
      hardCeilingTokens: big(body.hard_ceiling_tokens),
      overage: body.overage ?? undefined,
    },
  });
  if (!changed.ok) return changed;
  const after = accountResource(changed.value.account!);
  return json(after, {
    action: 'account.limits',
    accountId,
    target: { kind: 'account', id: accountId },
    before: accountResource(before.value.account!).limits,
    after: after.limits,
  });
});
