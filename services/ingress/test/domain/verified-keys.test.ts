import { err, gatewayError, ok } from '@gw/errors';
import type { commonv1 } from '@gw/proto';
import type { MessageInitShape } from '@gw/proto';
import type { Result } from '@gw/errors';
import { VerifiedKeys } from '../../src/domain/verified-keys';
import type { VerifiedKey } from '../../src/domain/key';
import { verifiedKey } from '../support/keys';

const key = (overrides: MessageInitShape<typeof commonv1.KeyContextSchema> = {}) =>
  verifiedKey({ keyId: 'key_1', accountId: 'acct_1', ...overrides });

function setup(answer: () => Promise<Result<VerifiedKey>> = () => Promise.resolve(ok(key()))) {
  let now = 1_000_000;
  const calls: string[] = [];
  const keys = new VerifiedKeys(
    (presented, address) => {
      calls.push(`${presented}@${address}`);
      return answer();
    },
    { ttlMs: 30_000, maxEntries: 3, now: () => now },
  );
  keys.setEnabled(true);
  return { keys, calls, advance: (ms: number) => (now += ms), now: () => now };
}

describe('VerifiedKeys', () => {
  it('asks auth once per key and address within the time to live', async () => {
    const { keys, calls, advance } = setup();
    await keys.verify('gw_live_a', '10.0.0.1', { requestId: 'req_1' });
    await keys.verify('gw_live_a', '10.0.0.1', { requestId: 'req_2' });
    await keys.verify('gw_live_a', '10.0.0.2', { requestId: 'req_3' });
    expect(calls).toEqual(['gw_live_a@10.0.0.1', 'gw_live_a@10.0.0.2']);
    advance(30_000);
    await keys.verify('gw_live_a', '10.0.0.1', { requestId: 'req_4' });
    expect(calls).toHaveLength(3);
  });

  it('never caches a refusal', async () => {
    const { keys, calls } = setup(() => Promise.resolve(err(gatewayError('authentication_error', 'no'))));
    await keys.verify('gw_live_a', '10.0.0.1', { requestId: 'r' });
    await keys.verify('gw_live_a', '10.0.0.1', { requestId: 'r' });
    expect(calls).toHaveLength(2);
  });

  it('drops a revoked key and an account that changed at once', async () => {
    const { keys, calls } = setup();
    await keys.verify('gw_live_a', 'ip', { requestId: 'r' });
    keys.dropKey('key_1');
    await keys.verify('gw_live_a', 'ip', { requestId: 'r' });
    keys.dropAccount('acct_1');
    await keys.verify('gw_live_a', 'ip', { requestId: 'r' });
    expect(calls).toHaveLength(3);
    keys.dropKey('key_other');
    await keys.verify('gw_live_a', 'ip', { requestId: 'r' });
    expect(calls).toHaveLength(3);
  });

  it('does not cache an answer that raced a revocation notice', async () => {
    let release: () => void = () => undefined;
    const { keys, calls } = setup(() => new Promise((resolve) => (release = () => resolve(ok(key())))));
    const first = keys.verify('gw_live_a', 'ip', { requestId: 'r' });
    keys.dropKey('key_1');
    release();
    await first;
    const second = keys.verify('gw_live_a', 'ip', { requestId: 'r' });
    release();
    await second;
    expect(calls).toHaveLength(2);
  });

  it('caches nothing while the revocation channel is down', async () => {
    const { keys, calls } = setup();
    keys.setEnabled(false);
    await keys.verify('gw_live_a', 'ip', { requestId: 'r' });
    await keys.verify('gw_live_a', 'ip', { requestId: 'r' });
    expect(calls).toHaveLength(2);
  });

  it('never believes an entry past the key expiry', async () => {
    const expiring = setup(() => Promise.resolve(ok(key({ expiresAtUnixMs: BigInt(1_000_000 + 1_000) }))));
    await expiring.keys.verify('gw_live_a', 'ip', { requestId: 'r' });
    await expiring.keys.verify('gw_live_a', 'ip', { requestId: 'r' });
    expect(expiring.calls).toHaveLength(1);
    expiring.advance(1_000);
    await expiring.keys.verify('gw_live_a', 'ip', { requestId: 'r' });
    expect(expiring.calls).toHaveLength(2);
  });

  it('keeps at most maxEntries, forgetting the oldest', async () => {
    const { keys } = setup();
    for (const presented of ['a', 'b', 'c', 'd']) await keys.verify(presented, 'ip', { requestId: 'r' });
    expect(keys.size()).toBe(3);
  });

  it('holds no key in clear', async () => {
    const { keys } = setup();
    await keys.verify('gw_live_secret', 'ip', { requestId: 'r' });
    expect(JSON.stringify([...(keys as unknown as { entries: Map<string, unknown> }).entries.keys()])).not.toContain(
      'gw_live_secret',
    );
  });
});
