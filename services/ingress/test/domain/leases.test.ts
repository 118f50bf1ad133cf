import { err, gatewayError, ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import { commonv1 } from '@gw/proto';
import { LeaseKeeper } from '../../src/domain/leases';
import type { LeaseEvents, LeaseRef } from '../../src/domain/leases';

const ref: LeaseRef = { accountId: 'acct_1', environment: commonv1.Environment.LIVE, leaseId: 'lease_1' };
const down = () => err(gatewayError('overloaded_error', 'quota unreachable'));

function setup(release: () => Promise<Result<unknown>>, renew = () => Promise.resolve(ok({ held: true }))) {
  let now = 0;
  const events: string[] = [];
  const reported: LeaseEvents = {
    leaseLost: () => events.push('lost'),
    releaseRetrying: (_ref, attempt) => events.push(`retry ${attempt}`),
    releaseAbandoned: (_ref, tokens) => events.push(`abandoned ${tokens}`),
  };
  const releases: bigint[] = [];
  const renewals: string[] = [];
  const keeper = new LeaseKeeper(
    {
      renew: (lease) => {
        renewals.push(lease.leaseId);
        return renew();
      },
      release: (request) => {
        releases.push(request.billableTokens);
        return release();
      },
    },
    reported,
    { firstRetryPauseMs: 100, maxRetryPauseMs: 400, retryForMs: 1_000, sweepEveryMs: 60_000, now: () => now },
  );
  return { keeper, events, releases, renewals, advance: (ms: number) => (now += ms) };
}

describe('LeaseKeeper', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('renews a lease once a third of its time to live has passed, and reports a lost lease once', async () => {
    const { keeper, events, renewals, advance } = setup(
      () => Promise.resolve(ok({})),
      () => Promise.resolve(ok({ held: false })),
    );
    keeper.hold(ref, 30_000);
    keeper.renewDue();
    expect(renewals).toEqual([]);
    advance(10_000);
    keeper.renewDue();
    await Promise.resolve();
    advance(10_000);
    keeper.renewDue();
    await Promise.resolve();
    expect(renewals).toEqual(['lease_1']);
    expect(events).toEqual(['lost']);
    keeper.close();
  });

  it('releases once, with the tokens, and stops renewing', async () => {
    const { keeper, releases, renewals, advance } = setup(() => Promise.resolve(ok({})));
    const held = keeper.hold(ref, 30_000);
    held.release(42n);
    held.release(42n);
    advance(20_000);
    keeper.renewDue();
    expect(releases).toEqual([42n]);
    expect(renewals).toEqual([]);
    expect(keeper.count()).toBe(0);
    keeper.close();
  });

  it('retries a failed release until quota takes it', async () => {
    let attempts = 0;
    const { keeper, events, releases, advance } = setup(() => Promise.resolve(++attempts < 3 ? down() : ok({})));
    keeper.hold(ref, 30_000).release(7n);
    for (let step = 0; step < 3; step += 1) {
      await jest.advanceTimersByTimeAsync(0);
      advance(200);
      await jest.advanceTimersByTimeAsync(200);
    }
    expect(releases).toEqual([7n, 7n, 7n]);
    expect(events).toEqual(['retry 1', 'retry 2']);
    expect(keeper.pendingReleases()).toBe(0);
    keeper.close();
  });

  it('reports a release given up after its retry bound, with its tokens', async () => {
    const { keeper, events, advance } = setup(() => Promise.resolve(down()));
    keeper.hold(ref, 30_000).release(9n);
    for (let step = 0; step < 10; step += 1) {
      await jest.advanceTimersByTimeAsync(0);
      advance(400);
      await jest.advanceTimersByTimeAsync(400);
    }
    expect(events.at(-1)).toBe('abandoned 9');
    expect(keeper.pendingReleases()).toBe(0);
    keeper.close();
  });

  it('reports a release still waiting for its retry at shutdown as given up, with its tokens', async () => {
    const { keeper, events } = setup(() => Promise.resolve(down()));
    keeper.hold(ref, 30_000).release(11n);
    await jest.advanceTimersByTimeAsync(0);
    expect(keeper.pendingReleases()).toBe(1);
    keeper.close();
    expect(events).toEqual(['retry 1', 'abandoned 11']);
    expect(keeper.pendingReleases()).toBe(0);
  });
});
