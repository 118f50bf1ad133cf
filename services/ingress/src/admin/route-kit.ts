import type express from 'express';
import type { Request } from 'express';
import { ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import type { PlanConfig } from '@gw/config';
import type { authv1 } from '@gw/proto';
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

export interface Answer {
  status: number;
  body: unknown;
  /** Set by a change: recorded in the audit log before the answer leaves. */
  audit?: AuditNote;
}

export type Handler = (request: Request, principal: Principal) => Promise<Result<Answer>>;

export const answer = (body: unknown, status = 200, audit?: AuditNote): Result<Answer> => ok({ status, body, audit });

/** What each file of admin routes is given: the authenticating wrapper, the clients, the key visibility rule. */
export interface RouteKit {
  router: express.Router;
  route(handler: Handler): express.RequestHandler;
  clients: Clients;
  visibleKey(principal: Principal, keyId: string): Promise<Result<authv1.ApiKey>>;
  /** The plans of the gateway YAML in force. */
  plans(): readonly PlanConfig[];
}
