import { err, ok } from '@gw/errors';
import type { Logger } from '@gw/telemetry';
import type { RouterMetrics } from '../src/metrics';
import type { TransportFailure, UpstreamHttp, UpstreamHttpRequest, UpstreamResponse } from '../src/upstream-http';
import { pace } from '@gw/testing';

/** How a fake endpoint answers: a transport failure, or a status with headers and body, maybe after a delay. */
export type Answer =
  | (TransportFailure & { delayMs?: number })
  | { status: number; headers?: Record<string, string>; body?: string; delayMs?: number };

/**
 * The router's HTTP layer replaced at its boundary: answers by host (unknown hosts refuse the
 * connection), and remembers every request sent, in order.
 */
export function fakeHttp(answers: Record<string, Answer> | ((request: UpstreamHttpRequest) => Answer)) {
  const sent: UpstreamHttpRequest[] = [];
  /** The `generating` option of each send, in order. */
  const generating: boolean[] = [];
  const answerOf =
    typeof answers === 'function'
      ? answers
      : (request: UpstreamHttpRequest): Answer =>
          answers[new URL(request.url).host] ?? { kind: 'connect', code: 'ECONNREFUSED' };
  const http: UpstreamHttp = {
    async send(request, options) {
      sent.push(request);
      generating.push(options.generating);
      const answer = answerOf(request);
      if (answer.delayMs !== undefined && answer.delayMs > 0) await pace(answer.delayMs);
      if ('kind' in answer) return err({ kind: answer.kind, code: answer.code });
      const response: UpstreamResponse = {
        status: answer.status,
        headers: answer.headers ?? {},
        body: (async function* () {
          yield ok(Buffer.from(answer.body ?? ''));
        })(),
        discard: () => undefined,
      };
      return ok(response);
    },
    close: async () => undefined,
  };
  return { http, sent, generating, hosts: () => sent.map((request) => new URL(request.url).host) };
}

export const silentLogger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
} as unknown as Logger;

/** A logger that keeps each line's fields and message. */
export function recordingLogger() {
  const lines: { level: string; fields: Record<string, unknown>; msg: string }[] = [];
  const at = (level: string) => (fields: Record<string, unknown>, msg: string) => lines.push({ level, fields, msg });
  const logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } as unknown as Logger;
  return { logger, lines };
}

export const noMetrics: RouterMetrics = {
  upstreamAttempt: () => undefined,
  movedOn: () => undefined,
  betasDropped: () => undefined,
  completion: () => undefined,
};
