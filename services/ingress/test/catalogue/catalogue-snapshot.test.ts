import { Catalogue, snapshotMessage } from '@gw/catalogue';
import { parseGatewayConfig } from '@gw/config';
import { err, gatewayError, ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import { commonv1, create, policyv1 } from '@gw/proto';
import { verifiedKey } from '../support/keys';
import { createLogger } from '@gw/telemetry';
import { waitUntil } from '@gw/testing';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CatalogueFollower, retryDelayMs } from '../../src/catalogue/catalogue-snapshot';
import type { CatalogueFollowerOptions } from '../../src/catalogue/catalogue-snapshot';

// The module object itself (not a namespace copy), so that a spy on it sees the follower's calls.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const timersPromises = require('node:timers/promises') as typeof import('node:timers/promises');

const config = parseGatewayConfig(readFileSync(join(__dirname, '../../../../deploy/local/gateway.yaml'), 'utf8'), {});
const catalogue = Catalogue.fromConfig(config);
const starterOnly = Catalogue.fromConfig({ ...config, plans: config.plans.filter((plan) => plan.id === 'starter') });

const snapshotOf = (source: Catalogue): Result<policyv1.WatchCatalogueResponse> =>
  ok(create(policyv1.WatchCatalogueResponseSchema, { snapshot: snapshotMessage(source) }));

const key = (privacyMode: commonv1.PrivacyMode, residency = commonv1.Residency.EU) =>
  verifiedKey({ keyId: 'key_1', accountId: 'acct_1', plan: 'pro', residency, privacyMode });

/** One subscription the test drives: it sends items, ends it, and sees whether the follower cancelled it. */
class FakeSubscription {
  private readonly queue: (Result<policyv1.WatchCatalogueResponse> | 'end')[] = [];
  private wake: (() => void) | undefined;
  /** True once the follower stopped reading it (as the gRPC client then cancels the call). */
  finished = false;

  constructor(readonly signal: AbortSignal) {
    signal.addEventListener('abort', () => this.wake?.());
  }

  send(item: Result<policyv1.WatchCatalogueResponse>): void {
    this.queue.push(item);
    this.wake?.();
  }

  end(): void {
    this.queue.push('end');
    this.wake?.();
  }

  async *items(): AsyncGenerator<Result<policyv1.WatchCatalogueResponse>> {
    try {
      for (;;) {
        if (this.signal.aborted) return;
        const next = this.queue.shift();
        if (next === 'end') return;
        if (next !== undefined) yield next;
        else await new Promise<void>((resolve) => (this.wake = resolve));
      }
    } finally {
      this.finished = true;
    }
  }
}

/** A policy whose every WatchCatalogue call is a FakeSubscription. */
function fakePolicy() {
  const subscriptions: FakeSubscription[] = [];
  return {
    subscriptions,
    latest: () => subscriptions.at(-1)!,
    watch: (signal: AbortSignal) => {
      const subscription = new FakeSubscription(signal);
      subscriptions.push(subscription);
      return subscription.items();
    },
  };
}

const followers: CatalogueFollower[] = [];
function follow(policy: ReturnType<typeof fakePolicy>, options: Partial<CatalogueFollowerOptions> = {}) {
  const follower = new CatalogueFollower({
    watch: policy.watch,
    logger: createLogger('ingress-test', 'silent'),
    firstRetryMs: 1,
    maxRetryMs: 8,
    ...options,
  });
  followers.push(follower);
  return follower;
}

afterEach(async () => {
  await Promise.all(followers.splice(0).map((follower) => follower.close()));
});

describe('CatalogueFollower', () => {
  it('has no catalogue until policy sends one, then decides for privacy mode off only', async () => {
    const policy = fakePolicy();
    const follower = follow(policy);
    await waitUntil(() => policy.subscriptions.length === 1, { what: 'the subscription' });
    expect(follower.current()).toBeUndefined();
    expect(follower.authorizeWithoutBody(key(commonv1.PrivacyMode.OFF), 'claude-sonnet-5')).toBeUndefined();

    policy.latest().send(snapshotOf(catalogue));
    await waitUntil(() => follower.current(), { what: 'the first catalogue' });
    expect(follower.current()!.version).toBe(catalogue.version);
    const decided = follower.authorizeWithoutBody(
      key(commonv1.PrivacyMode.OFF, commonv1.Residency.UK),
      'claude-sonnet-5',
    );
    // Exactly what policy.Authorize answers for mode off: the pools, and the body left as it is.
    expect(decided).toEqual(
      ok({
        pools: [
          create(policyv1.CandidatePoolSchema, {
            poolId: 'bedrock-uk-london',
            jurisdiction: commonv1.Residency.UK,
            region: 'uk-south',
            upstreamModel: 'anthropic.claude-sonnet-5-20250929-v1:0',
          }),
          create(policyv1.CandidatePoolSchema, {
            poolId: 'anthropic-uk-south',
            jurisdiction: commonv1.Residency.UK,
            region: 'uk-south',
            upstreamModel: 'claude-sonnet-5',
          }),
        ],
        body: undefined,
        privacyFlags: {},
        placeholders: [],
        placeholderNonce: '',
      }),
    );
    expect(follower.authorizeWithoutBody(key(commonv1.PrivacyMode.OFF), 'claude-opus-5')).toEqual({
      ok: false,
      error: expect.objectContaining({ type: 'residency_unavailable' }),
    });
    for (const mode of [commonv1.PrivacyMode.FLAG, commonv1.PrivacyMode.REDACT, commonv1.PrivacyMode.TOKENISE]) {
      expect(follower.authorizeWithoutBody(key(mode), 'claude-sonnet-5')).toBeUndefined();
    }
  });

  it('takes each new snapshot, and keeps the catalogue it has when the same version comes again', async () => {
    const policy = fakePolicy();
    const follower = follow(policy);
    await waitUntil(() => policy.subscriptions.length === 1, { what: 'the subscription' });
    policy.latest().send(snapshotOf(catalogue));
    const first = await waitUntil(() => follower.current(), { what: 'the first catalogue' });
    policy.latest().send(snapshotOf(catalogue));
    policy.latest().send(snapshotOf(starterOnly));
    await waitUntil(
      () => follower.current()?.version,
      { what: 'the new catalogue' },
      (version) => version === starterOnly.version,
    );
    policy.latest().send(snapshotOf(starterOnly));
    policy.latest().send(snapshotOf(catalogue));
    const third = await waitUntil(
      () => follower.current(),
      { what: 'the catalogue again' },
      (current) => current?.version === catalogue.version,
    );
    expect(third).not.toBe(first);
    expect(policy.subscriptions).toHaveLength(1);
  });

  it('resubscribes when the stream fails or ends, keeping the last catalogue meanwhile', async () => {
    const policy = fakePolicy();
    const follower = follow(policy);
    await waitUntil(() => policy.subscriptions.length === 1, { what: 'the subscription' });
    policy.latest().send(snapshotOf(catalogue));
    await waitUntil(() => follower.current(), { what: 'the first catalogue' });

    policy.latest().send(err(gatewayError('overloaded_error', 'policy is away')));
    await waitUntil(() => policy.subscriptions.length === 2, { what: 'a resubscription after a failure' });
    expect(follower.current()!.version).toBe(catalogue.version);

    policy.latest().end();
    await waitUntil(() => policy.subscriptions.length === 3, { what: 'a resubscription after the end' });
    policy.latest().send(snapshotOf(starterOnly));
    await waitUntil(
      () => follower.current()?.version,
      { what: 'the catalogue of the new stream' },
      (version) => version === starterOnly.version,
    );
  });

  it('refuses an unusable snapshot whole, keeps the previous catalogue and resubscribes', async () => {
    const policy = fakePolicy();
    const follower = follow(policy);
    await waitUntil(() => policy.subscriptions.length === 1, { what: 'the subscription' });
    policy.latest().send(snapshotOf(catalogue));
    await waitUntil(() => follower.current(), { what: 'the first catalogue' });
    const tampered = create(policyv1.WatchCatalogueResponseSchema, {
      snapshot: { ...snapshotMessage(starterOnly), version: 'not-its-hash' },
    });
    policy.latest().send(ok(tampered));
    await waitUntil(() => policy.subscriptions.length === 2, { what: 'a resubscription after the refusal' });
    expect(policy.subscriptions[0]!.finished).toBe(true);
    expect(follower.current()!.version).toBe(catalogue.version);
  });

  it('close cancels the subscription and a pending wait, and nothing resubscribes after it', async () => {
    const policy = fakePolicy();
    const follower = follow(policy, { firstRetryMs: 600_000, maxRetryMs: 600_000 });
    await waitUntil(() => policy.subscriptions.length === 1, { what: 'the subscription' });
    const sleeps = jest.spyOn(timersPromises, 'setTimeout');
    policy.latest().end();
    await waitUntil(() => sleeps.mock.calls.length > 0, { what: 'the wait before resubscribing' });
    // Waiting minutes to resubscribe, on a timer that does not keep the process alive and that close ends.
    expect(sleeps).toHaveBeenCalledTimes(1);
    const [delayMs, , waitOptions] = sleeps.mock.calls[0]!;
    expect(delayMs).toBeGreaterThanOrEqual(300_000);
    expect(waitOptions).toEqual({ signal: expect.any(AbortSignal), ref: false });
    sleeps.mockRestore();
    await follower.close();
    expect(waitOptions!.signal!.aborted).toBe(true);
    expect(policy.subscriptions).toHaveLength(1);

    const other = fakePolicy();
    const open = follow(other);
    await waitUntil(() => other.subscriptions.length === 1, { what: 'the other subscription' });
    await open.close();
    expect(other.latest().signal.aborted).toBe(true);
    expect(other.latest().finished).toBe(true);
    expect(other.subscriptions).toHaveLength(1);
  });
});

describe('retryDelayMs', () => {
  it('doubles from the first wait up to the cap, each a random point between half of it and all of it', () => {
    const steps = [0, 1, 2, 3, 4, 5, 6, 7, 10].map((attempts) => retryDelayMs(attempts, 100, 5_000, () => 0.999999));
    expect(steps).toEqual([100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000]);
    expect(retryDelayMs(0, 100, 5_000, () => 0)).toBe(50);
    expect(retryDelayMs(10, 100, 5_000, () => 0)).toBe(2_500);
  });
});
