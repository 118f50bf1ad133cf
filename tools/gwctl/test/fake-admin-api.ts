import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/** The compiled CLI: the tests run it as a real process, as users do. */
export const cliPath = resolve(__dirname, '../dist/main.js');

export interface RecordedRequest {
  method: string;
  url: string;
  authorization: string | undefined;
  contentType: string | undefined;
  body: unknown;
}

export interface Answer {
  status: number;
  body?: unknown;
  /** Sent as is instead of JSON, for answers that are not the API's. */
  rawBody?: string;
  headers?: Record<string, string>;
  /** Never answer, to exercise the client's timeout. */
  hang?: boolean;
}

type Route = (request: RecordedRequest) => Answer | undefined;

/** A stand-in for ingress's Admin API on 127.0.0.1 and a free port, answering what each test routes. */
export class FakeAdminApi {
  readonly requests: RecordedRequest[] = [];
  private routes: Route[] = [];
  private readonly hanging: ServerResponse[] = [];
  private server: Server | undefined;
  private nextRequestId = 1;

  get url(): string {
    const address = this.server?.address() as AddressInfo | undefined;
    if (!address) throw new Error('the fake Admin API is not started');
    return `http://127.0.0.1:${address.port}`;
  }

  async start(): Promise<void> {
    this.server = createServer((request, response) => void this.handle(request, response));
    await new Promise<void>((done) => this.server!.listen(0, '127.0.0.1', done));
  }

  async stop(): Promise<void> {
    for (const response of this.hanging) response.destroy();
    this.server?.closeAllConnections();
    await new Promise<void>((done) => (this.server ? this.server.close(() => done()) : done()));
  }

  /** Forgets the requests and routes of the previous test. */
  reset(): void {
    this.requests.length = 0;
    this.routes = [];
  }

  /** Answers `method path` (path with its query) with `answer`, or with what the function returns. */
  on(method: string, path: string, answer: Answer | ((request: RecordedRequest) => Answer)): void {
    this.routes.push((request) =>
      request.method === method && request.url === path
        ? typeof answer === 'function'
          ? answer(request)
          : answer
        : undefined,
    );
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const recorded: RecordedRequest = {
      method: request.method ?? '',
      url: request.url ?? '',
      authorization: request.headers.authorization,
      contentType: request.headers['content-type'],
      body: text === '' ? undefined : (JSON.parse(text) as unknown),
    };
    this.requests.push(recorded);
    const requestId = `req_fake${String(this.nextRequestId++).padStart(20, '0')}`;
    let answer: Answer | undefined;
    for (const route of this.routes) answer ??= route(recorded);
    answer ??= {
      status: 404,
      body: { type: 'error', error: { type: 'not_found_error', message: 'no such route' }, request_id: requestId },
    };
    if (answer.hang) {
      this.hanging.push(response);
      return;
    }
    response.writeHead(answer.status, {
      'content-type': answer.rawBody === undefined ? 'application/json' : 'text/plain',
      'x-request-id': requestId,
      ...answer.headers,
    });
    response.end(answer.rawBody ?? (answer.body === undefined ? '' : JSON.stringify(answer.body)));
  }
}

/** The API's error envelope. */
export function errorAnswer(status: number, type: string, message: string, requestId: string): Answer {
  return {
    status,
    body: { type: 'error', error: { type, message }, request_id: requestId },
    headers: { 'x-request-id': requestId },
  };
}

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * A fresh directory under the system's temporary one: no `.local/stack.env` in it or above it, so the
 * developer's stack is never used by accident.
 */
export function emptyDirectory(): string {
  return mkdtempSync(join(tmpdir(), 'gwctl-test-'));
}

/**
 * Runs the CLI without inheriting the test's environment (a developer's GW_ADMIN_* must not leak in).
 * Asynchronous, so the fake server in this process keeps answering while the CLI waits.
 */
export function runCli(args: string[], options: { cwd: string; env?: Record<string, string> }): Promise<CliRun> {
  if (!existsSync(cliPath)) throw new Error(`${cliPath} is missing: build first (pnpm exec tsc -b tools/gwctl)`);
  return new Promise((done) => {
    execFile(
      process.execPath,
      [cliPath, ...args],
      { env: { PATH: process.env.PATH ?? '', ...options.env }, cwd: options.cwd, timeout: 20_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        done({ code, stdout, stderr });
      },
    );
  });
}

export const sampleAccount = {
  id: 'acct_01HZX3QK7T2B',
  name: 'Acme',
  plan: 'pro',
  status: 'active',
  suspended_at: null,
  created_at: '2026-11-21T10:00:00.000Z',
  limits: {
    requests_per_minute: null,
    concurrency: null,
    monthly_tokens: null,
    overage: null,
    hard_ceiling_tokens: null,
  },
};

export const sampleKey = {
  id: 'key_01HZX3R0A1B2',
  account_id: sampleAccount.id,
  name: 'ci',
  environment: 'live',
  display_prefix: 'gw_live_a1B2',
  residency: 'eu',
  privacy_mode: 'off',
  allowed_models: null,
  allowed_ips: null,
  expires_at: null,
  status: 'active',
  created_at: '2026-11-21T10:05:00.000Z',
  last_used_at: null,
  revoked_at: null,
};

export const sampleKeyValue = 'gw_live_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6';
