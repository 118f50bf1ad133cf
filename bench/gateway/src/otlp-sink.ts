import { createServer } from 'node:http';

export interface OtlpSink {
  url: string;
  /** Export requests answered, and the bytes they carried. */
  received(): { requests: number; bytes: number };
  close(): Promise<void>;
}

/**
 * An OTLP/HTTP receiver that takes every export and keeps nothing: what tracing costs the services
 * (making, batching, serialising and sending spans) without a trace backend's own cost on the machine.
 */
export async function startOtlpSink(port: number): Promise<OtlpSink> {
  let requests = 0;
  let bytes = 0;
  const server = createServer((request, response) => {
    request.on('data', (chunk: Buffer) => (bytes += chunk.length));
    request.on('end', () => {
      requests += 1;
      response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  return {
    url: `http://127.0.0.1:${port}`,
    received: () => ({ requests, bytes }),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
