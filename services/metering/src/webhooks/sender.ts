import { request } from 'node:https';
import { isIP } from 'node:net';
import type { VettedTarget } from './targets';

/** How one attempt ended: the answer's status, or why there was none. */
export type SendOutcome = { statusCode: number } | { error: string };

export interface SendOptions {
  /** Trusted certificate authorities (PEM); undefined: the system's. */
  ca: string[] | undefined;
  timeoutMs: number;
}

/** Sends one delivery; what does the sending in the dispatcher, replaced in tests. */
export type Sender = (
  target: VettedTarget,
  headers: Record<string, string>,
  body: string,
  options: SendOptions,
) => Promise<SendOutcome>;

/**
 * POSTs to the vetted address only (never a fresh lookup of the name), with the endpoint's name for TLS
 * and the Host header. Redirects are not followed (one could point anywhere): a 3xx is a failed attempt.
 * The answer's body is not read beyond what arrives; only its status counts.
 */
export const httpsSender: Sender = (target, headers, body, options) =>
  new Promise((resolve) => {
    let settled = false;
    const finish = (outcome: SendOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(outcome);
    };
    const outgoing = request({
      host: target.address,
      family: target.family,
      port: target.port,
      method: 'POST',
      path: `${target.url.pathname}${target.url.search}`,
      servername: isIP(target.hostname) ? undefined : target.hostname,
      ca: options.ca,
      agent: false,
      headers: {
        ...headers,
        host: target.url.host,
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
        'user-agent': 'gateway-webhooks/1',
      },
    });
    const timer = setTimeout(() => {
      outgoing.destroy();
      finish({ error: `no answer within ${options.timeoutMs} ms` });
    }, options.timeoutMs);
    outgoing.on('response', (response) => {
      finish({ statusCode: response.statusCode ?? 0 });
      response.resume();
      response.on('error', () => undefined);
    });
    outgoing.on('error', (error: NodeJS.ErrnoException) => finish({ error: error.code ?? error.message }));
    outgoing.end(body);
  });
