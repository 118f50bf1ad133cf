import { request } from 'node:http';

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * One HTTP request with full control of headers and of the local address it comes from (any of
 * 127.0.0.0/8), which the SDKs do not give.
 */
export function rawRequest(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string; localAddress?: string },
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const outgoing = request(
      url,
      {
        method: options.method ?? 'POST',
        headers: { 'content-type': 'application/json', ...options.headers },
        localAddress: options.localAddress,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        response.on('error', reject);
      },
    );
    outgoing.on('error', reject);
    outgoing.end(options.body);
  });
}

/** The admin API as the operator. */
export async function admin<T>(
  h: { adminUrl: string; adminToken: string },
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: T }> {
  const send = () =>
    fetch(`${h.adminUrl}/admin/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${h.adminToken}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const response = await send().catch((error: unknown) => {
    // An idle pooled connection the server closed just as it was reused (jest loading the next suite can hold
    // the event loop past the pool's idle timer): the request never reached the server, so it is sent again.
    if (idleConnectionClosed(error)) return send();
    throw error;
  });
  return { status: response.status, body: (await response.json()) as T };
}

function idleConnectionClosed(error: unknown): boolean {
  const cause = error instanceof Error ? (error.cause as { code?: string; message?: string } | undefined) : undefined;
  return cause?.code === 'UND_ERR_SOCKET' && cause.message === 'other side closed';
}

/** Sum of a counter over all its series in a Prometheus text exposition. */
export async function counterTotal(metricsUrl: string, name: string): Promise<number> {
  const text = await (await fetch(metricsUrl)).text();
  return text
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
}
