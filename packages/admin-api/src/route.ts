import type { z } from 'zod';
import type { ErrorType } from '@gw/errors';

/**
 * Every route may answer these: a bad or missing credential (401), an unknown Host (403), a throttled
 * address (429), a service behind it out (503) or a fault (500).
 */
export const commonErrors = [
  'authentication_error',
  'permission_error',
  'rate_limit_error',
  'overloaded_error',
  'api_error',
] as const satisfies readonly ErrorType[];

type Parameters = z.ZodObject<Record<string, z.ZodType<string | undefined>>>;

/**
 * One route of the admin API, declared once: the server checks requests and answers against it, the
 * OpenAPI document is made from it, and the typed client calls it.
 */
export interface AdminRoute<
  P extends Parameters | undefined = Parameters | undefined,
  Q extends z.ZodType | undefined = z.ZodType | undefined,
  B extends z.ZodType | undefined = z.ZodType | undefined,
  R extends z.ZodType = z.ZodType,
> {
  /** The client's method name and the document's operationId. */
  name: string;
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** Under /admin/v1, with `{name}` for each path parameter. */
  path: string;
  summary: string;
  /** `operator`: the operator token only; `both`: the operator or the account's admin key. */
  who: 'operator' | 'both';
  params: P;
  query: Q;
  body: B;
  status: 200 | 201;
  response: R;
  /** Also answers a CSV file (query `format=csv`). */
  csv?: boolean;
  /** The error types of this route's own refusals, besides the common ones. */
  errors: readonly ErrorType[];
}

export type ParamsOf<T extends AdminRoute> = T['params'] extends z.ZodType ? z.output<T['params']> : undefined;
export type QueryOf<T extends AdminRoute> = T['query'] extends z.ZodType ? z.output<T['query']> : undefined;
/** The query as a caller writes it: every field optional where the server has a default. */
export type QueryInputOf<T extends AdminRoute> = T['query'] extends z.ZodType ? z.input<T['query']> : undefined;
export type BodyOf<T extends AdminRoute> = T['body'] extends z.ZodType ? z.output<T['body']> : undefined;
export type BodyInputOf<T extends AdminRoute> = T['body'] extends z.ZodType ? z.input<T['body']> : undefined;
export type AnswerOf<T extends AdminRoute> = z.output<T['response']>;

export function defineRoute<
  P extends Parameters | undefined,
  Q extends z.ZodType | undefined,
  B extends z.ZodType | undefined,
  R extends z.ZodType,
>(route: AdminRoute<P, Q, B, R>): AdminRoute<P, Q, B, R> {
  return route;
}
