import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import type { Arbitrary } from 'fast-check';
import { errorCatalogue, isErrorType } from '@gw/errors';
import { maxLoggedChars } from '@gw/telemetry';
import { waitUntil } from '@gw/testing';
import { harness } from '../e2e/harness';
import { admin } from '../e2e/http';
import { adminCases, bodyCases, headerCases, pathCases, publicKeys, renderRequest } from './cases';
import type { CredentialName, FuzzCase, RenderContext } from './cases';
import { exchange } from './raw-http';
import type { Exchange, WireResponse } from './raw-http';

/**
 * Property-based fuzzing of both HTTP ports against the whole stack. Every answer, whatever was sent:
 * within a bound, never a 5xx but a 503 overloaded_error with a retry hint (or the stub's error the case
 * asked for), every error in the envelope with its request id and the status of its type, caller text
 * echoed only cut; afterwards no service log line carries a run of the fuzz's text longer than the log
 * cap. `FUZZ_SEED` replays a run, `FUZZ_RUNS` sets the number of requests (`make fuzz` runs more).
 */
const h = harness();
const seed = Number(process.env.FUZZ_SEED ?? randomBytes(4).readUInt32BE() >>> 1);
const totalCases = Number(process.env.FUZZ_RUNS ?? 4_000);
/** Requests sent at once: a property's run is a batch, so that 2 cores stay busy. */
const batchSize = 8;
/** Longest wait for a whole answer; the gateway's own receive bounds are 10 s, and nothing here is slow. */
const answerBoundMs = 10_000;
/** The longest caller text an error message may repeat (`quoted` in @gw/errors: 64 code points). */
const echoedChars = 64;

const shares: [string, () => Arbitrary<FuzzCase>, number][] = [
  ['bodies of /v1/messages and /v1/messages/count_tokens', bodyCases, 0.35],
  ['headers of the public API', headerCases, 0.25],
  ['paths of the public API', pathCases, 0.2],
  ['the admin API', adminCases, 0.2],
];

/** Log files and their sizes when the fuzz began: only what it caused is searched. */
const logOffsets = new Map<string, number>();
/** How each part of the fuzz was answered: status (or what happened instead) and count. */
const answers = new Map<string, Map<string, number>>();
let context: RenderContext;
/** The seed and the counts go to the output of every run, failed or not. */
const print = (line: string) => process.stdout.write(`${line}\n`);
const ports = { public: Number(new URL(h.baseUrl).port), admin: Number(new URL(h.adminUrl).port) };

const markerRun = () => new RegExp(`(?:${context.marker})+`, 'g');
const longestRun = (text: string) => Math.max(0, ...[...text.matchAll(markerRun())].map((match) => match[0].length));

async function created<T>(what: string, call: Promise<{ status: number; body: T }>): Promise<T> {
  const answer = await call;
  if (answer.status !== 200 && answer.status !== 201) throw new Error(`setup: ${what} answered ${answer.status}`);
  return answer.body;
}

beforeAll(async () => {
  // Distinctive enough that it appears in a log only if the fuzz put it there.
  const marker = `Fz${seed.toString(36)}q`;
  print(
    `http fuzz: seed ${seed}, ${totalCases} requests (FUZZ_SEED=${seed} FUZZ_RUNS=${totalCases} replays it), marker ${marker}`,
  );
  for (const file of readdirSync(h.logsDir)) logOffsets.set(file, statSync(join(h.logsDir, file)).size);

  const account = await created(
    'fuzz account',
    admin<{ id: string }>(h, 'POST', '/accounts', { name: 'fuzz', plan: 'pro' }),
  );
  // The fuzz must not meet its own limits: a 429 would hide what a request would have got.
  await created(
    'fuzz limits',
    admin(h, 'PATCH', `/accounts/${account.id}/limits`, { requests_per_minute: 10_000_000, concurrency: 100_000 }),
  );
  const testKey = async (residency: string, privacyMode: string) =>
    await created(
      'fuzz key',
      admin<{ id: string; key: string }>(h, 'POST', '/keys', {
        account_id: account.id,
        name: `fuzz ${residency} ${privacyMode}`,
        environment: 'test',
        residency,
        privacy_mode: privacyMode,
      }),
    );
  const revoked = await testKey('eu', 'off');
  await created('revocation', admin(h, 'POST', `/keys/${revoked.id}/revoke`));
  // The admin fuzz changes, suspends and revokes only what belongs to this account.
  const victim = await created(
    'victim account',
    admin<{ id: string }>(h, 'POST', '/accounts', { name: 'fuzz victim', plan: 'pro' }),
  );
  const victimKey = await created(
    'victim key',
    admin<{ id: string }>(h, 'POST', '/keys', {
      account_id: victim.id,
      name: 'victim',
      environment: 'test',
      residency: 'eu',
      privacy_mode: 'off',
    }),
  );
  const victimAdmin = await created(
    'victim admin key',
    admin<{ key: string }>(h, 'POST', `/accounts/${victim.id}/admin-keys`, { name: 'victim admin' }),
  );
  const credentials: Record<CredentialName, string> = {
    'test-off': (await testKey('eu', 'off')).key,
    'test-redact': (await testKey('eu', 'redact')).key,
    'test-tokenise': (await testKey('eu', 'tokenise')).key,
    'test-flag': (await testKey('eu', 'flag')).key,
    'test-uk': (await testKey('uk', 'off')).key,
    revoked: revoked.key,
    operator: h.adminToken,
    'victim-admin': victimAdmin.key,
  };
  context = { credentials, ids: { 'victim-account': victim.id, 'victim-key': victimKey.id }, marker };
}, 30_000);

const header = (response: WireResponse, name: string) => response.headers[name]?.[0];

/** The one documented route a 2xx of the public port may come from, after what Express normalises. */
function isDocumentedRoute(method: string, target: string): boolean {
  const path = target
    .replace(/^http:\/\/[^/]*/, '')
    .replace(/[?#].*$/s, '')
    .toLowerCase()
    .replace(/(.)\/$/, '$1');
  const get = method === 'GET' || method === 'HEAD';
  if (path === '/v1/messages' || path === '/v1/messages/count_tokens') return method === 'POST';
  // `/` answers the probe clients send before their first call.
  if (path === '/' || path === '/v1/models' || path === '/v1/usage' || path === '/healthz') return get;
  return get && /^\/v1\/models\/[^/]+$/.test(path);
}

/** A 200 of an endpoint the case meant to succeed carries that endpoint's answer. */
function successProblem(fuzzCase: FuzzCase, response: WireResponse): string | undefined {
  if (response.status !== 200) return `expected 200, got ${response.status}`;
  const text = response.body.toString('utf8');
  const target = String(fuzzCase.target[0]);
  if (header(response, 'content-type')?.startsWith('text/event-stream')) {
    return /event: message_stop\n/.test(text) ? undefined : 'the stream did not end with message_stop';
  }
  const answer = JSON.parse(text) as { type?: unknown; input_tokens?: unknown };
  if (target.endsWith('count_tokens')) return typeof answer.input_tokens === 'number' ? undefined : 'no input_tokens';
  return answer.type === 'message' ? undefined : 'not a message';
}

/** Why an error response is wrong, or undefined. */
function errorProblem(fuzzCase: FuzzCase, response: WireResponse): string | undefined {
  const requestId = header(response, 'x-request-id');
  if (fuzzCase.method === 'HEAD') return undefined;
  let envelope: unknown;
  try {
    envelope = JSON.parse(response.body.toString('utf8'));
  } catch {
    return 'the error body is not JSON';
  }
  const { type, error, request_id: bodyId, ...rest } = envelope as Record<string, unknown>;
  if (type !== 'error' || Object.keys(rest).length > 0) return 'not the error envelope';
  if (typeof error !== 'object' || error === null) return 'no error object';
  const { type: errorType, message, ...extra } = error as Record<string, unknown>;
  if (Object.keys(extra).length > 0 || typeof message !== 'string' || message === '')
    return 'error is not {type, message}';
  if (bodyId !== requestId) return `request_id ${String(bodyId)} is not x-request-id ${String(requestId)}`;
  if (typeof errorType !== 'string' || !isErrorType(errorType))
    return `error.type ${String(errorType)} is not in the catalogue`;
  const entry = errorCatalogue[errorType];
  if (entry.httpStatus !== response.status) return `${errorType} answered with ${response.status}`;
  if (header(response, 'x-should-retry') !== String(entry.shouldRetry))
    return `x-should-retry is not ${entry.shouldRetry}`;
  if (response.status >= 500) {
    const asked = fuzzCase.expect.kind === 'error' && fuzzCase.expect.type === errorType;
    const overloaded = errorType === 'overloaded_error' && header(response, 'retry-after') !== undefined;
    if (!asked && !overloaded) return `a ${response.status} ${errorType} nobody asked for: ${message.slice(0, 200)}`;
  }
  if (longestRun(message) > echoedChars) return `the message repeats ${longestRun(message)} characters of caller text`;
  if (fuzzCase.expect.kind === 'error' && fuzzCase.expect.type !== errorType) {
    return `expected ${fuzzCase.expect.type}, got ${errorType}`;
  }
  return undefined;
}

/** Why an exchange breaks a rule, or undefined. */
function problemOf(fuzzCase: FuzzCase, result: Exchange, target: string): string | undefined {
  if (result.kind === 'timed-out')
    return `no whole answer within ${answerBoundMs} ms (${result.received.length} bytes)`;
  if (result.kind === 'closed') {
    return `the connection closed without a whole answer: ${JSON.stringify(result.received.toString('latin1').slice(0, 200))}`;
  }
  const { response } = result;
  const requestId = response.headers['x-request-id'];
  if (requestId?.length !== 1 || !/^req_[A-Za-z0-9]{24}$/.test(requestId[0]!)) {
    return `x-request-id is ${JSON.stringify(requestId)}`;
  }
  if (response.status >= 400) return errorProblem(fuzzCase, response);
  if (response.status >= 300 || response.status < 200) return `status ${response.status}`;
  if (fuzzCase.expect.kind === 'refused') return `a ${response.status} for a request with ${fuzzCase.expect.why}`;
  if (fuzzCase.expect.kind === 'error') return `expected ${fuzzCase.expect.type}, got ${response.status}`;
  if (fuzzCase.port === 'public' && !isDocumentedRoute(fuzzCase.method, target)) {
    return `a ${response.status} for ${fuzzCase.method} ${JSON.stringify(target.slice(0, 120))}, no documented route`;
  }
  if (fuzzCase.expect.kind === 'success') return successProblem(fuzzCase, response);
  return undefined;
}

async function check(part: string, fuzzCase: FuzzCase): Promise<void> {
  const raw = renderRequest(fuzzCase, context);
  const lineEnd = raw.indexOf('\r\n');
  const target = raw.subarray(raw.indexOf(' ') + 1, raw.lastIndexOf(' ', lineEnd)).toString('utf8');
  const result = await exchange(ports[fuzzCase.port], raw, {
    headRequest: fuzzCase.method === 'HEAD',
    timeoutMs: answerBoundMs,
  });
  const status = result.kind === 'answered' ? String(result.response.status) : result.kind;
  const counts = answers.get(part) ?? new Map<string, number>();
  answers.set(part, counts.set(status, (counts.get(status) ?? 0) + 1));
  const problem = problemOf(fuzzCase, result, target);
  if (problem === undefined) return;
  // The body of an error, never of a success: an admin 201 carries a new key.
  const body =
    result.kind === 'answered' && result.response.status >= 400
      ? ` body ${JSON.stringify(result.response.body.toString('utf8').slice(0, 300))}`
      : '';
  throw new Error(`${fuzzCase.label}: ${problem}.${body}\nThe request: ${fc.stringify(fuzzCase)}`);
}

describe('HTTP fuzz of the public and admin ports', () => {
  const timings: string[] = [];
  afterAll(() => {
    const parts = [...answers.entries()].map(([part, counts]) => {
      const statuses = [...counts.entries()].sort().map(([status, count]) => `${status}: ${count}`);
      return `${part}: ${statuses.join(', ')}`;
    });
    print(`http fuzz: seed ${seed}; ${timings.join('; ')}\n${parts.join('\n')}`);
  });

  it.each(shares)(
    'answers %s by the rules',
    async (name, cases, share) => {
      const runs = Math.max(1, Math.round((totalCases * share) / batchSize));
      const startedAt = Date.now();
      await fc.assert(
        fc.asyncProperty(fc.array(cases(), { minLength: batchSize, maxLength: batchSize }), async (batch) => {
          await Promise.all(batch.map((fuzzCase) => check(name, fuzzCase)));
        }),
        { seed, numRuns: runs },
      );
      timings.push(`${name}: ${runs * batchSize} requests in ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);
    },
    Math.max(60_000, totalCases * 60),
  );

  it('left no run of its text longer than the log cap in any service log', async () => {
    // One last request whose log line shows that the services have written what came before it.
    const last = await exchange(
      ports.public,
      renderRequest(
        {
          label: 'flush',
          port: 'public',
          method: 'POST',
          target: ['/v1/messages'],
          version: 'HTTP/1.1',
          headers: [
            ['host', ['gateway']],
            ['x-api-key', [{ credential: publicKeys[0] }]],
            ['content-type', ['application/json']],
          ],
          body: {
            json: {
              value: { model: 'claude-sonnet-5', max_tokens: 8, messages: [{ role: 'user', content: 'flush' }] },
            },
          },
          chunked: false,
          expect: { kind: 'success' },
        },
        context,
      ),
      { headRequest: false, timeoutMs: answerBoundMs },
    );
    if (last.kind !== 'answered') throw new Error(`the last request got no answer: ${last.kind}`);
    const requestId = header(last.response, 'x-request-id')!;
    const read = (file: string) => {
      const text = readFileSync(join(h.logsDir, file));
      return text.subarray(logOffsets.get(file) ?? 0).toString('utf8');
    };
    await waitUntil(
      () => read('ingress.log'),
      { what: "the last request's log line" },
      (text) => text.includes(requestId),
    );

    const offending: string[] = [];
    let lines = 0;
    let carrying = 0;
    for (const file of readdirSync(h.logsDir)) {
      for (const line of read(file).split('\n')) {
        lines += 1;
        const run = longestRun(line);
        if (run > 0) carrying += 1;
        if (run > maxLoggedChars) offending.push(`${file}: a run of ${run} characters in ${line.slice(0, 300)}`);
      }
    }
    print(`http fuzz: ${carrying} of ${lines} log lines carry some of its text, cut or short`);
    expect(offending).toEqual([]);
  });
});
