import type Redis from 'ioredis';
import { Gauge } from '@gw/telemetry';
import type { Logger, Registry } from '@gw/telemetry';
import type { ChainHead } from './audit-chain';
import type { HeadPublisher } from './audit-log';

/** Raises the stored head only: replicas publishing out of order never lower it. */
const raiseHead = `
local seq = redis.call('HGET', KEYS[1], 'seq')
if (not seq) or tonumber(seq) < tonumber(ARGV[1]) then
  redis.call('HSET', KEYS[1], 'seq', ARGV[1], 'hash', ARGV[2])
end
return 1`;

export interface HeadPublisherDeps {
  redis: Redis;
  /** Names the database (its name and oid), so that a recreated one does not inherit an old head. */
  chainName(): Promise<string>;
  logger: Logger;
  registry: Registry;
}

/**
 * Publishes each new head three ways outside PostgreSQL: a log line, a metric, and a Redis hash that
 * keeps the highest head of all replicas. A failed publication is logged and does not undo the entry.
 */
export function auditHeadPublisher(deps: HeadPublisherDeps): HeadPublisher {
  let redisKey: Promise<string> | undefined;
  const keyOfChain = () => {
    redisKey ??= deps.chainName().then((name) => `gw:audit-head:${name}`);
    redisKey.catch(() => (redisKey = undefined));
    return redisKey;
  };
  const sequence = new Gauge({
    name: 'gateway_audit_chain_head_sequence',
    help: 'Sequence number of the last admin audit entry this replica appended (0: none since it started).',
    registers: [deps.registry],
  });
  const info = new Gauge({
    name: 'gateway_audit_chain_head_info',
    help: 'The SHA-256 (hex) of the last admin audit entry this replica appended, as a label (always 1).',
    labelNames: ['hash'],
    registers: [deps.registry],
  });
  let last: ChainHead | undefined;
  return {
    async publish(head) {
      const hash = head.hash.toString('hex');
      deps.logger.info({ audit_seq: head.seq, audit_hash: hash }, 'audit chain head');
      if (!last || head.seq > last.seq) {
        last = head;
        sequence.set(head.seq);
        info.reset();
        info.set({ hash }, 1);
      }
      try {
        await deps.redis.eval(raiseHead, 1, await keyOfChain(), String(head.seq), hash);
      } catch (error) {
        deps.logger.warn({ err: error, audit_seq: head.seq }, 'audit chain head not published to redis');
      }
    },
    async read() {
      const key = await keyOfChain();
      const stored = await deps.redis.hgetall(key).catch(() => ({}) as Record<string, string>);
      const fromRedis =
        stored.seq && stored.hash ? { seq: Number(stored.seq), hash: Buffer.from(stored.hash, 'hex') } : undefined;
      if (!fromRedis) return last;
      return last && last.seq > fromRedis.seq ? last : fromRedis;
    },
  };
}
