import type { Account, AccountUsage, AdminKey, ApiKey, Environment, KeyStatus } from '@gw/admin-api';
import type { authv1, meteringv1 } from '@gw/proto';
import type { KeyEnvironment, PrivacyMode, ResidencyTier } from '@gw/vocabulary';
import { environmentFromProto, privacyModeFromProto, residencyFromProto } from '@gw/vocabulary/proto';
import { roundGbp } from '../domain/usage-report';

/** A proto value without a name: it fails the answer's schema check on the way out, as a server fault. */
const unknown = 'unknown';

/** The JSON shapes of docs/admin-api.md, from the auth service's messages. */

const isoOrNull = (unixMs: bigint | undefined) =>
  unixMs === undefined ? null : new Date(Number(unixMs)).toISOString();
const numberOrNull = (value: bigint | undefined) => (value === undefined ? null : Number(value));

export function accountResource(account: authv1.Account): Account {
  const limits = account.limits;
  return {
    id: account.id,
    name: account.name,
    plan: account.plan,
    status: account.suspendedAtUnixMs === undefined ? 'active' : 'suspended',
    suspended_at: isoOrNull(account.suspendedAtUnixMs),
    created_at: isoOrNull(account.createdAtUnixMs),
    limits: {
      requests_per_minute: numberOrNull(limits?.requestsPerMinute),
      concurrency: numberOrNull(limits?.concurrency),
      monthly_tokens: numberOrNull(limits?.monthlyTokens),
      overage: limits?.overage ?? null,
      hard_ceiling_tokens: numberOrNull(limits?.hardCeilingTokens),
    },
  };
}

const statusOf = (revokedAtUnixMs: bigint | undefined, expiresAtUnixMs: bigint | undefined, now: number): KeyStatus =>
  revokedAtUnixMs !== undefined
    ? 'revoked'
    : expiresAtUnixMs !== undefined && Number(expiresAtUnixMs) <= now
      ? 'expired'
      : 'active';

export function keyResource(key: authv1.ApiKey, now = Date.now()): ApiKey {
  return {
    id: key.id,
    account_id: key.accountId,
    name: key.name,
    environment: environmentFromProto(key.environment) ?? (unknown as KeyEnvironment),
    display_prefix: key.displayPrefix,
    residency: residencyFromProto(key.residency) ?? (unknown as ResidencyTier),
    privacy_mode: privacyModeFromProto(key.privacyMode) ?? (unknown as PrivacyMode),
    allowed_models: key.allowedModels?.values ?? null,
    allowed_ips: key.allowedIps?.values ?? null,
    expires_at: isoOrNull(key.expiresAtUnixMs),
    status: statusOf(key.revokedAtUnixMs, key.expiresAtUnixMs, now),
    created_at: isoOrNull(key.createdAtUnixMs),
    last_used_at: isoOrNull(key.lastUsedAtUnixMs),
    revoked_at: isoOrNull(key.revokedAtUnixMs),
    replaces_key_id: key.replacesKeyId ?? null,
  };
}

export function adminKeyResource(key: authv1.AdminKey, now = Date.now()): AdminKey {
  return {
    id: key.id,
    account_id: key.accountId,
    name: key.name,
    display_prefix: key.displayPrefix,
    status: statusOf(key.revokedAtUnixMs, key.expiresAtUnixMs, now),
    created_at: isoOrNull(key.createdAtUnixMs),
    expires_at: isoOrNull(key.expiresAtUnixMs),
    last_used_at: isoOrNull(key.lastUsedAtUnixMs),
    revoked_at: isoOrNull(key.revokedAtUnixMs),
  };
}

export interface AccountUsageFacts {
  period: { start: Date; end: Date };
  plan: string;
  environment: Environment;
  allowance: number;
  overageAllowed: boolean;
  usage: meteringv1.GetUsageResponse;
  days: meteringv1.DayUsage[];
}

/** An account's usage in the current period: GET /v1/usage's numbers, the overage, and one line per day. */
export function accountUsageResource(facts: AccountUsageFacts): AccountUsage {
  const { allowance, usage } = facts;
  const used = Number(usage.billableTokens);
  return {
    period: { start: facts.period.start.toISOString(), end: facts.period.end.toISOString() },
    plan: facts.plan,
    environment: facts.environment,
    tokens: {
      allowance,
      used,
      remaining: Math.max(0, allowance - used),
      percent_used: Math.round((used / allowance) * 100 * 10_000) / 10_000,
      overage_allowed: facts.overageAllowed,
      overage: Math.max(0, used - allowance),
    },
    by_model: usage.byModel.map((line) => ({
      model: line.model,
      requests: Number(line.requests),
      billable_tokens: Number(line.billableTokens),
      cost_gbp: roundGbp(line.costGbp || '0'),
    })),
    daily: facts.days.map((day) => ({
      day: day.day,
      requests: Number(day.requests),
      billable_tokens: Number(day.billableTokens),
    })),
  };
}
