import { z } from 'zod';
import { env, readEnv } from '@gw/config';

const nonNegativeInt = (fallback: number) =>
  z.coerce
    .number({ error: 'expected an integer, zero or more' })
    .int('expected an integer, zero or more')
    .nonnegative('expected an integer, zero or more')
    .default(fallback);

const positiveIntList = (fallback: string) =>
  env.list(fallback).pipe(
    z
      .array(
        z
          .string()
          .regex(/^[1-9][0-9]*$/, 'expected positive integers')
          .transform(Number),
      )
      .min(1, 'expected at least one value'),
  );

const schema = z.object({
  /** The services' ports: portsFromBase of deploy/local, beside the tests' (21000) and `make up`'s. */
  BENCH_PORT_BASE: env.port(23_000),
  /** Requests of each of the four latency series (direct and gateway, whole and streamed). */
  BENCH_LATENCY_REQUESTS: env.positiveInt(2_000),
  /** Each comparison (direct and gateway, measured) stops after this long even if short of its requests. */
  BENCH_LATENCY_SECONDS: env.positiveInt(45),
  /** Unmeasured requests before each series. */
  BENCH_WARMUP_REQUESTS: env.positiveInt(200),
  /** The latency series alternate direct and gateway blocks of this size, so that noise hits both alike. */
  BENCH_BLOCK_REQUESTS: env.positiveInt(250),
  /** The mock upstream's latency in the latency cases, and in the throughput case. */
  BENCH_UPSTREAM_LATENCY_MS: nonNegativeInt(0),
  BENCH_THROUGHPUT_UPSTREAM_LATENCY_MS: nonNegativeInt(20),
  /** Closed-loop concurrency of each throughput step. */
  BENCH_STEPS: env.list('8,16,32,64,128,256,512').pipe(
    z
      .array(
        z
          .string()
          .regex(/^[1-9][0-9]*$/, 'expected positive integers')
          .transform(Number),
      )
      .min(1, 'expected at least one step'),
  ),
  BENCH_STEP_SECONDS: env.positiveInt(5),
  /** A step passes with a p99 below this and no error. */
  BENCH_P99_LIMIT_MS: env.positiveInt(1_000),
  /** The whole run stops (and cleans up) after this long. */
  BENCH_TIMEOUT_SECONDS: env.positiveInt(900),
  /**
   * on: after the gateway's own figures, the same mock is measured direct, through the peer gateway
   * (Portkey's, from npm) and through this gateway, side by side. only: the peer comparison alone. off: none.
   */
  BENCH_PEER: z.enum(['on', 'only', 'off'], { error: 'expected on, only or off' }).default('on'),
  /** Requests of each concurrency-1 series of the peer comparison, per side (after a tenth as warm-up). */
  BENCH_PEER_REQUESTS: env.positiveInt(500),
  /** Offered rates (req/s, open loop) measured on every side whatever happens. */
  BENCH_PEER_RATES: positiveIntList('200,400,800'),
  /** Higher offered rates, tried on a side only while it holds every rate below. */
  BENCH_PEER_RAMP: positiveIntList('1200,1600,2000,3000'),
  /** Length of each offered-rate step. */
  BENCH_PEER_RATE_SECONDS: env.positiveInt(5),
  /** The offered rate at which CPU per request is read for the summary. */
  BENCH_PEER_CPU_RATE: env.positiveInt(400),
  BENCH_LOG_LEVEL: env.logLevel(),
  /** 1: mutual TLS between the services, the production path (as the end-to-end stack runs); 0: plaintext, as `make up`. */
  BENCH_GRPC_TLS: z.enum(['0', '1'], { error: 'expected 0 or 1' }).default('1'),
  /** 1: every service runs with --cpu-prof; the top functions and packages are printed per service. */
  BENCH_PROFILE: z.enum(['0', '1'], { error: 'expected 0 or 1' }).default('0'),
  /**
   * off: the services trace nothing (the usual run). compare: the latency series and one throughput step
   * run twice, on a stack tracing nothing and on one tracing every request (always-on sampler, exported
   * over OTLP/HTTP to a receiver in this process), and the two are printed side by side.
   */
  BENCH_TRACING: z.enum(['off', 'compare'], { error: 'expected off or compare' }).default('off'),
  /**
   * The sampler of the comparison's traced stack: always_on (every request's spans recorded and
   * exported), or always_off (context carried across every hop, but no span recorded), which tells the
   * cost of recording and exporting from that of carrying the context.
   */
  BENCH_TRACING_SAMPLER: z
    .enum(['always_on', 'always_off'], { error: 'expected always_on or always_off' })
    .default('always_on'),
  /** The throughput step of the tracing comparison: its closed-loop concurrency. */
  BENCH_TRACING_CONCURRENCY: env.positiveInt(32),
  /** Where to keep the .cpuprofile files (for Chrome DevTools); by default they go with the run's temporary directory. */
  BENCH_PROFILE_DIR: z.string().min(1).optional(),
});

export type Settings = z.infer<typeof schema>;

export const readSettings = (): Settings => readEnv(schema);
