import { z } from 'zod';
import { defaultBodyLimitBytes, env, readEnv, readGrpcTransport, readKafkaSecurity } from '@gw/config';
import type { GrpcTransport, KafkaSecurity } from '@gw/config';
import { readTracingConfig } from '@gw/telemetry';
import type { TracingConfig } from '@gw/telemetry';

const schema = z.object({
  LOG_LEVEL: env.logLevel(),
  HTTP_HOST: env.host('127.0.0.1'),
  HTTP_PORT: env.port(8080),
  ADMIN_PORT: env.port(8081),
  /** The admin API's own address: loopback unless set, whatever HTTP_HOST exposes. */
  ADMIN_HOST: env.host('127.0.0.1'),
  /** The names the admin port answers for (the Host header without its port); others get 403. */
  ADMIN_ALLOWED_HOSTS: env.list('localhost,127.0.0.1,[::1]'),
  METRICS_HOST: env.host('127.0.0.1'),
  METRICS_PORT: env.port(9464),
  AUTH_ADDRESS: env.address('127.0.0.1:50051'),
  POLICY_ADDRESS: env.address('127.0.0.1:50052'),
  QUOTA_ADDRESS: env.address('127.0.0.1:50053'),
  ROUTER_ADDRESS: env.address('127.0.0.1:50054'),
  /** Long-lived completion streams kept to each router address (pod); new calls go to the least loaded. */
  ROUTER_STREAMS_PER_ADDRESS: env.positiveInt(2),
  /** How often a dns:/// ROUTER_ADDRESS is resolved again, so that router pods that came or left are seen. */
  ROUTER_RESOLVE_EVERY_MS: env.positiveInt(5_000),
  METERING_ADDRESS: env.address('127.0.0.1:50055'),
  KAFKA_BROKERS: env.list('127.0.0.1:9092'),
  USAGE_TOPIC: z.string().min(1).default('gateway.usage.v1'),
  BODY_LIMIT_BYTES: env.positiveInt(defaultBodyLimitBytes),
  // A refused upload is still read and dropped for a while: closing on unread bytes resets the
  // connection, and a client still writing would lose the refusal.
  /** Bytes of a refused upload read after the refusal before its connection is closed. */
  REFUSED_UPLOAD_DISCARD_MAX_BYTES: env.positiveInt(64 * 1024 * 1024),
  /** Time a refused upload is still read after the refusal before its connection is closed. */
  REFUSED_UPLOAD_DISCARD_MAX_MS: env.positiveInt(5_000),
  // Receiving a request is bounded in time and memory; the response is not (streams may last 10 minutes).
  /** A request's line and headers must arrive within this long of its first byte. */
  HEADERS_TIMEOUT_MS: env.positiveInt(10_000),
  /** Longest pause while a request body arrives; a longer one is refused. */
  BODY_IDLE_TIMEOUT_MS: env.positiveInt(10_000),
  /** A request body must have arrived whole within this long of the start of reading it. */
  BODY_TIMEOUT_MS: env.positiveInt(120_000),
  /** Bytes of request bodies all requests of this ingress may hold at once; past it, 503. */
  BODY_BUFFER_MAX_BYTES: env.positiveInt(96 * 1024 * 1024),
  /**
   * Bodies larger than this are parsed and validated on worker threads (BODY_CHECK_THREADS of them, shared
   * fairly between accounts), so that one caller's megabytes of JSON never stall the event loop.
   */
  BODY_CHECK_INLINE_MAX_BYTES: env.positiveInt(128 * 1024),
  BODY_CHECK_THREADS: env.positiveInt(1),
  /** Large bodies waiting for a check thread, per account and in all; past either, 503 with a retry hint. */
  BODY_CHECK_QUEUED_PER_ACCOUNT: env.positiveInt(8),
  BODY_CHECK_QUEUED_TOTAL: env.positiveInt(64),
  /** Revocations arrive here and end the key's requests in flight. */
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'expected a redis:// URL')
    .default('redis://127.0.0.1:6379'),
  /** Load balancers whose X-Forwarded-For is believed; empty: the TCP peer is the caller. */
  TRUSTED_PROXIES: env.list(''),
  /** The operator's bearer token for the admin API. */
  ADMIN_TOKEN: env.secret(),
  /** First segment of the rate-limit header names; SDK users' tooling reads `anthropic`. */
  RATE_LIMIT_HEADER_PREFIX: z
    .string()
    .regex(/^[a-z][a-z0-9-]*$/, 'expected a lower-case header name segment')
    .default('anthropic'),
  /** The gateway YAML; ingress reads the plans' body size limits from it. */
  GATEWAY_CONFIG: z.string({ error: 'expected the path of the gateway YAML file' }).min(1),
  /**
   * How long a verified key is believed without asking auth (revocations and account changes still
   * end it at once); also how coarse the key's last-used time can be.
   */
  KEY_CACHE_TTL_MS: env.positiveInt(30_000),
  /** How often the in-memory counts of refusals per key are sent to metering. */
  REFUSAL_FLUSH_MS: env.positiveInt(10_000),
  /** Most verified keys remembered. */
  KEY_CACHE_MAX_ENTRIES: env.positiveInt(100_000),
  /**
   * Longest a completion may run through the router (the SDKs give up after 10 minutes); past it the
   * call ends with an error event and what was delivered is billed.
   */
  COMPLETION_TIMEOUT_MS: env.positiveInt(15 * 60_000),
  /** Deadline of a token count through the router. */
  COUNT_TOKENS_TIMEOUT_MS: env.positiveInt(60_000),
  /** Deadline of each call to auth, policy and quota. */
  CONTROL_CALL_TIMEOUT_MS: env.positiveInt(2_000),
  /** Added to a policy call's deadline for each MiB of body it carries (privacy modes read all of it). */
  POLICY_CALL_MS_PER_BODY_MIB: env.positiveInt(250),
  /**
   * On SIGTERM, how long requests in flight (streams included) may still run: the listener closes at once
   * and /readyz answers 503, keep-alive connections close when idle, and what still runs after this is cut
   * (its usage is recorded as cancelled). Long enough for typical completions.
   */
  SHUTDOWN_GRACE_MS: env.positiveInt(300_000),
  /**
   * Then, how long the stop may spend delivering the whole usage spool to Kafka while Kafka takes it; it
   * stops at the first failed delivery (what is left waits on the spool's volume). The whole stop takes at
   * most SHUTDOWN_GRACE_MS + USAGE_SPOOL_DRAIN_MS and a few seconds more.
   */
  USAGE_SPOOL_DRAIN_MS: env.nonNegativeInt(60_000),
  /** A streamed response with no upstream event for this long gets an SSE ping. */
  SSE_PING_INTERVAL_MS: env.positiveInt(15_000),
  // Usage spool (lossless metering): events wait here, on disk, while Kafka is unavailable.
  /** The spool directory; default: one per HTTP_PORT under the temp directory (see usageSpoolDir). */
  USAGE_SPOOL_DIR: z.string().min(1, 'expected a directory').optional(),
  /** Bytes of undelivered events the spool may hold; near it, live requests are refused with 503. */
  USAGE_SPOOL_MAX_BYTES: env.positiveInt(256 * 1024 * 1024),
});

// Below the body limit, a body the limit admits could never be taken: a 503 that retrying never ends.
const checkedSchema = schema.refine((config) => config.BODY_BUFFER_MAX_BYTES >= config.BODY_LIMIT_BYTES, {
  path: ['BODY_BUFFER_MAX_BYTES'],
  error: 'expected at least BODY_LIMIT_BYTES',
});

export type IngressConfig = z.infer<typeof schema> & {
  /** Of the gRPC clients: mutual TLS from GRPC_TLS_*, or plaintext only with GRPC_INSECURE=true. */
  grpcTransport: GrpcTransport;
  /** TLS and SASL towards Kafka from KAFKA_TLS* and KAFKA_SASL_*; plaintext when none is set. */
  kafkaSecurity: KafkaSecurity;
  /** Tracing from the standard OTEL_* variables; off unless an OTLP endpoint is set. */
  tracing: TracingConfig;
};

export function readIngressConfig(): IngressConfig {
  return {
    ...readEnv(checkedSchema),
    grpcTransport: readGrpcTransport(),
    kafkaSecurity: readKafkaSecurity(),
    tracing: readTracingConfig(process.env, 'ingress'),
  };
}
