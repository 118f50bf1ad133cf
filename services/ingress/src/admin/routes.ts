import express from 'express';
import type { NextFunction, Request, Response } from 'express';
import { sourceAddress } from '@gw/addresses';
import { err, gatewayError, ok, quoted } from '@gw/errors';
import type { GatewayError, Result } from '@gw/errors';
import type { PlanConfig } from '@gw/config';
import type { Logger } from '@gw/telemetry';
import { tooLarge } from '../body';
import type { authv1 } from '@gw/proto';
import type { Clients } from '../clients';
import { billingPeriod } from '../usage-report';
import { registerAdminKeyRoutes } from './admin-key-routes';
import { registerAuditRoutes } from './audit-routes';
import { answerFault } from './answer-check';
import { CredentialThrottle } from './credential-throttle';
import { registerKeyEditRoutes } from './key-edit-routes';
import { registerLimitsRoutes } from './limits-routes';
import { listQuery } from './list-query';
import { authenticatePrincipal, requireAccount, requireOperator, requireWriteAccess } from './principal';
import type { Principal } from './principal';
import { openApiDocument } from '@gw/admin-api/dist/openapi';
import { answer } from './route-kit';
import type { AuditNote, Handler, RouteKit } from './route-kit';
import { mountKeyUsageRoutes } from './key-usage';
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

export interface AdminRoutesOptions {
  clients: Clients;
  operatorToken: string;
  /** Load balancers whose X-Forwarded-For is believed, as on the public port. */
  trustedProxies: readonly string[];
  logger: Logger;
  sendError(response: Response, error: GatewayError): void;
  /** The plans of the gateway YAML in force (reloaded with it). */
  plans(): readonly PlanConfig[];
  throttle?: CredentialThrottle;
}

/** A key the caller may see, or 404 for one of another account. */
async function findVisibleKey(
  auth: Clients['auth'],
  principal: Principal,
  keyId: string,
): Promise<Result<authv1.ApiKey>> {
  const found = await auth.getKey({ keyId });
  if (!found.ok) return found;
  const allowed = requireAccount(principal, found.value.apiKey!.accountId, 'key');
  return allowed.ok ? ok(found.value.apiKey!) : allowed;
}

const throttled = (waitMs: number) =>
  gatewayError(
    'rate_limit_error',
    'Too many bad admin credentials from this address; wait before trying again (see retry-after).',
    { retryAfterMs: waitMs },
  );

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
  const { clients, operatorToken, sendError, logger } = options;
  const { auth, adminAccess } = clients;
  const throttle = options.throttle ?? new CredentialThrottle();
  const router = express.Router();
  router.use(express.json({ limit: bodyLimitBytes }));
  // The API's own description, made once from the routes' declarations; no credential needed to read it.
  const document = JSON.stringify(openApiDocument());
  router.get('/openapi.json', (_request, response) => void response.type('application/json').send(document));

  const record = async (principal: Principal | undefined, address: string, note: AuditNote) => {
    const appended = await adminAccess.appendAudit({
      actorKind: principal?.kind === 'account' ? 'admin_key' : (principal?.kind ?? 'unknown'),
      actorId: principal?.kind === 'account' ? principal.adminKeyId : '',
      accountId: note.accountId,
      sourceAddress: address,
      action: note.action,
      targetKind: note.target.kind,
      targetId: note.target.id,
      beforeJson: note.before === undefined ? '' : JSON.stringify(note.before),
      afterJson: note.after === undefined ? '' : JSON.stringify(note.after),
    });
    const actor = principal?.kind === 'account' ? principal.adminKeyId : (principal?.kind ?? 'unknown');
    if (principal) {
      logger.info(
        { action: note.action, actor, account_id: note.accountId, target_id: note.target.id, source_address: address },
        'admin change',
      );
    }
    // The change is made and its answer may carry a secret shown once: it is given, and the log keeps what happened.
    if (!appended.ok) {
      logger.error(
        { action: note.action, account_id: note.accountId, target_id: note.target.id, err: appended.error.message },
        'admin change made but not recorded in the audit log',
      );
    }
  };

  const refuseCredential = async (address: string, requestId: unknown) => {
    const emptied = throttle.refused(address);
    logger.warn({ source_address: address, request_id: requestId, throttled: emptied }, 'admin credential refused');
    await record(undefined, address, {
      action: 'admin_credential.refused',
      accountId: undefined,
      target: { kind: '', id: '' },
      before: undefined,
      after: undefined,
    });
  };

  const route = (handler: Handler) => (request: Request, response: Response, next: NextFunction) => {
    const address = sourceAddress(
      request.socket.remoteAddress ?? '',
      request.headers['x-forwarded-for'] as string | undefined,
      options.trustedProxies,
    );
    const waitMs = throttle.waitMs(address);
    if (waitMs > 0) return sendError(response, throttled(waitMs));
    authenticatePrincipal(request.headers.authorization, operatorToken, auth)
      .then(async (principal) => {
        if (!principal.ok && principal.error.type === 'authentication_error') {
          await refuseCredential(address, response.getHeader('x-request-id'));
        }
        if (!principal.ok) return sendError(response, principal.error);
        const writable = requireWriteAccess(principal.value, request.method);
        if (!writable.ok) return sendError(response, writable.error);
        const result = await handler(request, principal.value);
        if (!result.ok) return sendError(response, result.error);
        if (result.value.audit) await record(principal.value, address, result.value.audit);
        const fault = answerFault(request, result.value.status, result.value.body, logger);
        if (fault) return sendError(response, fault);
        response.status(result.value.status).json(result.value.body);
      })
      .catch(next);
  };

  const visibleKey = (principal: Principal, keyId: string) => findVisibleKey(auth, principal, keyId);

  router.post(
    '/accounts',
    route(async (request, principal) => {
      const allowed = requireOperator(principal);
      if (!allowed.ok) return allowed;
      const body = parseBody(createAccountBody, request.body);
      if (!body.ok) return body;
      const created = await auth.createAccount(body.value);
      if (!created.ok) return created;
      const account = accountResource(created.value.account!);
      return answer(account, 201, {
        action: 'account.create',
        accountId: account.id,
        target: { kind: 'account', id: account.id },
        before: null,
        after: account,
      });
    }),
  );

  router.get(
    '/accounts',
    route(async (request, principal) => {
      const query = listQuery(request.query, ['active', 'suspended']);
      if (!query.ok) return query;
      const listed = await adminAccess.searchAccounts({
        page: query.value.page,
        accountId: principal.kind === 'account' ? principal.accountId : undefined,
        query: query.value.q,
        status: query.value.status,
      });
      if (!listed.ok) return listed;
      return answer({ data: listed.value.accounts.map(accountResource), next_after: listed.value.nextAfter || null });
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
        const accountId = String(request.params.id);
        const before = await auth.getAccount({ id: accountId });
        if (!before.ok) return before;
        const changed = await auth.setAccountSuspended({ accountId, suspended });
        if (!changed.ok) return changed;
        const after = accountResource(changed.value.account!);
        return answer(after, 200, {
          action: `account.${action}`,
          accountId,
          target: { kind: 'account', id: accountId },
          before: accountResource(before.value.account!),
          after,
        });
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
      const accountId = String(request.params.id);
      const before = await auth.getAccount({ id: accountId });
      if (!before.ok) return before;
      const changed = await auth.setAccountLimits({
        accountId,
        fields,
        limits: {
          requestsPerMinute: big(body.value.requests_per_minute),
          concurrency: big(body.value.concurrency),
          monthlyTokens: big(body.value.monthly_tokens),
          hardCeilingTokens: big(body.value.hard_ceiling_tokens),
          overage: body.value.overage ?? undefined,
        },
      });
      if (!changed.ok) return changed;
      const after = accountResource(changed.value.account!);
      return answer(after, 200, {
        action: 'account.limits',
        accountId,
        target: { kind: 'account', id: accountId },
        before: accountResource(before.value.account!).limits,
        after: after.limits,
      });
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
      const accountId = String(request.params.id);
      const created = await auth.createAdminKey({
        accountId,
        name: body.value.name,
        expiresAtUnixMs: body.value.expires_at ? BigInt(Date.parse(body.value.expires_at)) : undefined,
      });
      if (!created.ok) return created;
      const adminKey = adminKeyResource(created.value.adminKey!);
      return answer({ ...adminKey, key: created.value.key }, 201, {
        action: 'admin_key.create',
        accountId,
        target: { kind: 'admin_key', id: adminKey.id },
        before: null,
        after: adminKey,
      });
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
      if (!created.ok) return created;
      const key = keyResource(created.value.apiKey!);
      return answer({ ...key, key: created.value.key }, 201, {
        action: 'key.create',
        accountId: key.account_id,
        target: { kind: 'key', id: key.id },
        before: null,
        after: key,
      });
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
      const query = listQuery(request.query, ['active', 'revoked', 'expired']);
      if (!query.ok) return query;
      const listed = await adminAccess.searchKeys({
        accountId,
        page: query.value.page,
        query: query.value.q,
        status: query.value.status,
        environment: query.value.environment,
      });
      if (!listed.ok) return listed;
      return answer({
        data: listed.value.keys.map((key) => keyResource(key)),
        next_after: listed.value.nextAfter || null,
      });
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
      if (!revoked.ok) return revoked;
      const after = keyResource(revoked.value.apiKey!);
      return answer(after, 200, {
        action: 'key.revoke',
        accountId: after.account_id,
        target: { kind: 'key', id: after.id },
        before: keyResource(found.value),
        after,
      });
    }),
  );

  // A new key with the old one's settings, made by auth in one operation; the old one keeps working until
  // it is revoked, so that callers can move over without an outage.
  router.post(
    '/keys/:id/rotate',
    route(async (request, principal) => {
      const found = await visibleKey(principal, String(request.params.id));
      if (!found.ok) return found;
      const rotated = await auth.rotateKey({
        keyId: found.value.id,
        accountId: principal.kind === 'account' ? principal.accountId : undefined,
      });
      if (!rotated.ok) return rotated;
      const key = keyResource(rotated.value.apiKey!);
      const old = keyResource(rotated.value.replaced!);
      return answer({ ...key, key: rotated.value.key, replaces: old.id }, 201, {
        action: 'key.rotate',
        accountId: key.account_id,
        target: { kind: 'key', id: key.id },
        before: old,
        after: key,
      });
    }),
  );

  const kit: RouteKit = { router, route, clients, visibleKey, plans: options.plans };
  registerAdminKeyRoutes(kit);
  registerKeyEditRoutes(kit);
  registerAuditRoutes(kit);
  registerLimitsRoutes(kit);
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
