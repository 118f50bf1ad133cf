import { err, gatewayError, ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import type { Logger } from '@gw/telemetry';
import type { AdapterCall, AdapterRegistry, UpstreamAdapter } from './adapters';
import type { CompletionRequest, CompletionStream } from './completion';
import { parseJsonObject } from './completion';
import type { RouterMetrics } from './metrics';
import { noRouteError, planRoute } from './pools';
import type { PoolDirectory } from './pools';
import { errorOfFailures, failsOver, failureOfStatus, failureOfTransport } from './upstream-errors';
import type { AttemptFailure } from './upstream-errors';
import type { UpstreamBody, UpstreamHttp, UpstreamResponse } from './upstream-http';

export interface LiveCompletionDeps {
  pools: PoolDirectory;
  adapters: AdapterRegistry;
  http: UpstreamHttp;
  /** Reads a credential env var by name; empty counts as unset. */
  credential: (envName: string) => string | undefined;
  logger: Logger;
  metrics: RouterMetrics;
}

/** Upstream error bodies are read only this far: enough for the message, bounded if the upstream misbehaves. */
const errorBodyLimitBytes = 64 * 1024;

async function readErrorBody(body: UpstreamBody): Promise<string> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    if (!chunk.ok) break;
    chunks.push(chunk.value);
    size += chunk.value.byteLength;
    if (size >= errorBodyLimitBytes) break;
  }
  return Buffer.concat(chunks).toString('utf8');
}

function outcomeLabel(failure: AttemptFailure): string {
  return 'status' in failure && failure.status !== undefined ? `${failure.kind}_${failure.status}` : failure.kind;
}

/**
 * A live completion: the candidate pools in order, each pool's endpoints in order. Until the first
 * byte (Started) a failure of one endpoint moves on to the next; after it, failures are the caller's.
 */
export async function* completeLive(
  request: CompletionRequest,
  signal: AbortSignal,
  deps: LiveCompletionDeps,
): CompletionStream {
  const { logger, metrics } = deps;
  const log = { request_id: request.requestId };
  const body = parseJsonObject(request.body);
  if (body === undefined) {
    yield err(gatewayError('invalid_request_error', 'The request body must be a JSON object.'));
    return;
  }
  const plan = planRoute(request, deps.pools);
  for (const { poolId, reason } of plan.skipped) {
    logger.error({ ...log, pool_id: poolId, reason, residency: request.residency }, 'candidate pool not used');
  }
  if (plan.pools.length === 0) {
    yield err(noRouteError(plan, request.model));
    return;
  }

  /**
   * One attempt: the upstream's 200 of the expected kind, or why not. Logs and measures it; never
   * logs bodies, only ids, statuses and timings.
   */
  const attempt = async (
    poolId: string,
    adapter: UpstreamAdapter,
    call: AdapterCall,
  ): Promise<Result<UpstreamResponse, AttemptFailure>> => {
    const attemptLog = { ...log, pool_id: poolId, endpoint: call.endpointUrl };
    const began = performance.now();
    const sent = await deps.http.send(adapter.buildRequest(call), { stream: call.stream, signal });
    const headersMs = Math.round(performance.now() - began);
    if (!sent.ok) {
      const failure = failureOfTransport(sent.error);
      if (failure.kind !== 'cancelled') {
        metrics.upstreamAttempt(poolId, outcomeLabel(failure));
        logger.warn(
          { ...attemptLog, failure: failure.kind, code: sent.error.code, elapsed_ms: headersMs },
          'upstream attempt failed',
        );
      }
      return err(failure);
    }
    const response = sent.value;
    const upstreamRequestId = response.headers['request-id'];
    if (response.status === 200 && adapter.acceptsContentType(response.headers['content-type'], call.stream)) {
      metrics.upstreamAttempt(poolId, 'accepted', headersMs / 1000);
      logger.info(
        { ...attemptLog, status: 200, headers_ms: headersMs, upstream_request_id: upstreamRequestId },
        'upstream accepted',
      );
      return ok(response);
    }
    let failure: AttemptFailure;
    let upstreamErrorType: string | undefined;
    if (response.status === 200) {
      response.discard();
      failure = { kind: 'failed', status: 200 };
    } else {
      const reported = adapter.parseErrorBody(await readErrorBody(response.body));
      upstreamErrorType = reported.type;
      failure = failureOfStatus(response.status, response.headers, reported.message);
    }
    metrics.upstreamAttempt(poolId, outcomeLabel(failure), headersMs / 1000);
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
  };

  const failures: AttemptFailure[] = [];
  for (const { pool, upstreamModel } of plan.pools) {
    const credential = pool.credentialEnv === undefined ? undefined : deps.credential(pool.credentialEnv);
    if (pool.credentialEnv !== undefined && credential === undefined) {
      metrics.upstreamAttempt(pool.id, 'credential_missing');
      logger.error(
        { ...log, pool_id: pool.id, credential_env: pool.credentialEnv },
        'upstream credential env var is not set: the pool cannot serve',
      );
      failures.push({ kind: 'credential' });
      continue;
    }
    const adapter = deps.adapters[pool.adapter];
    for (const endpointUrl of pool.endpoints) {
      const call: AdapterCall = {
        endpointUrl,
        upstreamModel,
        body,
        stream: request.stream,
        headers: request.headers,
        credential,
        requestId: request.requestId,
      };
      const answered = await attempt(pool.id, adapter, call);
      if (signal.aborted) {
        if (answered.ok) answered.value.discard();
        return;
      }
      if (!answered.ok) {
        failures.push(answered.error);
        if (failsOver(answered.error)) continue;
        yield err(errorOfFailures(failures));
        return;
      }
      yield ok({ kind: 'started', poolId: pool.id, region: pool.region });
      yield* adapter.relay(answered.value.body, request.stream);
      return;
    }
  }
  yield err(errorOfFailures(failures));
}
