import { connect } from 'node:net';

/** One HTTP/1.x response as it came off the wire. */
export interface WireResponse {
  status: number;
  /** Header names in lower case; a header sent twice has two values. */
  headers: Record<string, string[]>;
  body: Buffer;
}

/** What a connection gave back for one request. */
export type Exchange =
  | { kind: 'answered'; response: WireResponse; elapsedMs: number }
  /** The server closed the connection before a whole response. */
  | { kind: 'closed'; received: Buffer; elapsedMs: number }
  /** Nothing whole within the bound. */
  | { kind: 'timed-out'; received: Buffer; elapsedMs: number };

const headEnd = Buffer.from('\r\n\r\n');

/** A chunked body's decoded bytes, or undefined while it is incomplete. */
function dechunk(data: Buffer, from: number): Buffer | undefined {
  const parts: Buffer[] = [];
  let at = from;
  for (;;) {
    const lineEnd = data.indexOf('\r\n', at);
    if (lineEnd < 0) return undefined;
    const size = parseInt(data.subarray(at, lineEnd).toString('latin1'), 16);
    if (!Number.isFinite(size)) throw new Error(`bad chunk size line at byte ${at}`);
    if (size === 0) {
      // The last chunk, then trailers (if any) and an empty line.
      if (data.subarray(lineEnd, lineEnd + 4).equals(headEnd)) return Buffer.concat(parts);
      return data.indexOf(headEnd, lineEnd + 2) < 0 ? undefined : Buffer.concat(parts);
    }
    if (data.length < lineEnd + 2 + size + 2) return undefined;
    parts.push(data.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
}

/**
 * The first final (non-1xx) response in `data`, or undefined while it is incomplete. `closed`: the
 * peer has closed, so a body delimited by the close is whole.
 */
export function parseResponse(data: Buffer, headRequest: boolean, closed: boolean): WireResponse | undefined {
  let start = 0;
  for (;;) {
    const end = data.indexOf(headEnd, start);
    if (end < 0) return undefined;
    const [statusLine = '', ...lines] = data.subarray(start, end).toString('latin1').split('\r\n');
    const status = Number(statusLine.split(' ')[1]);
    const headers: Record<string, string[]> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      const name = line.slice(0, colon).trim().toLowerCase();
      (headers[name] ??= []).push(line.slice(colon + 1).trim());
    }
    const bodyStart = end + 4;
    if (status >= 100 && status < 200) {
      start = bodyStart;
      continue;
    }
    if (headRequest || status === 204 || status === 304) return { status, headers, body: Buffer.alloc(0) };
    if (headers['transfer-encoding']?.some((value) => /chunked/i.test(value))) {
      const body = dechunk(data, bodyStart);
      return body && { status, headers, body };
    }
    const length = headers['content-length'];
    if (length) {
      const size = Number(length[0]);
      return data.length >= bodyStart + size
        ? { status, headers, body: data.subarray(bodyStart, bodyStart + size) }
        : undefined;
    }
    return closed ? { status, headers, body: data.subarray(bodyStart) } : undefined;
  }
}

/**
 * Writes `raw` on a new connection and resolves with the first whole response, the connection's close,
 * or the bound passing. The connection is dropped once the response is whole.
 */
export function exchange(
  port: number,
  raw: Buffer,
  options: { headRequest: boolean; timeoutMs: number },
): Promise<Exchange> {
  return new Promise((resolve) => {
    const startedAt = Date.now();
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let settled = false;
    const finish = (result: Exchange) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(result);
    };
    const timer = setTimeout(
      () => finish({ kind: 'timed-out', received: Buffer.concat(chunks), elapsedMs: Date.now() - startedAt }),
      options.timeoutMs,
    );
    const look = (closed: boolean) => {
      const received = Buffer.concat(chunks);
      let response: WireResponse | undefined;
      try {
        response = parseResponse(received, options.headRequest, closed);
      } catch {
        response = undefined;
      }
      if (response) finish({ kind: 'answered', response, elapsedMs: Date.now() - startedAt });
      else if (closed) finish({ kind: 'closed', received, elapsedMs: Date.now() - startedAt });
    };
    socket.on('data', (data: Buffer) => {
      chunks.push(data);
      look(false);
    });
    // A server that answers early and closes may reset a connection still being written: what it sent counts.
    socket.on('error', () => undefined);
    socket.on('close', () => look(true));
    socket.write(raw);
  });
}
