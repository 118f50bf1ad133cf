import { ok } from '@gw/errors';
import { commonv1 } from '@gw/proto';
import { admit, billingUnavailableError } from '../../src/pipeline/admit';
import { reserve } from '../../src/pipeline/reserve';
import { verifiedKey } from '../support/keys';
import { callerRequest, fakes, messagesBody } from './fakes';

const countBody = { model: 'claude-test', messages: [{ role: 'user', content: 'hello' }] };

describe('admit (stage 3) on its own', () => {
  it('refuses a live completion while usage cannot be kept, but not a token count, which is never billed', async () => {
    const world = fakes();
    const admitDeps = { ...world.deps.admit, billingUnavailable: () => true };
    const key = verifiedKey({ keyId: 'k', accountId: 'a', plan: 'pro', environment: commonv1.Environment.LIVE });
    const completion = await admit(admitDeps, callerRequest(messagesBody(false)), key, undefined);
    expect(completion).toEqual({ ok: false, error: billingUnavailableError() });
    const count = await admit(admitDeps, callerRequest(countBody), key, undefined, 'count_tokens');
    expect(count.ok).toBe(true);
    expect(world.quotaCalls).toEqual(['acquire new']);
  });

  it('charges the reserved lease, and keeps the reservation time to live', async () => {
    const world = fakes();
    const key = verifiedKey({ keyId: 'k', accountId: 'a', plan: 'pro' });
    const reserved = await reserve(world.deps.reserve.quota, key, { requestId: 'req_1' });
    expect(reserved.ok).toBe(true);
    if (!reserved.ok) return;
    const admitted = await admit(world.deps.admit, callerRequest(messagesBody(true)), key, reserved.value);
    expect(admitted.ok && admitted.value.lease).toEqual(reserved.value.lease);
    expect(admitted.ok && admitted.value.leaseTtlMs).toBe(30_000);
    expect(world.quotaCalls).toEqual(['reserve', 'acquire lease_1']);
  });

  it('carries the privacy flags only for a key in mode flag', async () => {
    const decided = ok({ privacyFlags: { EMAIL: 2n } });
    const flagged = verifiedKey({ keyId: 'k', accountId: 'a', privacyMode: commonv1.PrivacyMode.FLAG });
    const off = verifiedKey({ keyId: 'k', accountId: 'a', privacyMode: commonv1.PrivacyMode.OFF });
    const flag = await admit(
      fakes({ authorize: decided }).deps.admit,
      callerRequest(messagesBody(true)),
      flagged,
      undefined,
    );
    expect(flag.ok && flag.value.privacyFlags).toEqual({ EMAIL: 2 });
    const none = await admit(
      fakes({ authorize: decided }).deps.admit,
      callerRequest(messagesBody(true)),
      off,
      undefined,
    );
    expect(none.ok && none.value.privacyFlags).toBeUndefined();
  });
});
