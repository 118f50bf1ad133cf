/**
 * Lua scripts, each one atomic decision in Redis. Every key of one account and environment shares the
 * hash tag `{a:<account>:<env>}`, so a script runs unchanged on Redis Cluster. Time comes from the
 * Redis server, never the caller, so replicas with skewed clocks agree.
 */

/** Outcomes of the reserve and acquire scripts. */
export const admission = {
  admitted: 1,
  perMinuteFull: 2,
  concurrencyFull: 3,
  allowanceUsed: 4,
  ceilingReached: 5,
  /** The allowance counter is missing (Redis flushed or replaced): rebuild it, then ask again. */
  allowanceUnknown: 6,
  /** The reserved lease expired (its renewals stopped reaching quota) before the request was admitted. */
  leaseLapsed: 7,
} as const;

/** The server's time, and the position in the per-minute window KEYS[1] (hash: w = window index, n = count). */
const windowPosition = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = math.floor(now / 60000)
local reset = (window + 1) * 60000
local count = 0
if tonumber(redis.call('HGET', KEYS[1], 'w')) == window then
  count = tonumber(redis.call('HGET', KEYS[1], 'n')) or 0
end
`;

/**
 * The allowance (KEYS[3], weighted tokens used in the billing period; skipped when allowance is -1, as
 * for test keys), then the per-minute window, which is charged only when both pass. Needs the locals
 * rpm, allowance, ceiling, overage and refuse(outcome, used); leaves used for the reply.
 */
const checkAllowanceAndChargeWindow = `
local used = 0
if allowance >= 0 then
  local stored = redis.call('GET', KEYS[3])
  if not stored then
    return {6, count, reset, 0}
  end
  used = tonumber(stored)
  if used >= ceiling then
    return refuse(5, used)
  end
  if (not overage) and used >= allowance then
    return refuse(4, used)
  end
end
if count >= rpm then
  return refuse(2, used)
end
count = count + 1
redis.call('HSET', KEYS[1], 'w', window, 'n', count)
redis.call('PEXPIREAT', KEYS[1], reset + 1000)
`;

/**
 * KEYS[1] per-minute window, KEYS[2] in-flight leases (zset: member lease id, score expiry ms).
 * ARGV: concurrency limit, lease id, lease ttl ms.
 * Takes a lease unless the account is at its concurrency; reads the window without charging it.
 * Returns {outcome, window count, window reset ms}.
 */
export const reserveScript = `${windowPosition}
local concurrency = tonumber(ARGV[1])
local ttl = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('ZCARD', KEYS[2]) >= concurrency then
  return {3, count, reset}
end
redis.call('ZADD', KEYS[2], now + ttl, ARGV[2])
redis.call('PEXPIRE', KEYS[2], ttl * 2)
return {1, count, reset}
`;

/**
 * KEYS[1] per-minute window, KEYS[2] in-flight leases, KEYS[3] weighted tokens used in the billing
 * period (string).
 * ARGV: rpm limit, concurrency limit, lease id, lease ttl ms, allowance (-1: not counted, as for test
 * keys), hard ceiling, overage (1 or 0).
 * Concurrency and allowance are checked first; the per-minute window is charged only on admission,
 * so a refused request consumes nothing.
 * Returns {outcome, window count, window reset ms, tokens used}.
 */
export const acquireScript = `${windowPosition}
local rpm = tonumber(ARGV[1])
local concurrency = tonumber(ARGV[2])
local ttl = tonumber(ARGV[4])
local allowance = tonumber(ARGV[5])
local ceiling = tonumber(ARGV[6])
local overage = ARGV[7] == '1'
local function refuse(outcome, used)
  return {outcome, count, reset, used}
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('ZCARD', KEYS[2]) >= concurrency then
  return refuse(3, 0)
end
${checkAllowanceAndChargeWindow}
redis.call('ZADD', KEYS[2], now + ttl, ARGV[3])
redis.call('PEXPIRE', KEYS[2], ttl * 2)
return {1, count, reset, used}
`;

/**
 * Acquire for a lease taken by the reserve script: the concurrency was decided then.
 * KEYS as the acquire script. ARGV: rpm limit, lease id, allowance (-1: not counted), hard ceiling,
 * overage (1 or 0).
 * A refusal frees the lease in the same step, so a refused request never holds a slot after its
 * answer whatever its caller does next (its release is then a no-op). A lease that is no longer held
 * is refused without being brought back: it may have been released or swept away already.
 * Returns {outcome, window count, window reset ms, tokens used}.
 */
export const acquireReservedScript = `${windowPosition}
local rpm = tonumber(ARGV[1])
local allowance = tonumber(ARGV[3])
local ceiling = tonumber(ARGV[4])
local overage = ARGV[5] == '1'
local function refuse(outcome, used)
  redis.call('ZREM', KEYS[2], ARGV[2])
  return {outcome, count, reset, used}
end
local expiry = redis.call('ZSCORE', KEYS[2], ARGV[2])
if not expiry or tonumber(expiry) <= now then
  return refuse(7, 0)
end
${checkAllowanceAndChargeWindow}
return {1, count, reset, used}
`;

/** KEYS[1] per-minute window. Returns {window count, window reset ms} without charging anything. */
export const peekScript = `${windowPosition}
return {count, reset}
`;

/**
 * KEYS[1] in-flight leases. ARGV: lease id, ttl ms. Returns 1 when the lease was still held; a lease
 * past its expiry is not, even before an acquire sweeps it away, so it is never brought back.
 */
export const renewScript = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
-- ZADD CH would report 0 for a renewal within the same millisecond (score unchanged): ask ZSCORE.
local expiry = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not expiry or tonumber(expiry) <= now then
  return 0
end
redis.call('ZADD', KEYS[1], 'XX', now + ttl, ARGV[1])
redis.call('PEXPIRE', KEYS[1], ttl * 2)
return 1
`;

/**
 * KEYS[1] in-flight leases, KEYS[2] tokens used in the period, KEYS[3] the lease's release marker.
 * ARGV: lease id, weighted tokens, marker ttl ms.
 * A caller retries a release whose reply it lost, so the tokens are charged once per lease: by the
 * release that creates the marker. That is the one that removed the lease, or the first for a lease that
 * had already expired (still charged: the request ran). The tokens are added only to a counter that
 * exists: a missing one is rebuilt from Postgres, where this request's usage arrives through metering.
 * Returns 1 when this release charged.
 */
export const releaseScript = `
redis.call('ZREM', KEYS[1], ARGV[1])
local tokens = tonumber(ARGV[2])
if tokens <= 0 or not redis.call('SET', KEYS[3], '1', 'NX', 'PX', ARGV[3]) then
  return 0
end
if redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('INCRBY', KEYS[2], tokens)
end
return 1
`;

/** KEYS[1] tokens used in the period. ARGV: rebuilt value, expiry ms. Sets only if still missing. */
export const rebuildScript = `
return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) and 1 or 0
`;
