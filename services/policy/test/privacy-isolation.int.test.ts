import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { createServiceClient } from '@gw/grpc';
import type { Result } from '@gw/errors';
import { commonv1, policyv1 } from '@gw/proto';
import { waitUntil } from '@gw/testing';

/**
 * The real policy process under a heavy privacy-mode load: while one account sends four 4 MiB `redact` bodies at
 * once, another account's small calls every 20 ms stay fast and all succeed, and its larger body gets a thread of
 * its own. The heavy account's calls either complete or are refused as overloaded, never anything else.
 */

const repoRoot = join(__dirname, '../../..');
/** Ingress's deadline on a control call (CONTROL_CALL_TIMEOUT_MS). */
const callDeadlineMs = 2_000;
/**
 * Measured on a shared two-core machine beside the end-to-end stack and other benchmarks: p99 50–220 ms (p50
 * 6–18 ms) with the privacy threads, and up to 307 ms when the machine as a whole ran slower; p50 above 1 s and
 * calls failing at the deadline when every body ran on the gRPC thread. The p99 bound is this floor or 80 % of
 * the time one 4 MiB body takes alone on the same machine in the same run (350–700 ms there), whichever is
 * higher: it stays under that time, so a small call that waited for a heavy body fails it, on a slow machine
 * as on a quick one.
 */
const smallCallP99FloorMs = 250;
/** Far under the p50 above 1 s of small calls queued behind heavy bodies, far over the 6–18 ms measured. */
const smallCallP50BoundMs = 100;
const MiB = 1024 * 1024;

const sentences = [
  'Could you summarise the attached quarterly report for the board? Revenue grew 12% in Q3 2024.',
  'The migration to version 2.4.1 finished on 2024-03-18 at 10:30 UTC; 3 of 47 services needed a restart.',
  'You can reach Jane Doe at jane.doe@example.co.uk or on 020 7946 0958.',
  'Please rewrite this paragraph in plain English, keeping the tone friendly but professional.',
  'Section 4.2.1 of the contract says either party may terminate with 30 days written notice.',
  'Refund to IBAN GB82 WEST 1234 5698 7654 32, or the card 4111 1111 1111 1111 if that fails.',
  'We saw 1.5 million requests per day in February, peaking at 2,300 per second during the launch.',
  'The team agreed to revisit the roadmap after the release of 3.0 and the security review.',
];

/** A Messages body of about `size` bytes of prose with personal data in a quarter of its sentences. */
function messagesBody(size: number): Uint8Array {
  const parts: string[] = [];
  for (let length = 0, index = 0; length < size; index += 1) {
    const sentence = sentences[index % sentences.length]!;
    parts.push(sentence);
    length += sentence.length + 1;
  }
  const content = parts.join(' ');
  return new Uint8Array(
    Buffer.from(JSON.stringify({ model: 'claude-sonnet-5', max_tokens: 16, messages: [{ role: 'user', content }] })),
  );
}

function nearestRank(sorted: number[], percentile: number): number {
  return sorted[Math.max(1, Math.ceil((percentile / 100) * sorted.length)) - 1]!;
}

describe('policy under a heavy privacy-mode load', () => {
  let policy: ChildProcess;
  let address: string;

  beforeAll(async () => {
    policy = spawn(process.execPath, [join(repoRoot, 'services/policy/dist/main.js')], {
      env: {
        PATH: process.env.PATH,
        LOG_LEVEL: 'info',
        GRPC_PORT: '0',
        GRPC_INSECURE: 'true',
        METRICS_PORT: '0',
        GATEWAY_CONFIG: join(repoRoot, 'deploy/local/gateway.yaml'),
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let port: number | undefined;
    createInterface({ input: policy.stdout! }).on('line', (line) => {
      const entry = JSON.parse(line) as { msg?: string; port?: number };
      if (entry.msg === 'policy serving') port = entry.port;
    });
    address = `127.0.0.1:${await waitUntil(() => port, { what: 'policy serving', timeoutMs: 20_000 })}`;
  });

  afterAll(async () => {
    const exited = once(policy, 'exit');
    policy.kill('SIGTERM');
    const [exitCode] = (await exited) as [number | null];
    expect(exitCode).toBe(0);
  });

  it("keeps another account's calls fast while one account's four 4 MiB redact bodies run", async () => {
    const client = createServiceClient(policyv1.PolicyService, {
      address,
      callee: 'policy',
      defaultTimeoutMs: callDeadlineMs,
      maxMessageBytes: 33 * MiB,
      transport: { kind: 'plaintext' },
    });
    const authorize = (accountId: string, body: Uint8Array) =>
      client.authorize({
        key: {
          keyId: `key_${accountId}`,
          accountId,
          environment: commonv1.Environment.LIVE,
          residency: commonv1.Residency.EU,
          privacyMode: commonv1.PrivacyMode.REDACT,
          plan: 'pro',
        },
        model: 'claude-sonnet-5',
        bodyJson: body,
      });
    try {
      const small = messagesBody(600);
      await waitUntil(async () => (await authorize('acct_b', small)).ok, { what: 'a first answer from policy' });

      const heavyBody = messagesBody(4 * MiB);
      // One heavy body alone, from a third account, sets the p99 bound for this machine and this run.
      const aloneStartedAt = performance.now();
      expect((await authorize('acct_c', heavyBody)).ok).toBe(true);
      const smallCallP99BoundMs = Math.max(smallCallP99FloorMs, 0.8 * (performance.now() - aloneStartedAt));
      const heavy: Promise<Result<policyv1.AuthorizeResponse>>[] = [];
      for (let index = 0; index < 4; index += 1) heavy.push(authorize('acct_a', heavyBody));
      const larger = authorize('acct_b', messagesBody(256 * 1024));

      const smallCalls: Promise<{ ok: boolean; ms: number }>[] = [];
      const sendSmall = () => {
        const startedAt = performance.now();
        smallCalls.push(
          authorize('acct_b', small).then((result) => ({ ok: result.ok, ms: performance.now() - startedAt })),
        );
      };
      sendSmall();
      // Open loop: one call every 20 ms whatever the answers, for as long as the heavy calls run.
      const ticker = setInterval(sendSmall, 20);
      const heavyResults = await Promise.all(heavy).finally(() => clearInterval(ticker));
      const smallResults = await Promise.all(smallCalls);

      const latencies = smallResults.map((result) => result.ms).sort((a, b) => a - b);
      const summary = {
        calls: latencies.length,
        failed: smallResults.filter((result) => !result.ok).length,
        p50: Math.round(nearestRank(latencies, 50)),
        p99: Math.round(nearestRank(latencies, 99)),
        heavy: heavyResults.map((result) => (result.ok ? 'ok' : result.error.type)),
        p99BoundMs: Math.round(smallCallP99BoundMs),
      };
      // The whole summary shows in a failure.
      expect({
        ...summary,
        p50WithinBound: summary.p50 < smallCallP50BoundMs,
        p99WithinBound: summary.p99 < smallCallP99BoundMs,
      }).toEqual(expect.objectContaining({ failed: 0, p50WithinBound: true, p99WithinBound: true }));
      expect(summary.calls).toBeGreaterThanOrEqual(10);
      // B's larger body had a thread of its own rather than waiting behind A's.
      expect((await larger).ok).toBe(true);

      // A's calls complete, redacted, or are refused as overloaded (503, retried by the SDKs); at least one
      // completes, since A keeps a thread.
      for (const result of heavyResults) {
        if (result.ok) expect(Buffer.from(result.value.bodyJson!).toString('utf8')).not.toContain('jane.doe@example');
        else expect(result.error.type).toBe('overloaded_error');
      }
      expect(summary.heavy).toContain('ok');
    } finally {
      client.close();
    }
  });
});
