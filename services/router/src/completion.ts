import type { Context } from '@opentelemetry/api';
import type { Jurisdiction } from '@gw/config';
import type { TopLevelLayout } from '@gw/json-layout';
import type { Result } from '@gw/errors';
import type { KeyEnvironment } from '@gw/vocabulary';

/** Token counts of one completion, as the upstream (or the stub) reported them. */
export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
  cacheReadInputTokens: number;
  cacheCreationInputTokens: number;
}

export const noUsage: TokenUsage = {
  inputTokens: 0,
  outputTokens: 0,
  cacheReadInputTokens: 0,
  cacheCreationInputTokens: 0,
};

/** A pool policy allowed for the request, in the order policy ranked them. */
export interface CandidatePool {
  poolId: string;
  /** The model id the pool's upstream knows the alias by. */
  upstreamModel: string;
}

/** One call of Complete, decoded from the wire. */
export interface CompletionRequest {
  requestId: string;
  /** The call's span while tracing is on: each upstream attempt's span is its child, log lines carry its ids. */
  traceContext?: Context;
  /** The caller's account: worker threads are shared fairly between accounts. */
  accountId: string;
  environment: KeyEnvironment;
  /** The key's residency tier; undefined when the key carries none (then no pool qualifies). */
  residency: Jurisdiction | undefined;
  /** The model alias the caller asked for. */
  model: string;
  candidates: CandidatePool[];
  /** The Messages request body, JSON. */
  body: Uint8Array;
  /**
   * Where the body's top-level members are, as ingress found them when it checked the body: adapters that edit
   * only the top level use it and the body is not parsed again. Absent when ingress sent none.
   */
  layout?: TopLevelLayout;
  stream: boolean;
  /** Request headers the upstream protocol cares about, names in lower case. */
  headers: Record<string, string>;
  /** The caller's query string without its `?`, empty when none. */
  query: string;
}

/**
 * What a completion produces, in order: one `started`, then `sse` events (streamed) or one
 * `message` (not streamed), then one `finished`. A failure is a GatewayError value and ends it.
 */
export type CompletionEvent =
  /** `droppedBetas`: the caller's betas the pool's provider does not support, which were not sent. */
  | { kind: 'started'; poolId: string; region: string; droppedBetas?: string[] }
  | { kind: 'sse'; event: string; data: Uint8Array }
  | { kind: 'message'; json: Uint8Array }
  | { kind: 'finished'; usage: TokenUsage };

export type CompletionStream = AsyncGenerator<Result<CompletionEvent>, void, undefined>;

/** Shapes of a Messages request body that more than one module reads. */
export type JsonObject = Record<string, unknown>;

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The body of a call whose layout fits it, parsed on first need (by an adapter that translates it): ingress parsed
 * these very bytes as a JSON object before it found their layout, so a failure here is a bug, thrown.
 */
export function parseLaidOutBody(bytes: Uint8Array): JsonObject {
  const body = parseJsonObject(bytes);
  if (body === undefined) throw new Error('a body sent with its layout is not a JSON object');
  return body;
}

/** The request body as a JSON object, or undefined when it is not one. */
export function parseJsonObject(bytes: Uint8Array): JsonObject | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'));
    return isJsonObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}
