import path from 'node:path';
import express from 'express';
import type { PlanConfig } from '@gw/config';
import type { Logger } from '@gw/telemetry';
import { requireKnownHost } from '../admin/host-check';
import { adminRoutes } from '../admin/routes';
import type { Clients } from '../clients';
import { assignRequestId, internalError, notFound, readiness } from './edge-middleware';
import { sendError } from './send-error';

export interface AdminAppOptions {
  /** True once the process can answer requests (`/readyz`). */
  ready(): boolean;
  clients: Clients;
  operatorToken: string;
  trustedProxies: readonly string[];
  /** The plans of the gateway YAML in force, for the limits page. */
  plans(): readonly PlanConfig[];
  /** Host names the admin API and dashboard answer for; health checks answer any. */
  allowedHosts: readonly string[];
  logger: Logger;
}

/** The dashboard's built assets (dashboard/dist, made by `make build`). */
const dashboardAssets = path.join(path.dirname(require.resolve('@gw/dashboard/package.json')), 'dist');

/**
 * Every admin-port answer: only the dashboard's own files may run or load (no inline script or style),
 * it may not be framed, nothing is sniffed or cached, no referrer leaves.
 */
const adminSecurityHeaders = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
    "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

/** The operator-facing port: health, the admin API (docs/admin-api.md) mounted at /admin/v1, and the dashboard at `/`. */
export function createAdminApp(options: AdminAppOptions): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.use(assignRequestId);
  app.use((_request, response, next) => {
    response.set(adminSecurityHeaders);
    next();
  });
  app.get('/healthz', (_request, response) => {
    response.json({ status: 'ok' });
  });
  app.get('/readyz', readiness(options.ready));
  app.use(requireKnownHost(options.allowedHosts, sendError));
  app.use('/admin/v1', adminRoutes({ ...options, sendError }));
  app.use(express.static(dashboardAssets, { index: 'index.html', redirect: false }));
  app.use(notFound);
  app.use(internalError(options.logger));
  return app;
}
