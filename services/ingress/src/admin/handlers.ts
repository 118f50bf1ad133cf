import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import { answerFault } from './answer-check';
import { authenticatePrincipal } from './principal';
import type { Principal } from './principal';
import type { AdminRoutesOptions } from './routes';

/** What a route answers: JSON, or a CSV file to download. */
export type AdminAnswer =
  { kind: 'json'; status: number; body: unknown } | { kind: 'csv'; filename: string; text: string };

export type AdminHandler = (request: Request, principal: Principal) => Promise<Result<AdminAnswer>>;

export const json = (body: unknown, status = 200): Result<AdminAnswer> => ok({ kind: 'json', status, body });
export const csv = (filename: string, text: string): Result<AdminAnswer> => ok({ kind: 'csv', filename, text });

/** Wraps a handler with the admin API's authentication and error envelope, as every admin route has. */
export function adminRoute(options: AdminRoutesOptions): (handler: AdminHandler) => RequestHandler {
  return (handler) => (request: Request, response: Response, next: NextFunction) => {
    authenticatePrincipal(request.headers.authorization, options.operatorToken, options.clients.auth)
      .then(async (principal) => {
        const result = principal.ok ? await handler(request, principal.value) : principal;
        if (!result.ok) return options.sendError(response, result.error);
        const answer = result.value;
        if (answer.kind === 'json') {
          const fault = answerFault(request, answer.status, answer.body, options.logger);
          return fault ? options.sendError(response, fault) : void response.status(answer.status).json(answer.body);
        }
        response
          .status(200)
          .type('text/csv; charset=utf-8')
          .set('content-disposition', `attachment; filename="${answer.filename}"`)
          .send(answer.text);
      })
      .catch(next);
  };
}

/**
 * One CSV field (RFC 4180). A text that a spreadsheet would take for a formula (=, +, -, @, tab, CR) is
 * prefixed with an apostrophe: key names are caller text.
 */
export function csvField(value: string | number): string {
  if (typeof value === 'number') return String(value);
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

export function csvText(header: readonly string[], rows: readonly (readonly (string | number)[])[]): string {
  return [header, ...rows].map((row) => row.map(csvField).join(',')).join('\r\n') + '\r\n';
}
