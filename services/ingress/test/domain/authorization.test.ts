import { create } from '@bufbuild/protobuf';
import { ok } from '@gw/errors';
import { commonv1, policyv1 } from '@gw/proto';
import { authorizeLocallyOrWithPolicy, policyDeadline } from '../../src/domain/authorization';

const key = create(commonv1.KeyContextSchema, { keyId: 'key_1', privacyMode: commonv1.PrivacyMode.OFF });
const local = create(policyv1.AuthorizeResponseSchema, { pools: [{ poolId: 'local' }] });
const remote = create(policyv1.AuthorizeResponseSchema, { pools: [{ poolId: 'policy' }] });
const deadline = policyDeadline(2_000, 250);

describe('authorizeLocallyOrWithPolicy', () => {
  it('decides from the pushed catalogue without calling policy or sending the body', async () => {
    const policy = { authorize: jest.fn(async () => ok(remote)) };
    const authorize = authorizeLocallyOrWithPolicy({ authorizeWithoutBody: () => ok(local) }, policy, deadline);
    const decided = await authorize(key, 'm', Buffer.from('{}'), { requestId: 'req_1' });
    expect(decided.ok && decided.value.pools[0]!.poolId).toBe('local');
    expect(policy.authorize).not.toHaveBeenCalled();
  });

  it('asks policy, with the body and the request id, when the catalogue cannot decide', async () => {
    const policy = { authorize: jest.fn(async () => ok(remote)) };
    const authorize = authorizeLocallyOrWithPolicy({ authorizeWithoutBody: () => undefined }, policy, deadline);
    const decided = await authorize(key, 'm', Buffer.from('{"a":1}'), { requestId: 'req_2' });
    expect(decided.ok && decided.value.pools[0]!.poolId).toBe('policy');
    expect(policy.authorize).toHaveBeenCalledWith(
      { key, model: 'm', bodyJson: Buffer.from('{"a":1}') },
      { requestId: 'req_2', timeoutMs: 2_001 },
    );
  });

  it('gives policy more time the larger the body it must read, so that a large body in a privacy mode can be decided', async () => {
    const policy = { authorize: jest.fn(async () => ok(remote)) };
    const authorize = authorizeLocallyOrWithPolicy({ authorizeWithoutBody: () => undefined }, policy, deadline);
    await authorize(key, 'm', Buffer.alloc(32 * 1024 * 1024), { requestId: 'req_3' });
    expect(policy.authorize).toHaveBeenCalledWith(expect.anything(), { requestId: 'req_3', timeoutMs: 10_000 });
  });
});

describe('policyDeadline', () => {
  it("is the control calls' deadline, and the given time for each MiB of body on top", () => {
    expect(deadline(0)).toBe(2_000);
    expect(deadline(1024 * 1024)).toBe(2_250);
    expect(deadline(4_000_000)).toBe(2_954);
  });
});
