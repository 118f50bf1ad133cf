import { err, ok } from '@gw/errors';
import type { GatewayError, Result } from '@gw/errors';
import type { Context } from '@opentelemetry/api';
import { requestLogFields, traceLogFields } from '@gw/telemetry';
import type { Logger } from '@gw/telemetry';
import type { AdapterRegistry, UpstreamAdapter } from './adapters';
import { tracedAttempt } from './attempt-span';
import { createEndpointBalancer } from './balancer';
import type { AttemptHealth, EndpointBalancer, EndpointLease } from './balancer';
import type { CompletionRequest } from './completion';
import type { RouterMetrics } from './metrics';
import { noRouteError, planRoute } from './pools';
import type { Pool, PoolDirectory } from './pools';
import { errorOfFailures, failsOver, failureOfStatus, failureOfTransport } from './upstream-errors';
import type { AttemptFailure } from './upstream-errors';
import type {
  TransportFailure,
  UpstreamBody,
  UpstreamHttp,
  UpstreamHttpRequest,
  UpstreamResponse,
} from './upstream-http';

/** What the failover loop needs besides the call. */
export interface FailoverDeps {
  pools: PoolDirectory;
  adapters: AdapterRegistry;
  http: UpstreamHttp;
  /** Reads a credential env var by name; empty counts as unset. */
  credential: (envName: string) => string | undefined;
  logger: Logger;
  metrics: RouterMetrics;
  /**
   * Endpoint choice and health, shared by every call of the process. Absent (unit tests that do not
   * care): each call gets a fresh balancer with the default settings, so endpoints are tried in the
   * YAML order and nothing is remembered between calls.
   */
  balancer?: EndpointBalancer;
}

/** The parts of a call that decide where it may go. */
export type RoutedRequest = Pick<
  CompletionRequest,
  'requestId' | 'traceContext' | 'residency' | 'model' | 'candidates'
>;

/** One endpoint of one pool, with what the pool sends there. */
export interface EndpointTarget {
  /** The endpoint's base URL, without a trailing slash. */
  endpointUrl: string;
  /** The model id the pool's upstream knows the alias by. */
  upstreamModel: string;
  /** The pool's credential; undefined when the pool names none. */
  credential: string | undefined;
}

/** One kind of upstream call as one pool's adapter makes it. */
export interface PoolCall {
  /** Refuses, before anything is sent, a request this pool's protocol cannot carry (e.g. images). */
  check?(): Result<void>;
  request(target: EndpointTarget): UpstreamHttpRequest;
  /** Whether a 200 with this content type is the answer the call asked for. */
  accepts(contentType: string | undefined): boolean;
}

/** A kind of upstream call (a completion, a token count), for the failover loop. */
export interface UpstreamOperation<C extends PoolCall> {
  /** For the attempt logs: `messages` or `count_tokens`. */
  name: string;
  /** The upstream sends its headers only once it has generated the whole answer (the long headers timeout). */
  generating: boolean;
  /** How this adapter makes the call; undefined when its protocol cannot. */
  callFor(adapter: UpstreamAdapter): C | undefined;
}

export type FailoverOutcome<C> =
  /** An endpoint answered 200 with the expected content type; its body is the caller's to read. */
  | { kind: 'answered'; pool: Pool; call: C; response: UpstreamResponse }
  /** The first candidate able to serve has an adapter that cannot make this call; nothing was sent to it. */
  | { kind: 'unsupported'; pool: Pool }
  | { kind: 'failed'; error: GatewayError }
  /** The caller went away; nothing more to say. */
  | { kind: 'cancelled' };

/** Bodies read into memory (error bodies, token counts) are read only this far: bounded if the upstream misbehaves. */
export const smallBodyLimitBytes = 64 * 1024;

/** A small body as text, up to `limitBytes`; with the transport failure that ended it early, if any. */
export async function readSmallBody(
  body: UpstreamBody,
  limitBytes = smallBodyLimitBytes,
): Promise<{ text: string; failure?: TransportFailure }> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    if (!chunk.ok) return { text: Buffer.concat(chunks).toString('utf8'), failure: chunk.error };
    chunks.push(chunk.value);
    size += chunk.value.byteLength;
    if (size >= limitBytes) break;
  }
  return { text: Buffer.concat(chunks).toString('utf8') };
}

function outcomeLabel(failure: AttemptFailure): string {
  return 'status' in failure && failure.status !== undefined ? `${failure.kind}_${failure.status}` : failure.kind;
}

/**
 * Whether the next endpoint may be tried: `failsOver` (a failure of this endpoint, not of the
 * request), and also no response headers in time: nothing has reached the caller yet, so a slow
 * first byte moves on to the next endpoint or pool.
 */
function movesOn(failure: AttemptFailure): boolean {
  return failure.kind === 'timeout' || failsOver(failure);
}

/**
 * The caller's error once every endpoint failed in a way that moves on. Timeouts count among the
 * "other" failures, so that saturation elsewhere still wins; only when every attempt timed out
 * does the caller read that the model service did not answer in time.
 */
function errorOfExhausted(failures: readonly AttemptFailure[]): GatewayError {
  const timeouts = failures.filter((failure) => failure.kind === 'timeout');
  const others = failures.filter((failure) => failure.kind !== 'timeout');
  return errorOfFailures([...timeouts, ...others]);
}

/**
 * What an attempt says about its endpoint's health: connection failures, no headers in time, 429
 * and 5xx count against it; any other answer (a 200, a 4xx) shows it alive.
 */
function healthOfTransport(failure: TransportFailure): AttemptHealth {
  return failure.kind === 'cancelled' ? 'abandoned' : 'failure';
}

function healthOfStatus(status: number): AttemptHealth {
  return status === 429 || status >= 500 ? 'failure' : 'success';
}

/**
 * The request with the pool's provider credentials, when it has a signer; the failure's name when they
 * cannot be had (the error's own text may quote a provider's answer, so only its class is kept).
 */
async function signRequest(pool: Pool, request: UpstreamHttpRequest): Promise<Result<UpstreamHttpRequest, string>> {
  if (pool.signer === undefined) return ok(request);
  try {
    return ok(await pool.signer.sign(request));
  } catch (error) {
    return err(error instanceof Error ? error.name : 'unknown');
  }
}

/** The response with the lease released once its body is read to the end, abandoned or discarded. */
function holdingLease(response: UpstreamResponse, lease: EndpointLease): UpstreamResponse {
  async function* body(): UpstreamBody {
    try {
      yield* response.body;
    } finally {
      lease.release();
    }
  }
  return {
    ...response,
    body: body(),
    discard() {
      response.discard();
      lease.release();
    },
  };
}

/** What every attempt of one call shares: the dependencies, the operation, the call's signal and log fields. */
interface AttemptScope<C extends PoolCall> {
  deps: FailoverDeps;
  operation: UpstreamOperation<C>;
  signal: AbortSignal;
  log: Record<string, unknown>;
}

/** One attempt on one endpoint: the upstream's 200 of the expected kind, or why not; logged and measured. */
async function attemptOnce<C extends PoolCall>(
  scope: AttemptScope<C>,
  pool: Pool,
  adapter: UpstreamAdapter,
  call: C,
  target: EndpointTarget,
  lease: EndpointLease,
  attemptContext: Context | undefined,
): Promise<Result<UpstreamResponse, AttemptFailure>> {
  const { logger, metrics } = scope.deps;
  // The attempt's own span, when traced: its lines are found from it.
  const attemptLog = {
    ...scope.log,
    ...traceLogFields(attemptContext),
    pool_id: pool.id,
    endpoint: target.endpointUrl,
  };
  const signed = await signRequest(pool, call.request(target));
  if (!signed.ok) {
    lease.release();
    metrics.upstreamAttempt(pool.id, 'credential_unavailable');
    logger.error(
      { ...attemptLog, reason: signed.error },
      'upstream credentials could not be obtained: the pool cannot serve',
    );
    return err({ kind: 'credential' });
  }
  const began = performance.now();
  const sent = await scope.deps.http.send(signed.value, {
    generating: scope.operation.generating,
    signal: scope.signal,
  });
  const headersMs = Math.round(performance.now() - began);
  if (!sent.ok) {
    lease.report(healthOfTransport(sent.error));
    lease.release();
    const failure = failureOfTransport(sent.error);
    if (failure.kind !== 'cancelled') {
      metrics.upstreamAttempt(pool.id, outcomeLabel(failure));
      logger.warn(
        { ...attemptLog, failure: failure.kind, code: sent.error.code, elapsed_ms: headersMs },
        'upstream attempt failed',
      );
    }
    return err(failure);
  }
  const response = sent.value;
  lease.report(healthOfStatus(response.status));
  const upstreamRequestId = response.headers['request-id'];
  if (response.status === 200 && call.accepts(response.headers['content-type'])) {
    metrics.upstreamAttempt(pool.id, 'accepted', headersMs / 1000);
    // The request's one info line is "completion ended"; the accepted attempt is detail.
    logger.debug(
      { ...attemptLog, status: 200, headers_ms: headersMs, upstream_request_id: upstreamRequestId },
      'upstream accepted',
    );
    return ok(holdingLease(response, lease));
  }
  let failure: AttemptFailure;
  let upstreamErrorType: string | undefined;
  if (response.status === 200) {
    response.discard();
    failure = { kind: 'failed', status: 200 };
  } else {
    const reported = adapter.parseErrorBody((await readSmallBody(response.body)).text);
    upstreamErrorType = reported.type;
    failure = failureOfStatus(response.status, response.headers, reported.message);
  }
  lease.release();
  metrics.upstreamAttempt(pool.id, outcomeLabel(failure), headersMs / 1000);
  const details = {
    ...attemptLog,
    status: response.status,
    failure: failure.kind,
    upstream_error_type: upstreamErrorType,
    headers_ms: headersMs,
    upstream_request_id: upstreamRequestId,
  };
  if (failure.kind === 'credential') logger.error(details, 'upstream refused the credential: the pool cannot serve');
  // The caller's own mistake, not the upstream's: no operator needs to look.
  else if (failure.kind === 'rejected') logger.info(details, 'upstream rejected the request');
  else logger.warn(details, 'upstream attempt failed');
  return err(failure);
}

/** A pool that can be tried: inside the tier, credential set, adapter able to make the call. */
interface Ready<C extends PoolCall> {
  pool: Pool;
  adapter: UpstreamAdapter;
  call: C;
  upstreamModel: string;
  credential: string | undefined;
  /** Endpoints the balancer did not offer (ejected), in YAML order. */
  skipped: string[];
}

/** The pool's credential from its env var; a pool whose variable is unset cannot serve (logged, counted). */
function credentialOf(
  pool: Pool,
  deps: FailoverDeps,
  log: Record<string, unknown>,
): Result<string | undefined, 'missing'> {
  if (pool.credentialEnv === undefined) return ok(undefined);
  const credential = deps.credential(pool.credentialEnv);
  if (credential !== undefined) return ok(credential);
  deps.metrics.upstreamAttempt(pool.id, 'credential_missing');
  deps.logger.error(
    { ...log, pool_id: pool.id, credential_env: pool.credentialEnv },
    'upstream credential env var is not set: the pool cannot serve',
  );
  return err('missing');
}

/**
 * Sends a call to the request's candidate pools, strictly in policy's order, until one answers.
 * Only candidates the router's own config puts inside the key's residency are used (`planRoute`); a
 * pool whose credential env var is unset is skipped without a request. Within a pool, the balancer
 * chooses each next endpoint: not ejected, fewest outstanding requests, ties round-robin. A failure
 * of one endpoint moves on to the next (`movesOn`), then to the next pool; one of the request
 * itself stops at once. When every endpoint of every usable candidate is ejected, they are tried
 * anyway, in order, rather than refusing without a try. Every attempt is logged and measured, with
 * ids, statuses and timings, never bodies.
 */
export async function sendWithFailover<C extends PoolCall>(
  request: RoutedRequest,
  signal: AbortSignal,
  deps: FailoverDeps,
  operation: UpstreamOperation<C>,
): Promise<FailoverOutcome<C>> {
  const { logger, metrics } = deps;
  const log = { ...requestLogFields(request), upstream_call: operation.name };
  const plan = planRoute(request, deps.pools);
  for (const { poolId, reason } of plan.skipped) {
    logger.error({ ...log, pool_id: poolId, reason, residency: request.residency }, 'candidate pool not used');
  }
  if (plan.pools.length === 0) return { kind: 'failed', error: noRouteError(plan, request.model) };
  const balancer = deps.balancer ?? createEndpointBalancer(deps.pools);
  const scope: AttemptScope<C> = { deps, operation, signal, log };

  /** One attempt: the upstream's 200 of the expected kind, or why not. The lease is released unless answered. */
  const attempt = (
    pool: Pool,
    adapter: UpstreamAdapter,
    call: C,
    target: EndpointTarget,
    lease: EndpointLease,
  ): Promise<Result<UpstreamResponse, AttemptFailure>> =>
    tracedAttempt(
      { operation: operation.name, model: request.model, pool, endpointUrl: target.endpointUrl },
      request.traceContext,
      (attemptContext) => attemptOnce(scope, pool, adapter, call, target, lease, attemptContext),
      (result) => (result.ok ? 'accepted' : outcomeLabel(result.error)),
    );

  const failures: AttemptFailure[] = [];

  /** Tries one endpoint; `stop` when the loop is over (answered, cancelled, or a failure that does not fail over). */
  const tryEndpoint = async (
    ready: Ready<C>,
    lease: EndpointLease,
  ): Promise<{ stop: FailoverOutcome<C> } | { failure: AttemptFailure }> => {
    const target = { endpointUrl: lease.endpointUrl, upstreamModel: ready.upstreamModel, credential: ready.credential };
    const answered = await attempt(ready.pool, ready.adapter, ready.call, target, lease);
    if (signal.aborted) {
      if (answered.ok) answered.value.discard();
      return { stop: { kind: 'cancelled' } };
    }
    if (answered.ok)
      return { stop: { kind: 'answered', pool: ready.pool, call: ready.call, response: answered.value } };
    failures.push(answered.error);
    if (!movesOn(answered.error)) return { stop: { kind: 'failed', error: errorOfFailures(failures) } };
    metrics.movedOn(ready.pool.id, outcomeLabel(answered.error));
    return { failure: answered.error };
  };

  const tried: Ready<C>[] = [];
  let attempts = 0;
  for (const { pool, upstreamModel } of plan.pools) {
    const credential = credentialOf(pool, deps, log);
    if (!credential.ok) {
      failures.push({ kind: 'credential' });
      continue;
    }
    const adapter = pool.adapterWithOptions ?? deps.adapters[pool.adapter];
    const call = operation.callFor(adapter);
    if (call === undefined) return { kind: 'unsupported', pool };
    const checked = call.check?.();
    if (checked && !checked.ok) return { kind: 'failed', error: checked.error };
    const ready: Ready<C> = { pool, adapter, call, upstreamModel, credential: credential.value, skipped: [] };
    tried.push(ready);
    const offered = new Set<string>();
    for (;;) {
      const lease = balancer.acquire(pool, offered);
      if (lease === undefined) break;
      offered.add(lease.endpointUrl);
      attempts += 1;
      const result = await tryEndpoint(ready, lease);
      if ('stop' in result) return result.stop;
    }
    ready.skipped = pool.endpoints.filter((endpointUrl) => !offered.has(endpointUrl));
    for (const endpointUrl of ready.skipped) {
      metrics.upstreamAttempt(pool.id, 'ejected');
      logger.debug({ ...log, pool_id: pool.id, endpoint: endpointUrl }, 'upstream endpoint skipped: ejected');
    }
  }

  // Every endpoint of every usable candidate is ejected: try them anyway, in order, inside the tier.
  if (attempts === 0) {
    for (const ready of tried) {
      for (const endpointUrl of ready.skipped) {
        const lease = balancer.acquireAnyway(ready.pool, endpointUrl);
        if (lease === undefined) continue;
        logger.warn(
          { ...log, pool_id: ready.pool.id, endpoint: endpointUrl },
          'every candidate endpoint is ejected: trying an ejected one',
        );
        const result = await tryEndpoint(ready, lease);
        if ('stop' in result) return result.stop;
      }
    }
  }
  return { kind: 'failed', error: errorOfExhausted(failures) };
}
