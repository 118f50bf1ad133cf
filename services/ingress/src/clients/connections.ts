import { grpcMessageLimitFor } from '@gw/config';
import { createMultiplexedClient, createServiceClient } from '@gw/grpc';
import { adminaccessv1, authv1, meteringv1, policyv1, quotav1, routerv1, webhooksv1 } from '@gw/proto';
import type { IngressConfig } from '../config';

/** The gRPC connections to the services ingress calls (the admin API uses them as they are). */
export function createClients(config: IngressConfig) {
  const timeout = config.CONTROL_CALL_TIMEOUT_MS;
  // Bodies of up to BODY_LIMIT_BYTES travel whole to policy and router (and back, after privacy modes).
  const maxMessageBytes = grpcMessageLimitFor(config.BODY_LIMIT_BYTES);
  const routerOptions = {
    address: config.ROUTER_ADDRESS,
    callee: 'router',
    defaultTimeoutMs: 0,
    maxMessageBytes,
    transport: config.grpcTransport,
    // A completion whose stream broke before any event of it came back (a router pod that went away as the
    // call reached it) has given the caller nothing: it goes to another stream once a router answers,
    // instead of failing the request with a 503. A stopping router's refusals always move.
    streamRetry: { attempts: 3, readyWithinMs: 3_000 },
  };
  return {
    auth: createServiceClient(authv1.AuthService, {
      address: config.AUTH_ADDRESS,
      callee: 'auth',
      defaultTimeoutMs: timeout,
      maxMessageBytes,
      transport: config.grpcTransport,
    }),
    // The admin API's lists, admin keys and audit log, served by auth beside AuthService.
    adminAccess: createServiceClient(adminaccessv1.AdminAccessService, {
      address: config.AUTH_ADDRESS,
      callee: 'auth',
      defaultTimeoutMs: timeout,
      maxMessageBytes,
      transport: config.grpcTransport,
    }),
    policy: createServiceClient(policyv1.PolicyService, {
      address: config.POLICY_ADDRESS,
      callee: 'policy',
      defaultTimeoutMs: timeout,
      maxMessageBytes,
      transport: config.grpcTransport,
    }),
    // Two or more quota calls per request: one long-lived stream carries them all (a message each way
    // costs several times less than a unary call's HTTP/2 stream).
    quota: createMultiplexedClient(quotav1.QuotaService, {
      address: config.QUOTA_ADDRESS,
      callee: 'quota',
      defaultTimeoutMs: timeout,
      maxMessageBytes,
      transport: config.grpcTransport,
    }),
    metering: createServiceClient(meteringv1.MeteringService, {
      address: config.METERING_ADDRESS,
      callee: 'metering',
      defaultTimeoutMs: timeout,
      maxMessageBytes,
      transport: config.grpcTransport,
    }),
    // Webhook endpoints and their delivery log, kept by metering (the admin API only). Registering an
    // endpoint resolves its name, so the call may take longer than a control call.
    webhooks: createServiceClient(webhooksv1.WebhookService, {
      address: config.METERING_ADDRESS,
      callee: 'metering',
      defaultTimeoutMs: Math.max(timeout, 10_000),
      maxMessageBytes,
      transport: config.grpcTransport,
    }),
    // Completions and token counts as frames of long-lived streams, a few to each router pod (the name
    // resolved again every ROUTER_RESOLVE_EVERY_MS), each call to the least-loaded stream. No default
    // deadline here: a completion passes its own (COMPLETION_TIMEOUT_MS), and so does a token count.
    router: createMultiplexedClient(routerv1.RouterService, {
      ...routerOptions,
      // A router of an older build without the Calls stream (a rolling upgrade): a call each, as before.
      fallback: createServiceClient(routerv1.RouterService, routerOptions),
      streams: { perAddress: config.ROUTER_STREAMS_PER_ADDRESS, resolveEveryMs: config.ROUTER_RESOLVE_EVERY_MS },
    }),
  };
}

export type Clients = ReturnType<typeof createClients>;
