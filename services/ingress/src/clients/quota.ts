import { ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import type { quotav1 } from '@gw/proto';
import type { VerifiedKey } from '../domain/key';
import type { AccountLimits, Admitted, Lease, Standing } from '../domain/limits';
import type { LeaseCalls, LeaseRef } from '../domain/leases';
import { callScope } from '../domain/request-scope';
import type { RequestScope } from '../domain/request-scope';
import type { Clients } from './connections';
import { ReplyDecoder } from './reply';
import type { MalformedReplies } from './reply';

/** What the request path asks quota. */
export interface QuotaClient extends LeaseCalls {
  /** A concurrency slot, before the body is read (429 when none is free); nothing else is charged. */
  reserve(key: VerifiedKey, scope: RequestScope): Promise<Result<Lease>>;
  /** The per-minute slot and the allowance, charging `leaseId` when reserved, else taking a new lease. */
  acquire(key: VerifiedKey, leaseId: string | undefined, scope: RequestScope): Promise<Result<Admitted>>;
  peek(key: VerifiedKey, scope: RequestScope): Promise<Result<Standing>>;
}

export function decodeLimits(decode: ReplyDecoder, limits: quotav1.EffectiveLimits): Result<AccountLimits> {
  const requestsPerMinute = decode.count(limits.requestsPerMinute, 'limits.requests_per_minute');
  if (!requestsPerMinute.ok) return requestsPerMinute;
  const concurrency = decode.count(limits.concurrency, 'limits.concurrency');
  if (!concurrency.ok) return concurrency;
  const monthlyTokens = decode.count(limits.monthlyTokens, 'limits.monthly_tokens');
  if (!monthlyTokens.ok) return monthlyTokens;
  return ok({
    requestsPerMinute: requestsPerMinute.value,
    concurrency: concurrency.value,
    monthlyTokens: monthlyTokens.value,
    overage: limits.overage,
  });
}

export function decodeLease(
  decode: ReplyDecoder,
  reply: Pick<quotav1.ReserveResponse, 'leaseId' | 'leaseTtlMs' | 'window'>,
): Result<Lease> {
  const leaseId = decode.id(reply.leaseId, 'lease_id');
  if (!leaseId.ok) return leaseId;
  const leaseTtlMs = decode.count(reply.leaseTtlMs, 'lease_ttl_ms');
  if (!leaseTtlMs.ok) return leaseTtlMs;
  const window = decode.window(reply.window);
  if (!window.ok) return window;
  return ok({ leaseId: leaseId.value, leaseTtlMs: leaseTtlMs.value, window: window.value });
}

export function decodeAdmitted(decode: ReplyDecoder, reply: quotav1.AcquireResponse): Result<Admitted> {
  const lease = decodeLease(decode, reply);
  if (!lease.ok) return lease;
  if (reply.limits === undefined) return ok({ ...lease.value, limits: undefined });
  const limits = decodeLimits(decode, reply.limits);
  return limits.ok ? ok({ ...lease.value, limits: limits.value }) : limits;
}

export function decodeStanding(decode: ReplyDecoder, reply: quotav1.PeekResponse): Result<Standing> {
  const window = decode.window(reply.window);
  if (!window.ok) return window;
  const limits = decode.present(reply.limits, 'limits');
  if (!limits.ok) return limits;
  const decoded = decodeLimits(decode, limits.value);
  return decoded.ok ? ok({ window: window.value, limits: decoded.value }) : decoded;
}

type QuotaCalls = Pick<Clients['quota'], 'reserve' | 'acquire' | 'peek' | 'renew' | 'release'>;

export function quotaClient(quota: QuotaCalls, malformed: MalformedReplies): QuotaClient {
  const decode = new ReplyDecoder('quota', malformed);
  return {
    reserve: async (key, scope) => {
      const reserved = await quota.reserve({ key: key.record, requestId: scope.requestId }, callScope(scope));
      return reserved.ok ? decodeLease(decode, reserved.value) : reserved;
    },
    acquire: async (key, leaseId, scope) => {
      const admitted = await quota.acquire({ key: key.record, requestId: scope.requestId, leaseId }, callScope(scope));
      return admitted.ok ? decodeAdmitted(decode, admitted.value) : admitted;
    },
    peek: async (key, scope) => {
      const peeked = await quota.peek({ key: key.record }, callScope(scope));
      return peeked.ok ? decodeStanding(decode, peeked.value) : peeked;
    },
    renew: async (ref: LeaseRef) => {
      const renewed = await quota.renew(ref);
      return renewed.ok ? ok({ held: renewed.value.held }) : renewed;
    },
    release: (request) => quota.release(request),
  };
}
