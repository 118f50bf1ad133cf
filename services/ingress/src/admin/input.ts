import type { Request } from 'express';
import type { z } from 'zod';
import type { AdminRoute } from '@gw/admin-api';
import { err, gatewayError, ok, quoted } from '@gw/errors';
import type { Result } from '@gw/errors';
import type { RouteInput } from './route-kit';

/** Unknown field names are caller text too: a few, each cut, and how many more. */
const shownUnknownKeys = 3;

function unknownFieldsMessage(keys: readonly string[]): string {
  const shown = keys.slice(0, shownUnknownKeys).map(quoted).join(', ');
  const more = keys.length > shownUnknownKeys ? ` and ${keys.length - shownUnknownKeys} more` : '';
  return `unknown field${keys.length > 1 ? 's' : ''} ${shown}${more}.`;
}

/** Parses a JSON body against a schema; a failure is a 400 naming the field. */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown): Result<z.output<S>> {
  const result = schema.safeParse(body ?? {});
  if (result.success) return ok(result.data);
  const issue = result.error.issues[0]!;
  const message =
    issue.code === 'unrecognized_keys'
      ? unknownFieldsMessage(issue.keys)
      : issue.path.length === 0
        ? 'The request body must be a JSON object.'
        : `${issue.path.join('.')}: ${issue.message}.`;
  return err(gatewayError('invalid_request_error', message));
}

/** A refusal naming the query parameter, as the bodies' refusals name the field. */
export function parseQuery<S extends z.ZodType>(schema: S, query: unknown): Result<z.output<S>> {
  const result = schema.safeParse(query);
  if (result.success) return ok(result.data);
  const issue = result.error.issues[0]!;
  return err(gatewayError('invalid_request_error', `${issue.path.map(String).join('.')}: ${issue.message}.`));
}

/** The request's path parameters, query and body, checked against the route's declaration. */
export function decodeInput(route: AdminRoute, request: Request): Result<RouteInput<AdminRoute>> {
  const params = route.params ? route.params.safeParse(request.params) : undefined;
  if (params && !params.success) {
    const names = Object.keys(route.params?.shape ?? {});
    return err(gatewayError('invalid_request_error', `Expected the path parameters ${names.map(quoted).join(', ')}.`));
  }
  const query = route.query ? parseQuery(route.query, request.query) : ok(undefined);
  if (!query.ok) return query;
  const body = route.body ? parseBody(route.body, request.body) : ok(undefined);
  if (!body.ok) return body;
  return ok({ params: params?.data, query: query.value, body: body.value } as RouteInput<AdminRoute>);
}
