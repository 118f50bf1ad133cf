import { err, gatewayError, ok } from '@gw/errors';
import { commonv1 } from '@gw/proto';
import type { KeyVerifier, RequestScope } from '../../src/pipeline/types';
import { RefusalCounts } from '../../src/telemetry/refusal-counts';
import { verifiedKey } from '../support/keys';

const key = (keyId: string) => verifiedKey({ keyId, accountId: 'acct_1', environment: commonv1.Environment.LIVE });

function setup(maxLines = 100) {
  const sent: unknown[][] = [];
  let answer: 'ok' | 'down' = 'ok';
  const dropped: number[] = [];
  const counts = new RefusalCounts({
    send: async (lines) => {
      if (answer === 'down') return err(gatewayError('overloaded_error', 'metering down'));
      sent.push(lines.map((line) => ({ ...line })));
      return ok({});
    },
    maxLines,
    onFlushFailure: () => undefined,
    onDropped: (count) => dropped.push(count),
    now: () => new Date('2026-11-28T23:59:00Z'),
  });
  const verifier: KeyVerifier = {
    verify: async (presented) =>
      presented === 'bad' ? err(gatewayError('authentication_error', 'no')) : ok(key(presented)),
  };
  const watched = counts.watch(verifier);
  const request = async (presented: string): Promise<RequestScope> => {
    const scope = { requestId: `req_${presented}` };
    await watched.verify(presented, '127.0.0.1', scope);
    return scope;
  };
  return { counts, sent, dropped, request, setDown: (down: boolean) => (answer = down ? 'down' : 'ok') };
}

describe('RefusalCounts', () => {
  it('counts refusals per key, day and reason in memory, and sends them in one flush', async () => {
    const { counts, sent, request } = setup();
    const a = await request('key_a');
    const b = await request('key_b');
    const limited = gatewayError('rate_limit_error', 'slow down', { reason: 'per_minute' });
    for (let i = 0; i < 1000; i += 1) counts.refused(a, limited);
    counts.refused(a, gatewayError('invalid_request_error', 'bad'));
    counts.refused(b, limited);
    expect(sent).toEqual([]);
    await counts.flush();
    expect(sent).toHaveLength(1);
    const day = '2026-11-28';
    expect(sent[0]).toEqual([
      {
        accountId: 'acct_1',
        keyId: 'key_a',
        environment: commonv1.Environment.LIVE,
        day,
        reason: 'rate_limit_error.per_minute',
        refusals: 1000n,
      },
      {
        accountId: 'acct_1',
        keyId: 'key_a',
        environment: commonv1.Environment.LIVE,
        day,
        reason: 'invalid_request_error',
        refusals: 1n,
      },
      {
        accountId: 'acct_1',
        keyId: 'key_b',
        environment: commonv1.Environment.LIVE,
        day,
        reason: 'rate_limit_error.per_minute',
        refusals: 1n,
      },
    ]);
    await counts.flush();
    expect(sent).toHaveLength(1);
  });

  it('counts nothing for a request whose key did not verify (401) or that has no scope', async () => {
    const { counts, sent, request } = setup();
    counts.refused(await request('bad'), gatewayError('authentication_error', 'no'));
    counts.refused(undefined, gatewayError('invalid_request_error', 'bad'));
    counts.refused({ requestId: 'req_never_verified' }, gatewayError('invalid_request_error', 'bad'));
    await counts.flush();
    expect(sent).toEqual([]);
  });

  it('keeps the counts of a failed flush for the next one', async () => {
    const { counts, sent, request, setDown } = setup();
    const a = await request('key_a');
    counts.refused(a, gatewayError('permission_error', 'no'));
    setDown(true);
    await counts.flush();
    counts.refused(a, gatewayError('permission_error', 'no'));
    setDown(false);
    await counts.flush();
    expect(sent).toEqual([[expect.objectContaining({ keyId: 'key_a', reason: 'permission_error', refusals: 2n })]]);
  });

  it('bounds the lines between flushes, counting what it drops', async () => {
    const { counts, sent, dropped, request } = setup(2);
    for (const id of ['key_a', 'key_b', 'key_c', 'key_d'])
      counts.refused(await request(id), gatewayError('permission_error', 'no'));
    counts.refused(await request('key_a'), gatewayError('permission_error', 'no'));
    await counts.flush();
    expect(sent[0]).toHaveLength(2);
    expect(dropped).toEqual([1, 1]);
  });
});
