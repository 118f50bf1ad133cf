import { join } from 'node:path';
import type { Result } from '@gw/errors';
import { transformBody } from '../src/privacy';
import type { PrivacyMode, PrivacyOutcome } from '../src/privacy';
import { PrivacyPool } from '../src/privacy-pool';
import type { PrivacyPoolOptions, ThreadFailure } from '../src/privacy-pool';

/** The thread as tsc builds it (`pnpm exec tsc -b`): worker threads load JavaScript, not the TypeScript under test. */
const builtThread = join(__dirname, '../dist/privacy-thread.js');

/**
 * A stand-in thread speaking the same protocol, told what to do by the body: `{"holdMs": n}` answers after n ms
 * with the body echoed, `{"spin": true}` never answers, `{"crash": true}` dies of an uncaught exception.
 */
const stubThread = new URL(
  `data:text/javascript,${encodeURIComponent(`
import { parentPort } from 'node:worker_threads';
parentPort.on('message', ({ body }) => {
  const order = JSON.parse(new TextDecoder().decode(body));
  const answer = () => parentPort.postMessage({ kind: 'done', outcome: { body, flags: {}, placeholders: {}, nonce: '' } });
  if (order.crash) setImmediate(() => { throw new Error('thread bug'); });
  else if (order.spin) for (;;);
  else setTimeout(answer, order.holdMs ?? 0);
});
parentPort.postMessage({ kind: 'ready' });
`)}`,
);

const bytes = (value: unknown) => new Uint8Array(Buffer.from(JSON.stringify(value)));
const never = new AbortController().signal;
const textOf = (result: Result<PrivacyOutcome>) =>
  result.ok ? Buffer.from(result.value.body ?? new Uint8Array()).toString('utf8') : result.error.type;

describe('PrivacyPool', () => {
  const pools: PrivacyPool[] = [];
  const failures: ThreadFailure[] = [];

  async function startPool(options: Partial<PrivacyPoolOptions> = {}): Promise<PrivacyPool> {
    const pool = await PrivacyPool.start({
      threads: 2,
      queuedPerAccount: 2,
      queuedTotal: 4,
      script: stubThread,
      onThreadFailure: (failure) => failures.push(failure),
      ...options,
    });
    pools.push(pool);
    return pool;
  }

  beforeEach(() => (failures.length = 0));
  afterEach(async () => {
    await Promise.all(pools.splice(0).map((pool) => pool.close()));
  });

  it('gives the same outcome on its threads as the privacy mode inline, and leaves the caller its bytes', async () => {
    const pool = await startPool({ script: builtThread });
    const prose = 'Write to alice.smith@example.com or call +44 20 7946 0958 about card 4111 1111 1111 1111. ';
    const body = bytes({
      model: 'claude-sonnet-5',
      system: 'Be brief.',
      messages: [{ role: 'user', content: prose.repeat(400) }],
    });
    const copy = Uint8Array.from(body);
    for (const mode of ['flag', 'redact'] as PrivacyMode[]) {
      const result = await pool.run('acct_a', mode, body, never);
      expect(result).toEqual({ ok: true, value: transformBody(mode, body) });
    }
    const tokenised = await pool.run('acct_a', 'tokenise', body, never);
    expect(tokenised.ok).toBe(true);
    if (tokenised.ok) {
      const { nonce, placeholders } = tokenised.value;
      expect(Object.values(placeholders).sort()).toEqual([
        '+44 20 7946 0958',
        '4111 1111 1111 1111',
        'alice.smith@example.com',
      ]);
      expect(textOf(tokenised)).toContain(`[[PII:EMAIL:1:${nonce}]]`);
      expect(textOf(tokenised)).not.toContain('alice.smith@example.com');
    }
    expect(body).toEqual(copy);
  });

  it('fails closed with api_error when the thread cannot read the body', async () => {
    const pool = await startPool({ script: builtThread });
    const result = await pool.run('acct_a', 'redact', new Uint8Array(Buffer.from('{"messages": [')), never);
    expect(result).toEqual({ ok: false, error: expect.objectContaining({ type: 'api_error' }) });
    const personal = { messages: [{ role: 'user', content: 'mail alice.smith@example.com' }] };
    expect(await pool.run('acct_a', 'redact', bytes(personal), never)).toEqual({
      ok: true,
      value: expect.objectContaining({ body: expect.any(Uint8Array) }),
    });
    expect(failures).toEqual([]);
  });

  it('runs another account at once while one account waits behind its own share', async () => {
    const pool = await startPool();
    const finished: string[] = [];
    const run = (account: string, name: string, holdMs: number) =>
      pool.run(account, 'redact', bytes({ holdMs, name }), never).then((result) => {
        finished.push(name);
        return result;
      });
    const heavy = [run('acct_a', 'a1', 200), run('acct_a', 'a2', 200), run('acct_a', 'a3', 200)];
    const refused = await run('acct_a', 'a4', 200);
    expect(refused).toEqual({
      ok: false,
      error: expect.objectContaining({ type: 'overloaded_error', retryAfterMs: 1_000 }),
    });
    expect((await run('acct_b', 'b1', 0)).ok).toBe(true);
    expect(finished).toEqual(['a4', 'b1']);
    expect((await Promise.all(heavy)).map((result) => result.ok)).toEqual([true, true, true]);
    expect(finished).toEqual(['a4', 'b1', 'a1', 'a2', 'a3']);
  });

  it('takes a waiting body out of the queue when its caller gives up, freeing its place', async () => {
    const pool = await startPool({ queuedPerAccount: 1 });
    const running = pool.run('acct_a', 'redact', bytes({ holdMs: 300 }), never);
    const giveUp = new AbortController();
    const waiting = pool.run('acct_a', 'redact', bytes({ holdMs: 0 }), giveUp.signal);
    expect(await pool.run('acct_a', 'redact', bytes({ holdMs: 0 }), never)).toEqual({
      ok: false,
      error: expect.objectContaining({ type: 'overloaded_error' }),
    });
    giveUp.abort();
    expect(await waiting).toEqual({ ok: false, error: expect.objectContaining({ type: 'overloaded_error' }) });
    const next = pool.run('acct_a', 'redact', bytes({ holdMs: 0, name: 'next' }), never);
    expect(textOf(await next)).toBe('{"holdMs":0,"name":"next"}');
    expect((await running).ok).toBe(true);
  });

  it('ends and replaces the thread working for a caller that gave up; the account goes on', async () => {
    const pool = await startPool();
    const giveUp = new AbortController();
    const spinning = pool.run('acct_a', 'redact', bytes({ spin: true }), giveUp.signal);
    const queued = pool.run('acct_a', 'redact', bytes({ holdMs: 0, name: 'queued' }), never);
    giveUp.abort();
    expect(await spinning).toEqual({ ok: false, error: expect.objectContaining({ type: 'overloaded_error' }) });
    expect(textOf(await queued)).toBe('{"holdMs":0,"name":"queued"}');
    const both = await Promise.all([
      pool.run('acct_a', 'redact', bytes({ holdMs: 50 }), never),
      pool.run('acct_b', 'redact', bytes({ holdMs: 50 }), never),
    ]);
    expect(both.map((result) => result.ok)).toEqual([true, true]);
    expect(failures).toEqual([]);
  });

  it('fails only the request of a thread that dies, with api_error, and puts a new thread in its place', async () => {
    const pool = await startPool();
    const other = pool.run('acct_b', 'redact', bytes({ holdMs: 200, name: 'other' }), never);
    const crashed = await pool.run('acct_a', 'redact', bytes({ crash: true }), never);
    expect(crashed).toEqual({ ok: false, error: expect.objectContaining({ type: 'api_error' }) });
    expect(failures).toEqual([{ exitCode: 1, errorName: 'Error', errorCode: undefined }]);
    expect(textOf(await other)).toBe('{"holdMs":200,"name":"other"}');
    // Both threads work again: two accounts at once, each on its own.
    const again = await Promise.all([
      pool.run('acct_a', 'redact', bytes({ holdMs: 0, name: 'a' }), never),
      pool.run('acct_b', 'redact', bytes({ holdMs: 0, name: 'b' }), never),
    ]);
    expect(again.map(textOf)).toEqual(['{"holdMs":0,"name":"a"}', '{"holdMs":0,"name":"b"}']);
    expect(failures).toHaveLength(1);
  });

  it('refuses what it has not answered when it closes, ends its threads, and refuses later calls', async () => {
    const pool = await startPool();
    const spinning = pool.run('acct_a', 'redact', bytes({ spin: true }), never);
    const waiting = pool.run('acct_a', 'redact', bytes({ holdMs: 0 }), never);
    await pool.close();
    const shuttingDown = { ok: false, error: expect.objectContaining({ type: 'overloaded_error' }) };
    expect(await spinning).toEqual(shuttingDown);
    expect(await waiting).toEqual(shuttingDown);
    expect(await pool.run('acct_b', 'redact', bytes({ holdMs: 0 }), never)).toEqual(shuttingDown);
    expect(failures).toEqual([]);
  });

  it('does not start without its thread script', async () => {
    await expect(startPool({ script: join(__dirname, 'no-such-thread.js') })).rejects.toThrow();
  });

  it('answers a caller that had already given up without running anything', async () => {
    const pool = await startPool();
    const gone = AbortSignal.abort();
    expect(await pool.run('acct_a', 'redact', bytes({ spin: true }), gone)).toEqual({
      ok: false,
      error: expect.objectContaining({ type: 'overloaded_error' }),
    });
    expect((await pool.run('acct_a', 'redact', bytes({ holdMs: 0 }), never)).ok).toBe(true);
  });
});
