import { commonv1 } from '@gw/proto';
import { err, gatewayError, ok, quoted } from '@gw/errors';
import type { Result } from '@gw/errors';

/** The query of a list route: `limit` (1–200, 50 by default), `after` (a page's cursor), `q`, `status`, `environment`. */
export interface ListQuery {
  page: { limit: number; after: string };
  q: string;
  status: string;
  environment: commonv1.Environment;
}

export const maxListLimit = 200;
const maxQueryChars = 100;

const invalid = (message: string) => err(gatewayError('invalid_request_error', message));

function single(query: Record<string, unknown>, name: string): Result<string> {
  const value = query[name];
  if (value === undefined) return ok('');
  if (typeof value !== 'string') return invalid(`${name}: expected one value.`);
  return ok(value);
}

export function listQuery(query: Record<string, unknown>, statuses: readonly string[]): Result<ListQuery> {
  const values: Record<string, string> = {};
  for (const name of ['limit', 'after', 'q', 'status', 'environment']) {
    const value = single(query, name);
    if (!value.ok) return value;
    values[name] = value.value;
  }
  const limit = values.limit === '' ? 50 : Number(values.limit);
  if (!/^\d{1,3}$/.test(values.limit || '50') || limit < 1 || limit > maxListLimit) {
    return invalid(`limit: expected a whole number from 1 to ${maxListLimit}.`);
  }
  if (values.after!.length > 64) return invalid('after: expected the next_after of a previous page.');
  if ([...values.q!].length > maxQueryChars) return invalid(`q: expected at most ${maxQueryChars} characters.`);
  if (values.status !== '' && !statuses.includes(values.status!)) {
    return invalid(`status: ${quoted(values.status!)} is not one of ${statuses.join(', ')}.`);
  }
  const environments: Record<string, commonv1.Environment> = {
    '': commonv1.Environment.UNSPECIFIED,
    live: commonv1.Environment.LIVE,
    test: commonv1.Environment.TEST,
  };
  const environment = environments[values.environment!];
  if (environment === undefined) return invalid('environment: expected "live" or "test".');
  return ok({ page: { limit, after: values.after! }, q: values.q!, status: values.status!, environment });
}
