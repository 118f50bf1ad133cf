import type { GatewayError, RateLimitWindow, Result } from '@gw/errors';
import type { eventsv1, MessageInitShape } from '@gw/proto';
import type { BodyChecks } from '../body-checks/body-checks';
import type { QuotaClient } from '../clients/quota';
import type { RouterClient } from '../clients/router';
import type { Authorize } from '../domain/authorization';
import type { InFlightRequests } from '../domain/in-flight';
import type { LeaseKeeper } from '../domain/leases';
import type { KeyVerifier } from '../domain/verified-keys';
import type { RequestScope } from '../domain/request-scope';
import type { Restoration } from '../domain/restoration';
import type { SettledRequest } from '../telemetry/edge-metrics';

export type { RequestScope } from '../domain/request-scope';
export type { KeyVerifier } from '../domain/verified-keys';
export { callScope } from '../domain/request-scope';

/** One request as the HTTP edge hands it over. */
export interface CallerRequest extends RequestScope {
  presentedKey: string;
  sourceAddress: string;
  /** The request's media type, checked once the key is known. */
  contentType: string | undefined;
  /** Reads the body, refusing with request_too_large past the limit (once: later calls share the read). */
  readBody(limitBytes: number): Promise<Result<Buffer>>;
  /**
   * Starts reading the body and tells whether it had all arrived by the end of this turn of the event
   * loop: an upload that was complete when its key was verified never held a slot unfinished.
   */
  bodyArrived(limitBytes: number): Promise<boolean>;
  /**
   * For a refusal before the body was read: the rest of the upload is read and dropped (within
   * bounds) before the connection closes, so that a client still writing reads the refusal.
   */
  discardBody(): void;
  /** Upstream protocol headers to pass on (anthropic-version, anthropic-beta). */
  protocolHeaders: Record<string, string>;
  /** The query string without its `?` (`beta=true`), passed on like the protocol headers; empty when none. */
  query: string;
  /** Aborted when the client goes away. */
  signal: AbortSignal;
}

/** Where the response goes; the HTTP edge implements it. */
export interface ResponseSink {
  /** Rate-limit position, sent with whatever response follows. */
  setRateLimit(window: RateLimitWindow): void;
  /** Fails the request before anything was sent. */
  fail(error: GatewayError): void;
  sendJson(body: Uint8Array, region: string): void;
  startStream(region: string): void;
  /** Writes one whole SSE event. */
  writeEvent(event: string, data: string): void;
  endStream(): void;
  /** Privacy mode `flag`: the counts by entity type, sent as `x-privacy-flags`. */
  setPrivacyFlags(header: string): void;
  /** The betas the upstream's adapter did not pass on, named in `x-gateway-dropped-betas`. */
  setDroppedBetas(names: readonly string[]): void;
}

export type UsageEventInit = MessageInitShape<typeof eventsv1.UsageEventSchema>;

/** The request log: one structured line per request, and the gateway's own failures. */
export interface RequestLog {
  /** One structured line per request (with its id and trace ids): ids and numbers, never content. */
  request(scope: RequestScope, fields: Record<string, unknown>): void;
  /** A failure of the gateway's own code: logged with its stack, never shown to the caller. */
  failure(error: unknown, scope: RequestScope, fields: Record<string, unknown>): void;
}

/** What answering a verified key's refusal needs: a look at its window that charges nothing. */
export interface RefusalDeps {
  quota: Pick<QuotaClient, 'peek'>;
}

/** Stage 2 and the concurrency lease: reserved before the body, kept alive while the request runs. */
export interface ReserveDeps {
  quota: Pick<QuotaClient, 'reserve'>;
  leases: Pick<LeaseKeeper, 'hold'>;
}

/** Stage 3: body, policy, billing availability and the limits. */
export interface AdmitDeps {
  /** The body size limit of a plan: the gateway's, or the plan's where that is lower. */
  bodyLimitFor(plan: string): number;
  /** Parses and validates a body read whole (400 naming the field); large ones off the event loop. */
  checkBody: BodyChecks['check'];
  authorize: Authorize;
  /** True while usage events cannot be kept (the durable buffer is full): live completions are refused. */
  billingUnavailable(): boolean;
  quota: Pick<QuotaClient, 'acquire'>;
  /** Mode `tokenise`: puts this request's originals back into its completion (kept for this request only). */
  restorationFor(placeholders: { placeholder: string; original: string }[], nonce: string): Restoration;
}

/** Stage 4: the router's events to the client. */
export interface RelayDeps {
  router: Pick<RouterClient, 'complete'>;
  /** Deadline of a completion's router stream: no call lives for ever. */
  completionTimeoutMs: number;
  /** Mode `flag`: counts entities by type in the metrics. */
  countPrivacyFlags(counts: Record<string, number>): void;
}

/** A request's usage records in the spool: the provisional one written as it goes upstream, then the final one. */
export interface RequestUsage {
  /** True once the provisional record is durable; false when it was not written (its loss logged). */
  readonly provisionalDurable: Promise<boolean>;
  /** Hands the final event to the spool's group commit; resolves once it is durable (or its loss logged), never rejects. */
  finish(event: UsageEventInit): Promise<void>;
}

/** Stage 5: the lease, the usage event, the end of the answer, the metrics and the log line. */
export interface SettleDeps {
  /**
   * Writes the request's provisional usage record (the event billing it at the most it may cost), whose
   * sync overlaps the upstream's time; the final record replaces it (RequestUsage.finish).
   */
  beginUsage(provisional: UsageEventInit, request: RequestScope): RequestUsage;
  /** The metrics of a request that reached the relay: tokens, time to first token, the gateway's added time. */
  reportSettled(settled: SettledRequest, request: RequestScope): void;
  log: RequestLog;
}

/** POST /v1/messages: each stage's own dependencies. */
export interface MessagesDeps {
  keys: KeyVerifier;
  /** The requests in flight by key, so that a revocation ends them. */
  inFlight: Pick<InFlightRequests, 'register'>;
  reserve: ReserveDeps;
  admit: AdmitDeps;
  relay: RelayDeps;
  settle: SettleDeps;
  refusal: RefusalDeps;
  log: RequestLog;
}
