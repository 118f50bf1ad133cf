import { isErrorType } from '@gw/errors';
import type { GatewayError, Result } from '@gw/errors';
import { commonv1 } from '@gw/proto';
import { KeyEnvironment, keyEnvironments, residencyTiers as tierWords } from '@gw/vocabulary';
import { environmentFromProto, residencyFromProto } from '@gw/vocabulary/proto';
import { Counter, Gauge, Histogram, histogramWithExemplars, observeWithTraceId } from '@gw/telemetry';
import type { Registry } from '@gw/telemetry';
import { usageCappedMetric } from '@gw/usage';
import type { UsageCounts as TokenCounts } from '@gw/usage';
import type { VerifiedKey } from '../domain/key';

/** The public routes as metrics name them: a fixed set, whatever path a caller sends. */
export type Route = 'messages' | 'count_tokens' | 'models' | 'usage' | 'other';
const routes: readonly Route[] = ['messages', 'count_tokens', 'models', 'usage', 'other'];

export function routeOf(path: string): Route {
  if (path === '/v1/messages') return 'messages';
  if (path === '/v1/messages/count_tokens') return 'count_tokens';
  if (path === '/v1/models' || path.startsWith('/v1/models/')) return 'models';
  if (path === '/v1/usage') return 'usage';
  return 'other';
}

const methods = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS']);
const methodLabel = (method: string) => (methods.has(method) ? method : 'other');

export const limitKinds = ['per_minute', 'concurrency', 'quota_exceeded', 'hard_ceiling'] as const;
export const authFailureReasons = [
  'missing',
  'malformed',
  'unknown',
  'revoked',
  'expired',
  'ip_not_allowed',
  'suspended',
] as const;
/** A key's residency tier as the catalogue names it; `unspecified` for a key without a valid one. */
const residencyTiers = [...tierWords, 'unspecified'] as const;
type TierLabel = (typeof residencyTiers)[number];
const tierOf = (residency: commonv1.Residency): TierLabel => residencyFromProto(residency) ?? 'unspecified';
/** The `tier` of a request no key was verified for (refused before, or by, the key check; no route). */
export const noKeyTier = 'none';
const tokenKinds = ['input', 'output', 'cache_read', 'cache_write'] as const;
/** The label of any value outside a fixed set (a model outside the catalogue, a region not configured). */
const other = 'other';

/** How one HTTP request ended, as the edge saw it. */
export interface FinishedRequest {
  route: Route;
  method: string;
  status: number;
  /** The error type of the answer (its envelope, or the SSE `error` event of a stream), `none` without one. */
  errorType: string;
  streamed: boolean;
  seconds: number;
  /** The request as the key check saw it (watchKeys): its key's tier labels the request. */
  caller: object | undefined;
  /** The request's trace id when its trace is sampled: the exemplar of its duration. */
  traceId: string | undefined;
}

/** The request path's key check, as far as the metrics read it: the verified key's tier. */
export interface KeyCheck<Scope extends object, Key extends Pick<VerifiedKey, 'residency'>> {
  verify(presentedKey: string, sourceAddress: string, scope: Scope): Promise<Result<Key>>;
}

/** What the messages pipeline reports once a request is settled. */
export interface SettledRequest {
  model: string;
  region: string;
  environment: commonv1.Environment;
  streamed: boolean;
  /** True when the whole answer reached the caller (no failure, not cancelled). */
  completed: boolean;
  errorType: string | undefined;
  tokens: TokenCounts;
  /** True when a count the upstream reported was implausible and capped (@gw/usage). */
  usageCapped: boolean;
  /** From the request's arrival to its end, to the first content delta written, and from the router call to its first event. */
  seconds: number;
  firstTokenSeconds: number | undefined;
  routerFirstEventSeconds: number | undefined;
  /** The key's residency tier: the `tier` label of the added time, for an objective per tier. */
  residency: commonv1.Residency;
}

export interface EdgeMetrics {
  requestStarted(route: Route): void;
  requestFinished(request: FinishedRequest): void;
  /** Every refusal the edge sends: limit, residency and key refusals are counted by their reason. */
  refused(error: GatewayError): void;
  /** The same key check, remembering the tier of the key each request was verified as (nothing else). */
  watchKeys<Scope extends object, Key extends Pick<VerifiedKey, 'residency'>>(
    keys: KeyCheck<Scope, Key>,
  ): KeyCheck<Scope, Key>;
  /** `traceId`: the request's trace id when its trace is sampled, the exemplar of its latencies. */
  settled(request: SettledRequest, traceId?: string): void;
  usageHanded(): void;
  usageDurable(): void;
  usageAcknowledged(): void;
  /**
   * A reloaded configuration's models and regions join the labels (their series made at once); those it
   * dropped keep theirs, since a series that vanishes would read as a reset.
   */
  addLabelValues(options: EdgeMetricsOptions): void;
}

export interface EdgeMetricsOptions {
  /** The catalogue's model aliases: any other model is labelled `other`. */
  models: readonly string[];
  /** The configured regions: any other is labelled `other`. */
  regions: readonly string[];
}

const durationBuckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];
const firstTokenBuckets = [0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 7.5, 10, 20, 30, 60];
const addedBuckets = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
/** The OpenTelemetry GenAI conventions' advised buckets for token counts. */
const tokenUsageBuckets = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];

/** The public requests: counted, timed and in flight, by route. */
function httpMetrics(registry: Registry) {
  const registers = [registry];
  const requests = new Counter({
    name: 'gateway_http_requests_total',
    help: "Public HTTP requests answered, by route, method, status, error type (none for success) and the key's residency tier (none without a verified key).",
    labelNames: ['route', 'method', 'status', 'error_type', 'tier'],
    registers,
  });
  // The latency histograms carry the trace id of a sampled request as their bucket's exemplar (served to a
  // scraper that asks for OpenMetrics), so that a slow bucket on a dashboard leads to a trace.
  const duration = histogramWithExemplars(
    {
      name: 'gateway_http_request_duration_seconds',
      help: 'Time from a request arriving to its response ending (a stream: its last event), by route and streamed.',
      labelNames: ['route', 'streamed'],
      buckets: durationBuckets,
    },
    registry,
  );
  const inFlight = new Gauge({
    name: 'gateway_http_requests_in_flight',
    help: 'Public HTTP requests arrived and not yet answered, by route.',
    labelNames: ['route'],
    registers,
  });
  return { requests, duration, inFlight };
}

/** Completions: time to first token, the gateway's added latency, tokens, and the usage events' stages. */
function completionMetrics(registry: Registry) {
  const registers = [registry];
  const firstToken = histogramWithExemplars(
    {
      name: 'gateway_time_to_first_token_seconds',
      help: 'Time from a streamed request arriving to its first content_block_delta written, by model and region.',
      labelNames: ['model', 'region'],
      buckets: firstTokenBuckets,
    },
    registry,
  );
  const added = histogramWithExemplars(
    {
      name: 'gateway_added_latency_seconds',
      help: "The gateway's own time in a whole (not streamed) answer that succeeded: its duration minus the time from the router call to the router's first event; by the key's residency tier.",
      labelNames: ['tier'],
      buckets: addedBuckets,
    },
    registry,
  );
  const tokens = new Counter({
    name: 'gateway_tokens_total',
    help: 'Tokens consumed by /v1/messages requests, by model, kind and key environment.',
    labelNames: ['model', 'kind', 'environment'],
    registers,
  });
  const usageCapped = new Counter({ ...usageCappedMetric, registers });
  const usageEvents = new Counter({
    name: 'gateway_usage_events_total',
    help: 'Usage events by stage: handed to the spool, durable on its disk, acknowledged by Kafka.',
    labelNames: ['stage'],
    registers,
  });
  return { firstToken, added, tokens, usageCapped, usageEvents };
}

/** Refusals by kind: the limits, residency, and keys that did not verify. */
function refusalMetrics(registers: Registry[]) {
  const limitRefusals = new Counter({
    name: 'gateway_limit_refusals_total',
    help: 'Requests refused by the account limits, by kind.',
    labelNames: ['kind'],
    registers,
  });
  const residencyRefusals = new Counter({
    name: 'gateway_residency_refusals_total',
    help: "Requests refused because no pool inside the key's residency tier serves them, by tier.",
    labelNames: ['tier'],
    registers,
  });
  const authFailures = new Counter({
    name: 'gateway_auth_failures_total',
    help: 'Requests whose key did not verify, by reason.',
    labelNames: ['reason'],
    registers,
  });
  return { limitRefusals, residencyRefusals, authFailures };
}

/** Counts every refusal the edge sends by its reason: limits by kind, residency by tier, keys by failure. */
function refusalRecorder(registers: Registry[]): (error: GatewayError) => void {
  const { limitRefusals, residencyRefusals, authFailures } = refusalMetrics(registers);
  const limitByKind = new Map(limitKinds.map((kind) => [kind as string, limitRefusals.labels({ kind })]));
  const authByReason = new Map(authFailureReasons.map((reason) => [reason as string, authFailures.labels({ reason })]));
  const residencyByTier = new Map(residencyTiers.map((tier) => [tier as string, residencyRefusals.labels({ tier })]));
  for (const child of [...limitByKind.values(), ...authByReason.values(), ...residencyByTier.values()]) child.inc(0);
  return (error) => {
    if (error.reason === undefined) return;
    if (error.type === 'authentication_error' || error.type === 'permission_error') {
      authByReason.get(error.reason)?.inc();
    } else if (error.type === 'rate_limit_error' || error.type === 'quota_exceeded') {
      limitByKind.get(error.reason)?.inc();
    } else if (error.type === 'residency_unavailable') {
      residencyByTier.get(error.reason)?.inc();
    }
  };
}

/** The OpenTelemetry GenAI conventions' server metrics. */
function genAiMetrics(registers: Registry[]) {
  const genAiDuration = new Histogram({
    name: 'gen_ai_server_request_duration_seconds',
    help: 'OpenTelemetry GenAI gen_ai.server.request.duration of /v1/messages requests that reached the relay.',
    labelNames: ['gen_ai_operation_name', 'gen_ai_request_model', 'error_type'],
    buckets: durationBuckets,
    registers,
  });
  const genAiFirstToken = new Histogram({
    name: 'gen_ai_server_time_to_first_token_seconds',
    help: 'OpenTelemetry GenAI gen_ai.server.time_to_first_token of streamed /v1/messages requests.',
    labelNames: ['gen_ai_operation_name', 'gen_ai_request_model'],
    buckets: firstTokenBuckets,
    registers,
  });
  const genAiTokens = new Histogram({
    name: 'gen_ai_client_token_usage',
    help: 'OpenTelemetry GenAI gen_ai.client.token.usage: tokens per /v1/messages request, by token type.',
    labelNames: ['gen_ai_operation_name', 'gen_ai_request_model', 'gen_ai_token_type'],
    buckets: tokenUsageBuckets,
    registers,
  });

  return { genAiDuration, genAiFirstToken, genAiTokens };
}

type TokenKind = (typeof tokenKinds)[number];

/** The children of one model label, made once: a settled request observes them without building labels. */
interface ModelChildren {
  tokens: Record<KeyEnvironment, Record<TokenKind, Counter.Internal>>;
  genAiInput: Histogram.Internal<string>;
  genAiOutput: Histogram.Internal<string>;
  genAiFirstToken: Histogram.Internal<string>;
  /** By error type (`none` for success), and by region label: made on first use, bounded like the labels. */
  genAiDuration: Map<string, Histogram.Internal<string>>;
  firstToken: Map<string, Histogram.Internal<string>>;
}

/** The children of each model label, made on first use and kept. */
function modelChildrenCache(
  tokens: Counter<string>,
  genAiTokens: Histogram<string>,
  genAiFirstToken: Histogram<string>,
): (model: string) => ModelChildren {
  const byModel = new Map<string, ModelChildren>();
  return (model) => {
    let children = byModel.get(model);
    if (children === undefined) {
      const byKind = (environment: KeyEnvironment) =>
        Object.fromEntries(
          tokenKinds.map((kind) => {
            const child = tokens.labels({ model, kind, environment });
            child.inc(0);
            return [kind, child];
          }),
        ) as Record<TokenKind, Counter.Internal>;
      const operation = { gen_ai_operation_name: 'chat', gen_ai_request_model: model };
      children = {
        tokens: Object.fromEntries(keyEnvironments.map((environment) => [environment, byKind(environment)])) as Record<
          KeyEnvironment,
          Record<TokenKind, Counter.Internal>
        >,
        genAiInput: genAiTokens.labels({ ...operation, gen_ai_token_type: 'input' }),
        genAiOutput: genAiTokens.labels({ ...operation, gen_ai_token_type: 'output' }),
        genAiFirstToken: genAiFirstToken.labels(operation),
        genAiDuration: new Map(),
        firstToken: new Map(),
      };
      byModel.set(model, children);
    }
    return children;
  };
}

/** The child of a histogram for one key, made on first use. */
function childIn<T extends string>(
  children: Map<string, Histogram.Internal<T>>,
  key: string,
  make: () => Histogram.Internal<T>,
) {
  let child = children.get(key);
  if (child === undefined) {
    child = make();
    children.set(key, child);
  }
  return child;
}

/** Every series of a fixed label set exists from the start, so that rates and alerts see zeros, not gaps. */
export function createEdgeMetrics(registry: Registry, options: EdgeMetricsOptions): EdgeMetrics {
  const models = new Set(options.models);
  const regions = new Set(options.regions);
  const modelLabel = (model: string) => (models.has(model) ? model : other);
  const regionLabel = (region: string) => (regions.has(region) ? region : other);

  const registers = [registry];
  const { requests, duration, inFlight } = httpMetrics(registry);
  const { firstToken, added, tokens, usageCapped, usageEvents } = completionMetrics(registry);
  const refused = refusalRecorder(registers);
  const { genAiDuration, genAiFirstToken, genAiTokens } = genAiMetrics(registers);
  const inFlightByRoute = new Map(routes.map((route) => [route, inFlight.labels({ route })]));
  for (const child of inFlightByRoute.values()) child.set(0);
  const durationByRoute = new Map(
    routes.map((route) => [
      route,
      { streamed: duration.labels({ route, streamed: 'true' }), whole: duration.labels({ route, streamed: 'false' }) },
    ]),
  );
  for (const tier of residencyTiers) added.zero({ tier });
  const addedByTier = new Map(residencyTiers.map((tier) => [tier as string, added.labels({ tier })]));
  const [handed, durable, acknowledged] = (['handed', 'durable', 'acknowledged'] as const).map((stage) =>
    usageEvents.labels({ stage }),
  );
  for (const child of [handed!, durable!, acknowledged!]) child.inc(0);

  const childrenOf = modelChildrenCache(tokens, genAiTokens, genAiFirstToken);
  for (const model of [...models, other]) childrenOf(model);
  const tierOfRequests = new WeakMap<object, TierLabel>();

  return {
    addLabelValues(added) {
      for (const region of added.regions) regions.add(region);
      for (const model of added.models) {
        models.add(model);
        childrenOf(model);
      }
    },
    watchKeys: (keys) => ({
      verify: async (presentedKey, sourceAddress, scope) => {
        const verified = await keys.verify(presentedKey, sourceAddress, scope);
        if (verified.ok) tierOfRequests.set(scope, tierOf(verified.value.residency));
        return verified;
      },
    }),
    requestStarted: (route) => inFlightByRoute.get(route)!.inc(),
    requestFinished(request) {
      inFlightByRoute.get(request.route)!.dec();
      requests.inc({
        route: request.route,
        method: methodLabel(request.method),
        status: String(request.status),
        error_type: request.errorType,
        tier: (request.caller && tierOfRequests.get(request.caller)) ?? noKeyTier,
      });
      if (request.traceId === undefined) {
        const byStreamed = durationByRoute.get(request.route)!;
        (request.streamed ? byStreamed.streamed : byStreamed.whole).observe(request.seconds);
      } else {
        const labels = { route: request.route, streamed: String(request.streamed) };
        observeWithTraceId(duration, labels, request.seconds, request.traceId);
      }
    },
    refused,
    settled(request, traceId) {
      const model = modelLabel(request.model);
      const children = childrenOf(model);
      const counts = children.tokens[environmentFromProto(request.environment) ?? KeyEnvironment.test];
      counts.input.inc(request.tokens.inputTokens);
      counts.output.inc(request.tokens.outputTokens);
      counts.cache_read.inc(request.tokens.cacheReadInputTokens);
      counts.cache_write.inc(request.tokens.cacheCreationInputTokens);
      if (request.usageCapped) usageCapped.inc();
      children.genAiInput.observe(request.tokens.inputTokens);
      children.genAiOutput.observe(request.tokens.outputTokens);
      const errorType = request.errorType ?? 'none';
      childIn(children.genAiDuration, errorType, () =>
        genAiDuration.labels({ gen_ai_operation_name: 'chat', gen_ai_request_model: model, error_type: errorType }),
      ).observe(request.seconds);
      if (request.firstTokenSeconds !== undefined) {
        const region = regionLabel(request.region);
        const child = childIn(children.firstToken, region, () => firstToken.labels({ model, region }));
        if (traceId === undefined) child.observe(request.firstTokenSeconds);
        else observeWithTraceId(firstToken, { model, region }, request.firstTokenSeconds, traceId);
        children.genAiFirstToken.observe(request.firstTokenSeconds);
      }
      if (request.completed && !request.streamed && request.routerFirstEventSeconds !== undefined) {
        const tier = tierOf(request.residency);
        const seconds = Math.max(0, request.seconds - request.routerFirstEventSeconds);
        if (traceId === undefined) addedByTier.get(tier)!.observe(seconds);
        else observeWithTraceId(added, { tier }, seconds, traceId);
      }
    },
    usageHanded: () => handed!.inc(),
    usageDurable: () => durable!.inc(),
    usageAcknowledged: () => acknowledged!.inc(),
  };
}

/** The error type of an SSE `error` event's data (the gateway's envelope or the upstream's), `api_error` when unreadable. */
export function streamErrorType(data: string): string {
  try {
    const type = (JSON.parse(data) as { error?: { type?: unknown } }).error?.type;
    return typeof type === 'string' && isErrorType(type) ? type : 'api_error';
  } catch {
    return 'api_error';
  }
}
