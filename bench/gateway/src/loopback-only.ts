import { Server } from 'node:net';

/**
 * Preloaded (`node --require`) into the peer gateway, whose server listens on every interface when given
 * a port alone (@hono/node-server passes no host): a listen without a host gets 127.0.0.1, so that
 * everything the benchmark starts stays on loopback.
 */
const listen = Server.prototype.listen;
Server.prototype.listen = function listenOnLoopback(this: Server, ...args: unknown[]): Server {
  if (typeof args[0] === 'number' && typeof args[1] !== 'string') {
    // listen(port, callback) or listen(port, undefined, callback): the host goes second.
    args.splice(1, args[1] === undefined ? 1 : 0, '127.0.0.1');
  } else if (typeof args[0] === 'object' && args[0] !== null && !('host' in args[0]) && 'port' in args[0]) {
    args[0] = { ...args[0], host: '127.0.0.1' };
  }
  return (listen as (...rest: unknown[]) => Server).apply(this, args);
} as typeof Server.prototype.listen;
