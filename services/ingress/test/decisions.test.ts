import { create } from '@bufbuild/protobuf';
import { ok } from '@gw/errors';
import { commonv1, policyv1 } from '@gw/proto';
import { authorizeLocallyOrWithPolicy } from '../src/decisions';

const key = create(commonv1.KeyContextSchema, { keyId: 'key_1', privacyMode: commonv1.PrivacyMode.OFF });
const local = create(policyv1.AuthorizeResponseSchema, { pools: [{ poolId: 'local' }] });
const remote = create(policyv1.AuthorizeResponseSchema, { pools: [{ poolId: 'policy' }] });

describe('authorizeLocallyOrWithPolicy', () => {
  it('decides from the pushed catalogue without calling policy or sending the body', async () => {
    const policy = { authorize: jest.fn(async () => ok(remote)) };
    const authorize = authorizeLocallyOrWithPolicy({ authorizeWithoutBody: () => ok(local) }, policy);
    const decided = await authorize(key, 'm', Buffer.from('{}'), { requestId: 'req_1' });
    expect(decided.ok && decided.value.pools[0]!.poolId).toBe('local');
    expect(policy.authorize).not.toHaveBeenCalled();
  });

  it('asks policy, with the body and the request id, when the catalogue cannot decide', async () => {
    const policy = { authorize: jest.fn(async () => ok(remote)) };
    const authorize = authorizeLocallyOrWithPolicy({ authorizeWithoutBody: () => undefined }, policy);
    const decided = await authorize(key, 'm', Buffer.from('{"a":1}'), { requestId: 'req_2' });
    expect(decided.ok && decided.value.pools[0]!.poolId).toBe('policy');
    expect(policy.authorize).toHaveBeenCalledWith(
      { key, model: 'm', bodyJson: Buffer.from('{"a":1}') },
      { requestId: 'req_2' },
    );
  });
});
