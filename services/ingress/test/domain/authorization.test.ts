import { ok } from '@gw/errors';
import { commonv1 } from '@gw/proto';
import type { Authorization } from '../../src/domain/authorization';
import { verifiedKey } from '../support/keys';
import { authorizeLocallyOrWithPolicy, policyDeadline } from '../../src/domain/authorization';

const key = verifiedKey({ keyId: 'key_1', privacyMode: commonv1.PrivacyMode.OFF });
const decision = (poolId: string): Authorization => ({
  pools: [{ poolId } as Authorization['pools'][number]],
  body: undefined,
  privacyFlags: {},
  placeholders: [],
  placeholderNonce: '',
});
const local = decision('local');
const remote = decision('policy');
const deadline = policyDeadline(2_000, 250);

describe('authorizeLocallyOrWithPolicy', () => {
  it('decides from the pushed catalogue without calling policy or sending the body', async () => {
    const policy = jest.fn(async () => ok(remote));
    const authorize = authorizeLocallyOrWithPolicy(() => ok(local), policy, deadline);
    const decided = await authorize(key, 'm', Buffer.from('{}'), { requestId: 'req_1' });
    expect(decided.ok && decided.value.pools[0]!.poolId).toBe('local');
    expect(policy).not.toHaveBeenCalled();
  });

  it('asks policy, with the body and the request id, when the catalogue cannot decide', async () => {
    const policy = jest.fn(async () => ok(remote));
    const authorize = authorizeLocallyOrWithPolicy(() => undefined, policy, deadline);
    const decided = await authorize(key, 'm', Buffer.from('{"a":1}'), { requestId: 'req_2' });
    expect(decided.ok && decided.value.pools[0]!.poolId).toBe('policy');
    expect(policy).toHaveBeenCalledWith(key, 'm', Buffer.from('{"a":1}'), { requestId: 'req_2' }, 2_001);
  });

  it('gives policy more time the larger the body it must read, so that a large body in a privacy mode can be decided', async () => {
    const policy = jest.fn(async () => ok(remote));
    const authorize = authorizeLocallyOrWithPolicy(() => undefined, policy, deadline);
    await authorize(key, 'm', Buffer.alloc(32 * 1024 * 1024), { requestId: 'req_3' });
    expect(policy).toHaveBeenCalledWith(key, 'm', expect.anything(), { requestId: 'req_3' }, 10_000);
  });
});

describe('policyDeadline', () => {
  it("is the control calls' deadline, and the given time for each MiB of body on top", () => {
    expect(deadline(0)).toBe(2_000);
    expect(deadline(1024 * 1024)).toBe(2_250);
    expect(deadline(4_000_000)).toBe(2_954);
  });
});
