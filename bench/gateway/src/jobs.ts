import type { LoadJob } from './load-protocol';

/** A request an SDK would send: small prompt, small answer. */
function messagesBody(model: string, streamed: boolean): string {
  return JSON.stringify({
    model,
    max_tokens: 64,
    messages: [{ role: 'user', content: 'Hello from the gateway benchmark' }],
    ...(streamed ? { stream: true } : {}),
  });
}

export interface Target {
  url: string;
  headers: Record<string, string>;
}

export function jobFor(
  target: Target,
  model: string,
  streamed: boolean,
  bounds: Pick<LoadJob, 'concurrency' | 'requests' | 'durationMs' | 'ratePerSecond'>,
): LoadJob {
  const body = messagesBody(model, streamed);
  return {
    url: target.url,
    headers: {
      ...target.headers,
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(body)),
      'anthropic-version': '2023-06-01',
    },
    body,
    streamed,
    timeoutMs: 30_000,
    ...bounds,
  };
}
