import { create } from '@bufbuild/protobuf';
import { err, malformedReplyError, ok } from '@gw/errors';
import { authv1, meteringv1, policyv1, quotav1, routerv1 } from '@gw/proto';
import type { MessageInitShape } from '@gw/proto';
import { authClient } from '../../src/clients/auth';
import { meteringClient } from '../../src/clients/metering';
import { policyClient } from '../../src/clients/policy';
import { quotaClient } from '../../src/clients/quota';
import { routerClient } from '../../src/clients/router';
import { verifiedKey } from '../support/keys';

const scope = { requestId: 'req_1' };
const key = verifiedKey({ keyId: 'key_1', accountId: 'acct_1', plan: 'pro' });
const window = { limit: 10n, remaining: 9n, resetUnixMs: 1_000n };
const malformed = err(malformedReplyError());

function reports() {
  const seen: string[] = [];
  return { seen, report: (callee: string, field: string) => seen.push(`${callee}: ${field}`) };
}

/** A gRPC method answering one reply, whatever it is asked. */
const answering =
  <R>(reply: R) =>
  async () =>
    ok(reply);

function quotaWith(replies: {
  reserve?: MessageInitShape<typeof quotav1.ReserveResponseSchema>;
  acquire?: MessageInitShape<typeof quotav1.AcquireResponseSchema>;
  peek?: MessageInitShape<typeof quotav1.PeekResponseSchema>;
}) {
  const { seen, report } = reports();
  const client = quotaClient(
    {
      reserve: answering(create(quotav1.ReserveResponseSchema, replies.reserve ?? {})),
      acquire: answering(create(quotav1.AcquireResponseSchema, replies.acquire ?? {})),
      peek: answering(create(quotav1.PeekResponseSchema, replies.peek ?? {})),
      renew: answering(create(quotav1.RenewResponseSchema, { held: true })),
      release: answering(create(quotav1.ReleaseResponseSchema, {})),
    },
    report,
  );
  return { client, seen };
}

describe('auth client', () => {
  it('decodes the key into the domain type, keeping the record to pass on', async () => {
    const record = { keyId: 'key_1', accountId: 'acct_1', plan: 'pro', expiresAtUnixMs: 5_000n };
    const auth = authClient(
      { verifyKey: answering(create(authv1.VerifyKeyResponseSchema, { key: record })) },
      reports().report,
    );
    const verified = await auth.verifyKey('gw_live_x', '127.0.0.1', scope);
    expect(verified.ok && verified.value).toMatchObject({
      keyId: 'key_1',
      accountId: 'acct_1',
      expiresAtUnixMs: 5_000,
    });
    expect(verified.ok && verified.value.record.keyId).toBe('key_1');
  });

  it.each([
    ['no key at all', {}, 'auth: key'],
    ['a key without its id', { key: { accountId: 'acct_1' } }, 'auth: key.key_id'],
    ['a key without its account', { key: { keyId: 'key_1' } }, 'auth: key.account_id'],
    [
      'an expiry out of range',
      { key: { keyId: 'k', accountId: 'a', expiresAtUnixMs: -1n } },
      'auth: key.expires_at_unix_ms',
    ],
  ] as const)('refuses %s as a catalogued error, reported once', async (_name, reply, field) => {
    const { seen, report } = reports();
    const auth = authClient({ verifyKey: answering(create(authv1.VerifyKeyResponseSchema, reply)) }, report);
    expect(await auth.verifyKey('gw_live_x', '127.0.0.1', scope)).toEqual(malformed);
    expect(seen).toEqual([field]);
  });

  it('passes a refusal of the key through unchanged', async () => {
    const refusal = err({ type: 'authentication_error' as const, message: 'no' });
    const auth = authClient({ verifyKey: async () => refusal }, reports().report);
    expect(await auth.verifyKey('gw_live_x', '127.0.0.1', scope)).toBe(refusal);
  });
});

describe('quota client', () => {
  it('decodes a reservation, an admission and a look into numbers', async () => {
    const limits = { requestsPerMinute: 60n, concurrency: 2n, monthlyTokens: 1_000n, overage: true };
    const { client, seen } = quotaWith({
      reserve: { leaseId: 'lease_1', leaseTtlMs: 30_000n, window },
      acquire: { leaseId: 'lease_1', leaseTtlMs: 30_000n, window, limits },
      peek: { window, limits },
    });
    expect(await client.reserve(key, scope)).toEqual(
      ok({ leaseId: 'lease_1', leaseTtlMs: 30_000, window: { limit: 10, remaining: 9, resetUnixMs: 1_000 } }),
    );
    const admitted = await client.acquire(key, 'lease_1', scope);
    expect(admitted.ok && admitted.value.limits).toEqual({
      requestsPerMinute: 60,
      concurrency: 2,
      monthlyTokens: 1_000,
      overage: true,
    });
    const standing = await client.peek(key, scope);
    expect(standing.ok && standing.value.window.remaining).toBe(9);
    expect(seen).toEqual([]);
  });

  it('refuses replies without the window, the lease or the limits as catalogued errors', async () => {
    const { client, seen } = quotaWith({
      reserve: { leaseId: 'lease_1', leaseTtlMs: 30_000n },
      acquire: { leaseTtlMs: 30_000n, window },
      peek: { window },
    });
    expect(await client.reserve(key, scope)).toEqual(malformed);
    expect(await client.acquire(key, undefined, scope)).toEqual(malformed);
    expect(await client.peek(key, scope)).toEqual(malformed);
    expect(seen).toEqual(['quota: window', 'quota: lease_id', 'quota: limits']);
  });

  it('refuses a count that does not fit a number', async () => {
    const { client, seen } = quotaWith({ reserve: { leaseId: 'l', leaseTtlMs: 2n ** 60n, window } });
    expect(await client.reserve(key, scope)).toEqual(malformed);
    expect(seen).toEqual(['quota: lease_ttl_ms']);
  });
});

describe('policy client', () => {
  const policyAnswering = (reply: MessageInitShape<typeof policyv1.AuthorizeResponseSchema>) => {
    const { seen, report } = reports();
    const client = policyClient(
      {
        authorize: answering(create(policyv1.AuthorizeResponseSchema, reply)),
        listModels: answering(create(policyv1.ListModelsResponseSchema, { models: [{ displayName: 'no id' }] })),
      },
      report,
    );
    return { client, seen };
  };

  it('decodes a decision: pools, the body, flag counts as numbers', async () => {
    const { client } = policyAnswering({ pools: [{ poolId: 'eu-a' }], privacyFlags: { EMAIL: 2n } });
    const decided = await client.authorize(key, 'm', Buffer.from('{}'), scope, 1_000);
    expect(decided.ok && decided.value.privacyFlags).toEqual({ EMAIL: 2 });
    expect(decided.ok && decided.value.body).toBeUndefined();
  });

  it('refuses a decision without pools, placeholders without their nonce, and a model without its id', async () => {
    expect(await policyAnswering({}).client.authorize(key, 'm', Buffer.from('{}'), scope, 1_000)).toEqual(malformed);
    const tokenised = policyAnswering({ pools: [{ poolId: 'eu-a' }], placeholders: [{ placeholder: 'p' }] });
    expect(await tokenised.client.authorize(key, 'm', Buffer.from('{}'), scope, 1_000)).toEqual(malformed);
    expect(tokenised.seen).toEqual(['policy: placeholder_nonce']);
    expect(await tokenised.client.listModels(key, scope)).toEqual(malformed);
  });
});

describe('router client', () => {
  const events = (replies: MessageInitShape<typeof routerv1.CompleteResponseSchema>[]) => {
    const { seen, report } = reports();
    const client = routerClient(
      {
        complete: () =>
          (async function* () {
            for (const reply of replies) yield ok(create(routerv1.CompleteResponseSchema, reply));
          })(),
        countTokens: answering(create(routerv1.CountTokensResponseSchema, { inputTokens: -1n })),
      },
      report,
    );
    return { client, seen };
  };
  const request = { key, model: 'm', pools: [], body: Buffer.from('{}'), headers: {}, query: '', stream: true };
  const options = { signal: new AbortController().signal, timeoutMs: 1_000 };

  it('decodes each event, skips a kind it does not know, and refuses a start without its pool', async () => {
    const { client, seen } = events([
      { event: { case: 'started', value: { poolId: 'eu-a', region: 'eu-west' } } },
      { event: { case: 'sse', value: { event: 'ping', data: Buffer.from('{}') } } },
      {},
      { event: { case: 'finished', value: { usage: { inputTokens: 3n, outputTokens: 4n } } } },
      { event: { case: 'started', value: { region: 'eu-west' } } },
    ]);
    const seenEvents = [];
    for await (const item of client.complete(request, scope, options)) seenEvents.push(item);
    expect(seenEvents).toEqual([
      ok({ kind: 'started', poolId: 'eu-a', region: 'eu-west', droppedBetas: [] }),
      ok({ kind: 'sse', event: 'ping', data: '{}' }),
      ok({
        kind: 'finished',
        usage: { inputTokens: 3, outputTokens: 4, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
      }),
      malformed,
    ]);
    expect(seen).toEqual(['router: started.pool_id']);
  });

  it('refuses a token count out of range', async () => {
    const { client, seen } = events([]);
    expect(await client.countTokens(request, scope, options)).toEqual(malformed);
    expect(seen).toEqual(['router: input_tokens']);
  });
});

describe('metering client', () => {
  it('decodes the period usage, and refuses a line with an impossible count', async () => {
    const reply = (requests: bigint) =>
      create(meteringv1.GetUsageResponseSchema, {
        billableTokens: 10n,
        byModel: [{ model: 'm', requests, billableTokens: 10n, costGbp: '0.5' }],
      });
    const good = meteringClient(
      {
        getUsage: answering(reply(2n)),
        recordRefusals: answering(create(meteringv1.RecordRefusalsResponseSchema, {})),
      },
      reports().report,
    );
    expect(await good.usage(key, '2026-11-01', scope)).toEqual(
      ok({ billableTokens: 10, byModel: [{ model: 'm', requests: 2, billableTokens: 10, costGbp: '0.5' }] }),
    );
    const bad = meteringClient(
      {
        getUsage: answering(reply(-3n)),
        recordRefusals: answering(create(meteringv1.RecordRefusalsResponseSchema, {})),
      },
      reports().report,
    );
    expect(await bad.usage(key, '2026-11-01', scope)).toEqual(malformed);
  });
});
