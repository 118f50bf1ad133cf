import express from 'express';
import type { NextFunction, Request, Response } from 'express';
import { err, gatewayError, ok, quoted } from '@gw/errors';
import type { GatewayError, Result } from '@gw/errors';
import { tooLarge } from '../body';
import type { Clients } from '../clients';
import { billingPeriod } from '../usage-report';
import { mountKeyUsageRoutes } from './key-usage';
import { authenticatePrincipal, requireAccount, requireOperator } from './principal';
import type { Principal } from './principal';
import { mountWebhookRoutes } from './webhooks';
import { createAccountBody, createAdminKeyBody, createKeyBody, parseBody, setLimitsBody } from './requests';
import {
  accountResource,
  accountUsageResource,
  adminKeyResource,
  environmentNames,
  keyResource,
  privacyModeNames,
  residencyNames,
} from './resources';

interface Answer {
  status: number;
  body: unknown;
}

type Handler = (request: Request, principal: Principal) => Promise<Result<Answer>>;

export interface AdminRoutesOptions {
  clients: Clients;
  operatorToken: string;
  sendError(response: Response, error: GatewayError): void;
}

const answer = (body: unknown, status = 200): Result<Answer> => ok({ status, body });

/** Admin bodies are small JSON documents; a larger one is refused before it is parsed. */
const bodyLimitBytes = 1024 * 1024;

/** What the body parser's refusals say; none repeats the body. */
const unreadableBodyMessages: Record<string, string> = {
  'entity.parse.failed': 'The request body is not valid JSON.',
  'encoding.unsupported': 'The request body has a Content-Encoding the admin API cannot read; send it uncompressed.',
  'charset.unsupported': 'The request body has a charset the admin API cannot read; send UTF-8.',
};

/**
 * The refusal for a request the router could not read: a path segment that is not percent-encoded
 * UTF-8, or a body the parser refused (which carries a 4xx status and a type). Anything else is not a
 * refusal but a fault, left to the app's error handler.
 */
function unreadableRequest(error: unknown): GatewayError | undefined {
  if (error instanceof URIError) {
    return gatewayError('invalid_request_error', 'The path is not valid percent-encoded UTF-8.');
  }
  if (typeof error !== 'object' || error === null) return undefined;
  const { status, type } = error as { status?: unknown; type?: unknown };
  if (typeof status !== 'number' || status < 400 || status > 499) return undefined;
  if (status === 413) return tooLarge(bodyLimitBytes);
  const message = typeof type === 'string' ? unreadableBodyMessages[type] : undefined;
  return gatewayError('invalid_request_error', message ?? 'The request body could not be read.');
}

/** The admin API of docs/admin-api.md: requests are checked for shape here, every decision is the auth service's. */
export function adminRoutes(options: AdminRoutesOptions): express.Router {
  const { clients, operatorToken, sendError } = options;
  const { auth } = clients;
  const router = express.Router();
  router.use(express.json({ limit: bodyLimitBytes }));

  const route = (handler: Handler) => (request: Request, response: Response, next: NextFunction) => {
    authenticatePrincipal(request.headers.authorization, operatorToken, auth)
      .then(async (principal) => {
        const result = principal.ok ? await handler(request, principal.value) : principal;
        if (result.ok) response.status(result.value.status).json(result.value.body);
        else sendError(response, result.error);
      })
      .catch(next);
  };

  /** A key the caller may see, or 404 for one of another account. */
  const visibleKey = async (principal: Principal, keyId: string) => {
    const found = await auth.getKey({ keyId });
    if (!found.ok) return found;
    const allowed = requireAccount(principal, found.value.apiKey!.accountId, 'key');
    return allowed.ok ? ok(found.value.apiKey!) : allowed;
  };

  router.post(
    '/accounts',
    route(async (request, principal) => {
      const allowed = requireOperator(principal);
      if (!allowed.ok) return allowed;
      const body = parseBody(createAccountBody, request.body);
      if (!body.ok) return body;
      const created = await auth.createAccount(body.value);
      return created.ok ? answer(accountResource(created.value.account!), 201) : created;
    }),
  );

  router.get(
    '/accounts',
    route(async (_request, principal) => {
      const listed = await auth.listAccounts(principal.kind === 'account' ? { accountId: principal.accountId } : {});
      return listed.ok ? answer({ data: listed.value.accounts.map(accountResource) }) : listed;
    }),
  );

  router.get(
    '/accounts/:id',
    route(async (request, principal) => {
      const id = String(request.params.id);
      const allowed = requireAccount(principal, id);
      if (!allowed.ok) return allowed;
      const found = await auth.getAccount({ id });
      return found.ok ? answer(accountResource(found.value.account!)) : found;
    }),
  );

  for (const [action, suspended] of [
    ['suspend', true],
    ['resume', false],
  ] as const) {
    router.post(
      `/accounts/:id/${action}`,
      route(async (request, principal) => {
        const allowed = requireOperator(principal);
        if (!allowed.ok) return allowed;
        const changed = await auth.setAccountSuspended({ accountId: String(request.params.id), suspended });
        return changed.ok ? answer(accountResource(changed.value.account!)) : changed;
      }),
    );
  }

  router.patch(
    '/accounts/:id/limits',
    route(async (request, principal) => {
      const allowed = requireOperator(principal);
      if (!allowed.ok) return allowed;
      const body = parseBody(setLimitsBody, request.body);
      if (!body.ok) return body;
      const fields = Object.keys(body.value);
      if (fields.length === 0) {
        return err(
          gatewayError(
            'invalid_request_error',
            'Expected at least one of requests_per_minute, concurrency, monthly_tokens, hard_ceiling_tokens, overage.',
          ),
        );
      }
      const big = (value: number | null | undefined) =>
        value === null || value === undefined ? undefined : BigInt(value);
      const changed = await auth.setAccountLimits({
        accountId: String(request.params.id),
        fields,
        limits: {
          requestsPerMinute: big(body.value.requests_per_minute),
          concurrency: big(body.value.concurrency),
          monthlyTokens: big(body.value.monthly_tokens),
          hardCeilingTokens: big(body.value.hard_ceiling_tokens),
          overage: body.value.overage ?? undefined,
        },
      });
      return changed.ok ? answer(accountResource(changed.value.account!)) : changed;
    }),
  );

  router.get(
    '/accounts/:id/usage',
    route(async (request, principal) => {
      const id = String(request.params.id);
      const allowed = requireAccount(principal, id);
      if (!allowed.ok) return allowed;
      const environmentName = request.query.environment ?? 'live';
      if (environmentName !== 'live' && environmentName !== 'test') {
        return err(gatewayError('invalid_request_error', 'environment: expected "live" or "test".'));
      }
      const found = await auth.getAccount({ id });
      if (!found.ok) return found;
      const account = found.value.account!;
      const environment = environmentNames[environmentName]!;
      const period = billingPeriod(new Date());
      const usageQuery = { accountId: id, periodStart: period.start.toISOString().slice(0, 10), environment };
      // The allowance in force as quota computes it for a request: the plan's, with the account's overrides.
      const [peeked, usage, daily] = await Promise.all([
        clients.quota.peek({
          key: { accountId: id, environment, plan: account.plan, limitOverrides: account.limits },
        }),
        clients.metering.getUsage(usageQuery),
        clients.metering.getDailyUsage(usageQuery),
      ]);
      if (!peeked.ok) return peeked;
      if (!usage.ok) return usage;
      if (!daily.ok) return daily;
      const limits = peeked.value.limits!;
      return answer(
        accountUsageResource({
          period,
          plan: account.plan,
          environment: environmentName,
          allowance: Number(limits.monthlyTokens),
          overageAllowed: limits.overage,
          usage: usage.value,
          days: daily.value.days,
        }),
      );
    }),
  );

  router.post(
    '/accounts/:id/admin-keys',
    route(async (request, principal) => {
      const allowed = requireOperator(principal);
      if (!allowed.ok) return allowed;
      const body = parseBody(createAdminKeyBody, request.body);
      if (!body.ok) return body;
      const created = await auth.createAdminKey({ accountId: String(request.params.id), name: body.value.name });
      return created.ok
        ? answer({ ...adminKeyResource(created.value.adminKey!), key: created.value.key }, 201)
        : created;
    }),
  );

  router.post(
    '/keys',
    route(async (request, principal) => {
      const body = parseBody(createKeyBody, request.body);
      if (!body.ok) return body;
      const allowed = requireAccount(principal, body.value.account_id);
      if (!allowed.ok) return allowed;
      const list = (values: string[] | null | undefined) => (values ? { values } : undefined);
      const created = await auth.createKey({
        accountId: body.value.account_id,
        name: body.value.name,
        environment: environmentNames[body.value.environment],
        residency: residencyNames[body.value.residency],
        privacyMode: privacyModeNames[body.value.privacy_mode],
        allowedModels: list(body.value.allowed_models),
        allowedIps: list(body.value.allowed_ips),
        expiresAtUnixMs: body.value.expires_at ? BigInt(Date.parse(body.value.expires_at)) : undefined,
      });
      return created.ok ? answer({ ...keyResource(created.value.apiKey!), key: created.value.key }, 201) : created;
    }),
  );

  router.get(
    '/keys',
    route(async (request, principal) => {
      const accountId = typeof request.query.account_id === 'string' ? request.query.account_id : '';
      if (!accountId)
        return err(gatewayError('invalid_request_error', 'account_id: expected the account id as a query parameter.'));
      const allowed = requireAccount(principal, accountId);
      if (!allowed.ok) return allowed;
      const listed = await auth.listKeys({ accountId });
      return listed.ok ? answer({ data: listed.value.keys.map((key) => keyResource(key)) }) : listed;
    }),
  );

  router.get(
    '/keys/:id',
    route(async (request, principal) => {
      const found = await visibleKey(principal, String(request.params.id));
      return found.ok ? answer(keyResource(found.value)) : found;
    }),
  );

  router.post(
    '/keys/:id/revoke',
    route(async (request, principal) => {
      const found = await visibleKey(principal, String(request.params.id));
      if (!found.ok) return found;
      const revoked = await auth.revokeKey({ keyId: found.value.id });
      return revoked.ok ? answer(keyResource(revoked.value.apiKey!)) : revoked;
    }),
  );

  // A new key with the old one's settings; the old one keeps working until it is revoked, so that
  // callers can move over without an outage.
  router.post(
    '/keys/:id/rotate',
    route(async (request, principal) => {
      const found = await visibleKey(principal, String(request.params.id));
      if (!found.ok) return found;
      const old = found.value;
      if (old.revokedAtUnixMs !== undefined) {
        return err(gatewayError('invalid_request_error', 'This key is revoked; create a new key instead.'));
      }
      const created = await auth.createKey({
        accountId: old.accountId,
        name: old.name,
        environment: old.environment,
        residency: old.residency,
        privacyMode: old.privacyMode,
        allowedModels: old.allowedModels,
        allowedIps: old.allowedIps,
        expiresAtUnixMs: old.expiresAtUnixMs,
        rotatesKeyId: old.id,
      });
      return created.ok
        ? answer({ ...keyResource(created.value.apiKey!), key: created.value.key, replaces: old.id }, 201)
        : created;
    }),
  );

  mountKeyUsageRoutes(router, options);
  mountWebhookRoutes(router, options);

  // The path is caller text: cut in the message like any other echoed value.
  router.use((request: Request, response: Response) => {
    const path = quoted(`${request.baseUrl}${request.path}`);
    sendError(response, gatewayError('not_found_error', `Unknown endpoint: ${request.method.slice(0, 16)} ${path}.`));
  });

  router.use((error: unknown, _request: Request, response: Response, next: NextFunction) => {
    const refusal = unreadableRequest(error);
    if (refusal) sendError(response, refusal);
    else next(error);
  });

  return router;
}
