import type { AuthClient } from './auth';
import { authClient } from './auth';
import type { Clients } from './connections';
import type { MeteringClient } from './metering';
import { meteringClient } from './metering';
import type { PolicyClient } from './policy';
import { policyClient } from './policy';
import type { QuotaClient } from './quota';
import { quotaClient } from './quota';
import type { MalformedReplies } from './reply';
import type { RouterClient } from './router';
import { routerClient } from './router';

export { createClients } from './connections';
export type { Clients } from './connections';

/** The typed clients of the request path: each decodes its service's replies once, into domain types. */
export interface ServiceClients {
  auth: AuthClient;
  quota: QuotaClient;
  policy: PolicyClient;
  router: RouterClient;
  metering: MeteringClient;
}

export function serviceClients(connections: Clients, malformed: MalformedReplies): ServiceClients {
  return {
    auth: authClient(connections.auth, malformed),
    quota: quotaClient(connections.quota, malformed),
    policy: policyClient(connections.policy, malformed),
    router: routerClient(connections.router, malformed),
    metering: meteringClient(connections.metering, malformed),
  };
}
