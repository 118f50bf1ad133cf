/**
 * Lua scripts run atomically in Redis. Every key of one account shares the hash tag `{a:<account>:<env>}`
 * so a script runs unchanged on Redis Cluster. Time comes from the Redis server, never the caller.
 */

/**
 * KEYS[1] per-minute window (hash: w = window index, n = count), KEYS[2] in-flight leases (zset: member
 * lease id, score expiry ms). ARGV: rpm limit, concurrency limit, lease id, lease ttl ms.
 * Returns {status, count, window reset ms}: status 1 admitted, 2 per-minute full, 3 concurrency full.
 * A refused request changes no counter.
 */
export const acquireScript = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = math.floor(now / 60000)
local reset = (window + 1) * 60000
local rpm = tonumber(ARGV[1])
local concurrency = tonumber(ARGV[2])
local ttl = tonumber(ARGV[4])
local count = 0
if tonumber(redis.call('HGET', KEYS[1], 'w')) == window then
  count = tonumber(redis.call('HGET', KEYS[1], 'n')) or 0
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('ZCARD', KEYS[2]) >= concurrency then
  return {3, count, reset}
end
if count >= rpm then
  return {2, count, reset}
end
count = count + 1
redis.call('HSET', KEYS[1], 'w', window, 'n', count)
redis.call('PEXPIREAT', KEYS[1], reset + 1000)
redis.call('ZADD', KEYS[2], now + ttl, ARGV[3])
redis.call('PEXPIRE', KEYS[2], ttl * 2)
return {1, count, reset}
`;

/** KEYS[1] in-flight leases. ARGV: lease id, ttl ms. Returns 1 when the lease was still held. */
export const renewScript = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
local held = redis.call('ZADD', KEYS[1], 'XX', 'CH', now + ttl, ARGV[1])
redis.call('PEXPIRE', KEYS[1], ttl * 2)
return held
`;
