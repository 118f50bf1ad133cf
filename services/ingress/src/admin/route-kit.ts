import { ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import type { AdminRoute, AnswerOf, BodyOf, ParamsOf, QueryOf } from '@gw/admin-api';
import type { PlanConfig } from '@gw/config';
import type { Clients } from '../clients';
import type { Principal } from './principal';

/** What a change did, for the audit log: resources as the API shows them, never a secret. */
export interface AuditNote {
  action: string;
  accountId: string | undefined;
  target: { kind: string; id: string };
  before: unknown;
  after: unknown;
}

/** What a route answers: its declared JSON (with the audit note of a change), or a CSV file to download. */
export type RouteAnswer<T> =
  { kind: 'json'; body: T; audit?: AuditNote } | { kind: 'csv'; filename: string; text: string };

export const json = <T>(body: T, audit?: AuditNote): Result<RouteAnswer<T>> => ok({ kind: 'json', body, audit });
export const csv = <T>(filename: string, text: string): Result<RouteAnswer<T>> => ok({ kind: 'csv', filename, text });

/** A request as its route's declaration decoded it. */
export interface RouteInput<R extends AdminRoute> {
  params: ParamsOf<R>;
  query: QueryOf<R>;
  body: BodyOf<R>;
}

/** What each route is given besides its input: who calls, the clients, the plans of the gateway YAML in force. */
export interface RouteContext {
  principal: Principal;
  clients: Clients;
  plans(): readonly PlanConfig[];
}

/** A route's work: decide nothing the services decide, shape their answer as the declaration says. */
export type RouteHandler<R extends AdminRoute> = (
  input: RouteInput<R>,
  context: RouteContext,
) => Promise<Result<RouteAnswer<AnswerOf<R>>>>;

/** A declared route and the handler that serves it. */
export interface ServedRoute {
  route: AdminRoute;
  handle: RouteHandler<AdminRoute>;
}

export const serve = <R extends AdminRoute>(route: R, handle: RouteHandler<R>): ServedRoute =>
  ({ route, handle }) as unknown as ServedRoute;
