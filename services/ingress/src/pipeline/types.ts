import type { Context } from '@opentelemetry/api';
import type { GatewayError, RateLimitWindow, Result } from '@gw/errors';
import type { commonv1, eventsv1, MessageInitShape, policyv1 } from '@gw/proto';
import type { BodyChecks } from '../body-checks/body-checks';
import type { CatalogueFollower } from '../catalogue/catalogue-snapshot';
import type { Clients } from '../clients';
import type { SettledRequest } from '../telemetry/edge-metrics';
import type { InFlightRequests } from '../domain/in-flight';
import type { LeaseKeeper } from '../domain/leases';
import type { Restoration } from '../domain/restoration';

/** Whom the gateway's calls for one request are made for: its id and, while tracing is on, its span's context. */
export interface RequestScope {
  requestId: string;
  traceContext?: Context;
}

/**
 * The options of a gRPC call made for a request: its id and its trace context, and nothing else of what
 * the scope may be (a CallerRequest's own signal must not cancel every call).
 */
export function callScope(scope: RequestScope): { requestId: string; traceContext?: Context } {
  return { requestId: scope.requestId, traceContext: scope.traceContext };
}

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

/** The policy decision a completion needs: candidate pools and, where a privacy mode applied, the body to send. */
export type Authorization = Pick<
  policyv1.AuthorizeResponse,
  'pools' | 'bodyJson' | 'privacyFlags' | 'placeholders' | 'placeholderNonce'
>;

/** Verifies a presented key (from a cache kept exact by the revocation channel, else from auth). */
export interface KeyVerifier {
  verify(presentedKey: string, sourceAddress: string, scope: RequestScope): Promise<Result<commonv1.KeyContext>>;
}

/** Decides model, plan, key permissions and residency, and applies the key's privacy mode. */
export type Authorize = (
  key: commonv1.KeyContext,
  model: string,
  body: Buffer,
  scope: RequestScope,
) => Promise<Result<Authorization>>;

/** The quota and router calls of the request path; the gRPC clients, or fakes in tests. */
export interface PipelineClients {
  quota: Pick<Clients['quota'], 'reserve' | 'acquire' | 'peek'>;
  router: Pick<Clients['router'], 'complete'>;
}

export interface MessagesDeps {
  clients: PipelineClients;
  /** Deadline of a completion's router stream: no call lives for ever. */
  completionTimeoutMs: number;
  keys: KeyVerifier;
  authorize: Authorize;
  leases: Pick<LeaseKeeper, 'hold'>;
  inFlight: InFlightRequests;
  /** Hands a usage event to the metering pipeline; resolves once it is durable (or its loss logged), never rejects. */
  recordUsage(event: UsageEventInit, request: RequestScope): Promise<void>;
  /** The metrics of a request that reached the relay: tokens, time to first token, the gateway's added time. */
  reportSettled(settled: SettledRequest, request: RequestScope): void;
  /** One structured line per request (with its id and trace ids): ids and numbers, never content. */
  logRequest(request: RequestScope, fields: Record<string, unknown>): void;
  /** A failure of the gateway's own code: logged with its stack, never shown to the caller. */
  logFailure(error: unknown, request: RequestScope, fields: Record<string, unknown>): void;
  /** The body size limit of a plan: the gateway's, or the plan's where that is lower. */
  bodyLimitFor(plan: string): number;
  /** Parses and validates a body read whole (400 naming the field); large ones off the event loop. */
  checkBody: BodyChecks['check'];
  /** True while usage events cannot be kept (the durable buffer is full): live requests are refused. */
  billingUnavailable(): boolean;
  /** Mode `tokenise`: puts this request's originals back into its completion (kept for this request only). */
  restorationFor(placeholders: { placeholder: string; original: string }[], nonce: string): Restoration;
  /** Mode `flag`: counts entities by type in the metrics. */
  countPrivacyFlags(counts: Record<string, number>): void;
}

/** What the other public endpoints need besides the request path: every service client. */
export interface GatewayDeps extends MessagesDeps {
  clients: Clients;
  /** Deadline of a token count through the router (the upstream counts, or the router estimates). */
  countTokensTimeoutMs: number;
  /** The catalogue policy pushed, once it has arrived: model listings need no call. */
  catalogue: Pick<CatalogueFollower, 'current'>;
}
