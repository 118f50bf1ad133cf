import type { BodyChecks } from './body-checks/body-checks';
import type { CatalogueFollower } from './catalogue/catalogue-snapshot';
import type { ServiceClients } from './clients';
import type { IngressConfig } from './config';
import { authorizeLocallyOrWithPolicy, policyDeadline } from './domain/authorization';
import type { InFlightRequests } from './domain/in-flight';
import type { LeaseKeeper } from './domain/leases';
import type { PlanBodyLimits } from './domain/plan-body-limits';
import { restorationFor } from './domain/restoration';
import type { AdmitDeps, KeyVerifier, RequestLog, SettleDeps } from './pipeline/types';
import type { PublicEndpoints } from './server';

/** Stage 3's parts: the plans' body limits, the body checks, authorization, billing's state and quota. */
export function admitDeps(
  config: IngressConfig,
  parts: {
    planBodyLimits: PlanBodyLimits;
    bodyChecks: BodyChecks;
    catalogue: CatalogueFollower;
    clients: ServiceClients;
    usage: { billingUnavailable(): boolean };
  },
): AdmitDeps {
  const { planBodyLimits, bodyChecks, catalogue, clients } = parts;
  return {
    bodyLimitFor: (plan) => planBodyLimits.limitFor(plan),
    checkBody: (kind, raw, account) => bodyChecks.check(kind, raw, account),
    authorize: authorizeLocallyOrWithPolicy(
      (key, model) => catalogue.authorizeWithoutBody(key, model),
      clients.policy.authorize,
      policyDeadline(config.CONTROL_CALL_TIMEOUT_MS, config.POLICY_CALL_MS_PER_BODY_MIB),
    ),
    billingUnavailable: parts.usage.billingUnavailable,
    quota: clients.quota,
    restorationFor,
  };
}

export interface PipelineParts {
  config: IngressConfig;
  clients: ServiceClients;
  keys: KeyVerifier;
  admit: AdmitDeps;
  settle: Omit<SettleDeps, 'log'>;
  leases: LeaseKeeper;
  inFlight: InFlightRequests;
  catalogue: CatalogueFollower;
  log: RequestLog;
  countPrivacyFlags: (counts: Record<string, number>) => void;
}

/** Each public endpoint's dependencies, from the parts built once. */
export function publicEndpoints(parts: PipelineParts): PublicEndpoints {
  const { clients, keys, admit, log, config } = parts;
  const refusal = { quota: clients.quota };
  const reserve = { quota: clients.quota, leases: parts.leases };
  return {
    messages: {
      keys,
      inFlight: parts.inFlight,
      reserve,
      admit,
      refusal,
      log,
      relay: {
        router: clients.router,
        completionTimeoutMs: config.COMPLETION_TIMEOUT_MS,
        countPrivacyFlags: parts.countPrivacyFlags,
      },
      settle: { ...parts.settle, log },
    },
    countTokens: {
      keys,
      reserve,
      admit,
      refusal,
      log,
      router: clients.router,
      countTokensTimeoutMs: config.COUNT_TOKENS_TIMEOUT_MS,
    },
    models: { keys, quota: clients.quota, catalogue: parts.catalogue, policy: clients.policy },
    usage: { keys, quota: clients.quota, metering: clients.metering },
    unknown: { keys, refusal },
  };
}
