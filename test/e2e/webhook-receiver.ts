import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import type { IncomingHttpHeaders } from 'node:http';
import type { Harness } from './harness';

export interface ReceivedDelivery {
  headers: IncomingHttpHeaders;
  body: string;
  /** The status the receiver answered. */
  answered: number;
}

/**
 * The tests' webhook receiver: HTTPS on loopback with a certificate of the stack's webhook CA, at the one
 * host:port metering allow-lists. Answers the statuses a test queues, then 200.
 */
export function startWebhookReceiver(h: Harness) {
  const received: ReceivedDelivery[] = [];
  const answers: number[] = [];
  const server = createServer(
    { cert: readFileSync(h.webhookReceiver.certFile), key: readFileSync(h.webhookReceiver.keyFile) },
    (request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const answered = answers.shift() ?? 200;
        received.push({ headers: request.headers, body: Buffer.concat(chunks).toString('utf8'), answered });
        response.writeHead(answered).end();
      });
    },
  );
  return {
    url: `https://localhost:${h.webhookReceiver.port}/hooks/gateway`,
    received,
    answers,
    listen: () => new Promise<void>((resolve) => server.listen(h.webhookReceiver.port, '127.0.0.1', resolve)),
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}
