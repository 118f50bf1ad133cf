import { Agent, createServer, request } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * The floor of any Node gateway: one process that receives a request on `node:http` and forwards it,
 * streamed both ways, to the upstream named by its `x-forward-to` header (http://host:port) over
 * keep-alive connections, and relays the answer. No key, no limit, no record, no parse of the body: what
 * a gateway in Node costs before it does anything a gateway is for. Argument: the port. It reports
 * `{ port }` over IPC once listening and exits when the benchmark disconnects.
 */
const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
const hopByHop = new Set(['connection', 'keep-alive', 'transfer-encoding', 'host', 'x-forward-to']);

function forward(incoming: IncomingMessage, answer: ServerResponse): void {
  const target = URL.parse(String(incoming.headers['x-forward-to']));
  if (!target) {
    answer.writeHead(400).end('x-forward-to must name the upstream, http://host:port\n');
    return;
  }
  const headers = Object.fromEntries(Object.entries(incoming.headers).filter(([name]) => !hopByHop.has(name)));
  const outgoing = request(
    { agent, host: target.hostname, port: target.port, method: incoming.method, path: incoming.url, headers },
    (upstream) => {
      const relayed = Object.fromEntries(Object.entries(upstream.headers).filter(([name]) => !hopByHop.has(name)));
      answer.writeHead(upstream.statusCode ?? 502, relayed);
      upstream.pipe(answer);
    },
  );
  outgoing.once('error', () => {
    if (!answer.headersSent) answer.writeHead(502);
    answer.end();
  });
  incoming.pipe(outgoing);
}

function main(): void {
  const port = Number(process.argv[2]);
  if (!Number.isInteger(port)) throw new Error(`expected a port, got ${JSON.stringify(process.argv[2])}`);
  const server = createServer(forward);
  server.keepAliveTimeout = 65_000;
  server.listen(port, '127.0.0.1', () => process.send!({ port }));
  // Ctrl-C reaches the whole process group; the benchmark decides when this process ends.
  process.on('SIGINT', () => undefined);
  process.once('disconnect', () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  });
}

main();
