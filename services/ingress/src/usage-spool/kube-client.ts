import { readFileSync } from 'node:fs';
import { request } from 'node:https';

/** Where a pod's service account credentials are mounted. */
const serviceAccountDir = '/var/run/secrets/kubernetes.io/serviceaccount';

export class KubeApiError extends Error {
  override name = 'KubeApiError';

  constructor(
    readonly status: number,
    method: string,
    path: string,
    body: string,
  ) {
    super(`${method} ${path}: ${status} ${body.slice(0, 300)}`);
  }
}

/** The Kubernetes API from inside a pod, as its service account: JSON in, JSON out. */
export class KubeClient {
  private readonly token = readFileSync(`${serviceAccountDir}/token`, 'utf8').trim();
  private readonly ca = readFileSync(`${serviceAccountDir}/ca.crt`);

  constructor(
    private readonly host = process.env.KUBERNETES_SERVICE_HOST ?? 'kubernetes.default.svc',
    private readonly port = Number(process.env.KUBERNETES_SERVICE_PORT ?? 443),
  ) {}

  get<T>(path: string): Promise<T> {
    return this.call<T>('GET', path);
  }

  post<T>(path: string, body: unknown): Promise<T> {
    return this.call<T>('POST', path, body);
  }

  private call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const outgoing = request(
        {
          host: this.host,
          port: this.port,
          path,
          method,
          ca: this.ca,
          // The API server's certificate names the in-cluster Service, whatever address reached it.
          servername: 'kubernetes.default.svc',
          headers: {
            authorization: `Bearer ${this.token}`,
            accept: 'application/json',
            ...(payload !== undefined && { 'content-type': 'application/json' }),
          },
          timeout: 30_000,
        },
        (incoming) => {
          const chunks: Buffer[] = [];
          incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
          incoming.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            const status = incoming.statusCode ?? 0;
            if (status < 200 || status >= 300) return reject(new KubeApiError(status, method, path, text));
            resolve(JSON.parse(text) as T);
          });
          incoming.on('error', reject);
        },
      );
      outgoing.on('timeout', () => outgoing.destroy(new Error(`${method} ${path}: no answer in 30 s`)));
      outgoing.on('error', reject);
      outgoing.end(payload);
    });
  }
}
