import type { z } from 'zod';
import { endpoints } from './endpoints';
import type { Endpoint } from './endpoints';
import type { AdminRoute, AnswerOf, BodyInputOf, QueryInputOf } from './route';
import type { AdminApi, AdminRouteName } from './routes';

/**
 * The one typed client of the admin API, used by gwctl and the dashboard: each call names a route of
 * the table, so its path, parameters, body and answer are the ones the server checks. It needs only the
 * routes' types and their endpoints, never their schemas: a page importing this module does not bundle zod. Failures are
 * returned as values, never thrown. The answer is not checked again here: the server checks each answer
 * against the route's schema before it leaves.
 */

export type AdminFailure =
  /** The API answered with an error (the envelope's type and message when it sent one). */
  | { kind: 'api'; status: number; type: string | undefined; message: string; requestId: string | undefined }
  /** No answer: connection refused, DNS, TLS… */
  | { kind: 'unreachable'; url: string; reason: string }
  | { kind: 'timeout'; url: string; timeoutMs: number }
  /** A success status with a body that is not what the document describes. */
  | { kind: 'invalid_response'; status: number; reason: string; requestId: string | undefined };

export type AdminResult<T> = { ok: true; value: T } | { ok: false; failure: AdminFailure };

export interface AdminClientOptions {
  /** Base URL without a trailing slash; empty in a page served by the admin port itself. */
  baseUrl: string;
  token: string;
  /** One deadline for the whole exchange, body included; none when absent. */
  timeoutMs?: number;
  /** Extra fetch options (the dashboard's `cache: 'no-store'`, `credentials: 'omit'`). */
  fetchOptions?: Omit<RequestInit, 'method' | 'headers' | 'body' | 'signal'>;
  /** Told of every answer's status, e.g. so that a session's idle clock counts the user's actions. */
  onAnswer?(status: number): void;
}

type ParamsInput<R extends AdminRoute> = R['params'] extends z.ZodType ? { params: z.input<R['params']> } : object;
type QueryInput<R extends AdminRoute> = R['query'] extends z.ZodType ? { query?: QueryInputOf<R> } : object;
type BodyInput<R extends AdminRoute> = R['body'] extends z.ZodType ? { body: BodyInputOf<R> } : object;
/** What a call of the route takes: its path parameters, query and body, each only when it has them. */
export type CallInput<R extends AdminRoute> = ParamsInput<R> & QueryInput<R> & BodyInput<R>;

export type Answer<K extends AdminRouteName> = AnswerOf<AdminApi[K]>;

/** The route's path with its parameters filled in and encoded, and its query, under /admin/v1. */
export function routePath(route: Endpoint, input: { params?: unknown; query?: unknown } | object): string {
  const { params = {}, query = {} } = input as { params?: Record<string, string>; query?: Record<string, unknown> };
  const path = route.path.replace(/\{(\w+)\}/g, (_whole, name: string) => encodeURIComponent(params[name] ?? ''));
  const entries = Object.entries(query)
    .filter((entry): entry is [string, string | number] => entry[1] !== undefined && entry[1] !== '')
    .map(([name, value]): [string, string] => [name, String(value)]);
  const search = entries.length === 0 ? '' : `?${new URLSearchParams(entries).toString()}`;
  return `/admin/v1${path}${search}`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The cause fetch wraps in its `TypeError: fetch failed`, e.g. ECONNREFUSED. */
function networkReason(error: unknown): string {
  const cause: unknown = error instanceof Error && error.cause !== undefined ? error.cause : error;
  if (cause instanceof Error) {
    const code = (cause as { code?: string }).code;
    const nested = cause instanceof AggregateError ? (cause.errors[0] as { code?: string } | undefined) : undefined;
    return code ?? nested?.code ?? cause.message;
  }
  return String(cause);
}

const isTimeout = (error: unknown) =>
  error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError');

/** The error envelope: `{"type":"error","error":{"type","message"},"request_id"}`. */
function apiFailure(status: number, statusText: string, body: unknown, headerRequestId: string | undefined) {
  const error = isRecord(body) && isRecord(body.error) ? body.error : undefined;
  const message = typeof error?.message === 'string' && error.message ? error.message : undefined;
  const requestId = isRecord(body) && typeof body.request_id === 'string' ? body.request_id : headerRequestId;
  return {
    kind: 'api' as const,
    status,
    type: typeof error?.type === 'string' ? error.type : undefined,
    message: message ?? `HTTP ${status}${statusText ? ` ${statusText}` : ''}`,
    requestId,
  };
}

interface Exchange {
  status: number;
  statusText: string;
  requestId: string | undefined;
  text: string;
  filename: string | undefined;
}

export function createAdminClient(options: AdminClientOptions) {
  async function exchange(method: string, path: string, body: unknown): Promise<AdminResult<Exchange>> {
    const url = `${options.baseUrl}${path}`;
    try {
      const response = await fetch(url, {
        ...options.fetchOptions,
        method,
        headers: {
          authorization: `Bearer ${options.token}`,
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: options.timeoutMs === undefined ? undefined : AbortSignal.timeout(options.timeoutMs),
        // A redirect could carry the token elsewhere; the admin API never redirects.
        redirect: 'error',
      });
      options.onAnswer?.(response.status);
      const disposition = response.headers.get('content-disposition') ?? '';
      return {
        ok: true,
        value: {
          status: response.status,
          statusText: response.statusText,
          requestId: response.headers.get('x-request-id') ?? undefined,
          text: await response.text(),
          filename: /filename="([^"]+)"/.exec(disposition)?.[1],
        },
      };
    } catch (error) {
      const failure: AdminFailure = isTimeout(error)
        ? { kind: 'timeout', url, timeoutMs: options.timeoutMs ?? 0 }
        : { kind: 'unreachable', url, reason: networkReason(error) };
      return { ok: false, failure };
    }
  }

  async function json(method: string, path: string, body: unknown): Promise<AdminResult<unknown>> {
    const answered = await exchange(method, path, body);
    if (!answered.ok) return answered;
    const { status, statusText, requestId, text } = answered.value;
    let parsed: unknown;
    let parseError: string | undefined;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      parseError = 'the body is not JSON';
    }
    if (status < 200 || status > 299) return { ok: false, failure: apiFailure(status, statusText, parsed, requestId) };
    const reason = parseError ?? (isRecord(parsed) ? undefined : 'expected a JSON object');
    if (reason !== undefined) return { ok: false, failure: { kind: 'invalid_response', status, reason, requestId } };
    return { ok: true, value: parsed };
  }

  return {
    /** Calls a route of the table with its parameters, query and body; the answer is typed by the route. */
    call<K extends AdminRouteName>(name: K, input: CallInput<AdminApi[K]>): Promise<AdminResult<Answer<K>>> {
      const route: Endpoint = endpoints[name];
      const { body } = input as { body?: unknown };
      return json(route.method, routePath(route, input as object), body) as Promise<AdminResult<Answer<K>>>;
    },

    /** A route's CSV file (`format=csv`), as text, with the name the answer gives it. */
    async download<K extends AdminRouteName>(
      name: K,
      input: CallInput<AdminApi[K]>,
    ): Promise<AdminResult<{ text: string; filename: string }>> {
      const route: Endpoint = endpoints[name];
      const path = routePath(route, { ...input, query: { ...(input as { query?: object }).query, format: 'csv' } });
      const answered = await exchange(route.method, path, undefined);
      if (!answered.ok) return answered;
      const { status, statusText, requestId, text, filename } = answered.value;
      if (status < 200 || status > 299) {
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch {
          parsed = undefined;
        }
        return { ok: false, failure: apiFailure(status, statusText, parsed, requestId) };
      }
      return { ok: true, value: { text, filename: filename ?? 'export.csv' } };
    },
  };
}

export type AdminClient = ReturnType<typeof createAdminClient>;
