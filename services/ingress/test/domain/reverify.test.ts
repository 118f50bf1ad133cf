import { err, gatewayError, ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import type { VerifiedKey } from '../../src/domain/key';
import { verifiedKey } from '../support/keys';
import { InFlightRequests } from '../../src/domain/in-flight';
import { reverifyInFlight, reverifyUntilAnswered } from '../../src/domain/reverify';

const keyContext = (keyId: string) => verifiedKey({ keyId, accountId: 'acct_1', plan: 'pro' });
const refusal = (reason: string) =>
  err(gatewayError('authentication_error', 'Invalid or missing API key.', { reason }));

/** Auth as a table from presented key to answer, counting the questions. */
function fakeAuth(answers: Record<string, Result<VerifiedKey>>) {
  const asked: string[] = [];
  return {
    asked,
    verifyWithAuth: async (presentedKey: string): Promise<Result<VerifiedKey>> => {
      asked.push(presentedKey);
      return answers[presentedKey] ?? refusal('unknown');
    },
  };
}

function register(inFlight: InFlightRequests, keyId: string, presentedKey: string, requestId: string) {
  return inFlight.register(keyId, { presentedKey, sourceAddress: '203.0.113.7', requestId });
}

describe('reverifyInFlight', () => {
  it("ends the requests of a key auth now refuses as revoked, and leaves the others' running", async () => {
    const inFlight = new InFlightRequests();
    const revoked = register(inFlight, 'key_revoked', 'sk-revoked', 'req_1');
    const revokedToo = register(inFlight, 'key_revoked', 'sk-revoked', 'req_2');
    const active = register(inFlight, 'key_active', 'sk-active', 'req_3');
    const auth = fakeAuth({ 'sk-revoked': refusal('revoked'), 'sk-active': ok(keyContext('key_active')) });

    const outcome = await reverifyInFlight({ inFlight, verifyWithAuth: auth.verifyWithAuth, concurrency: 4 });

    expect(outcome).toEqual({ checked: 2, stopped: 1, unanswered: 0 });
    // One question per key and address, however many requests it has.
    expect(auth.asked.sort()).toEqual(['sk-active', 'sk-revoked']);
    for (const request of [revoked, revokedToo]) {
      expect(request.signal.aborted).toBe(true);
      expect(request.signal.reason).toMatchObject({
        type: 'authentication_error',
        message: expect.stringMatching(/revoked/),
      });
    }
    expect(active.signal.aborted).toBe(false);
    // Remembered as a revocation: a request of the key that passed auth just before is stopped too.
    expect(register(inFlight, 'key_revoked', 'sk-revoked', 'req_4').signal.aborted).toBe(true);
  });

  it('ends the requests of an expired key as expired and of a suspended account with its permission error', async () => {
    const inFlight = new InFlightRequests();
    const expired = register(inFlight, 'key_expired', 'sk-expired', 'req_1');
    const suspended = register(inFlight, 'key_suspended', 'sk-suspended', 'req_2');
    const suspension = gatewayError('permission_error', 'The account is suspended.', { reason: 'suspended' });
    const auth = fakeAuth({ 'sk-expired': refusal('expired'), 'sk-suspended': err(suspension) });

    const outcome = await reverifyInFlight({ inFlight, verifyWithAuth: auth.verifyWithAuth, concurrency: 1 });

    expect(outcome).toEqual({ checked: 2, stopped: 2, unanswered: 0 });
    expect(expired.signal.reason).toMatchObject({
      type: 'authentication_error',
      message: expect.stringMatching(/expired/),
    });
    expect(suspended.signal.reason).toBe(suspension);
  });

  it('keeps serving a key auth could not answer for, and reports it unanswered', async () => {
    const inFlight = new InFlightRequests();
    const request = register(inFlight, 'key_a', 'sk-a', 'req_1');
    const auth = fakeAuth({ 'sk-a': err(gatewayError('overloaded_error', 'key store out', { retryAfterMs: 1000 })) });

    const outcome = await reverifyInFlight({ inFlight, verifyWithAuth: auth.verifyWithAuth, concurrency: 2 });

    expect(outcome).toEqual({ checked: 1, stopped: 0, unanswered: 1 });
    expect(request.signal.aborted).toBe(false);
  });

  it('asks nothing when no request is in flight', async () => {
    const auth = fakeAuth({});
    const outcome = await reverifyInFlight({
      inFlight: new InFlightRequests(),
      verifyWithAuth: auth.verifyWithAuth,
      concurrency: 4,
    });
    expect(outcome).toEqual({ checked: 0, stopped: 0, unanswered: 0 });
    expect(auth.asked).toEqual([]);
  });
});

describe('reverifyUntilAnswered', () => {
  it('asks again while auth cannot answer, and ends the key once it can', async () => {
    const inFlight = new InFlightRequests();
    const request = register(inFlight, 'key_a', 'sk-a', 'req_1');
    const answers: Result<VerifiedKey>[] = [
      err(gatewayError('overloaded_error', 'key store out')),
      err(gatewayError('overloaded_error', 'key store out')),
      refusal('revoked'),
    ];
    let asked = 0;
    const passes = await reverifyUntilAnswered(
      { inFlight, verifyWithAuth: async () => answers[asked++]!, concurrency: 1 },
      { attempts: 5, retryDelayMs: 0, signal: new AbortController().signal },
    );
    expect(passes.map((pass) => pass.unanswered)).toEqual([1, 1, 0]);
    expect(request.signal.reason).toMatchObject({ type: 'authentication_error' });
  });

  it('stops after its attempts, and at once when aborted', async () => {
    const inFlight = new InFlightRequests();
    register(inFlight, 'key_a', 'sk-a', 'req_1');
    const outage = async () => err(gatewayError('overloaded_error', 'key store out'));
    const limited = await reverifyUntilAnswered(
      { inFlight, verifyWithAuth: outage, concurrency: 1 },
      { attempts: 3, retryDelayMs: 0, signal: new AbortController().signal },
    );
    expect(limited).toHaveLength(3);
    const stopped = new AbortController();
    stopped.abort();
    const aborted = await reverifyUntilAnswered(
      { inFlight, verifyWithAuth: outage, concurrency: 1 },
      { attempts: 3, retryDelayMs: 0, signal: stopped.signal },
    );
    expect(aborted).toHaveLength(0);
  });
});
