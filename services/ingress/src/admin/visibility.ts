import { ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import type { authv1, webhooksv1 } from '@gw/proto';
import type { Clients } from '../clients';
import { requireAccount } from './principal';
import type { Principal } from './principal';

/** A key the caller may see, or 404 for one of another account. */
export async function visibleKey(
  clients: Clients,
  principal: Principal,
  keyId: string,
): Promise<Result<authv1.ApiKey>> {
  const found = await clients.auth.getKey({ keyId });
  if (!found.ok) return found;
  const key = found.value.apiKey!;
  const allowed = requireAccount(principal, key.accountId, 'key');
  return allowed.ok ? ok(key) : allowed;
}

/** A webhook endpoint the caller may see, or 404 for one of another account. */
export async function visibleEndpoint(
  clients: Clients,
  principal: Principal,
  endpointId: string,
): Promise<Result<webhooksv1.WebhookEndpoint>> {
  const found = await clients.webhooks.getEndpoint({ endpointId });
  if (!found.ok) return found;
  const endpoint = found.value.endpoint!;
  const allowed = requireAccount(principal, endpoint.accountId, 'webhook endpoint');
  return allowed.ok ? ok(endpoint) : allowed;
}
