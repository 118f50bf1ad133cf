import { once } from 'node:events';
import { err, gatewayError, ok } from '@gw/errors';
import { policyv1, routerv1 } from '@gw/proto';
import { createServiceClient, fallbackUnaryTimeoutMs, startGrpcServer, unaryDeadline } from '../src';
import type { RunningGrpcServer } from '../src';
import { waitUntil } from '@gw/testing';
import { loopbackAddress, partialRegistration, plaintext, startPolicyServer } from './loopback';

describe('unaryDeadline', () => {
  const now = 1_700_000_000_000;

  it('takes the call timeout, else the client default', () => {
    expect(unaryDeadline({ timeoutMs: 250 }, 2_000, now)).toEqual(new Date(now + 250));
    expect(unaryDeadline(undefined, 2_000, now)).toEqual(new Date(now + 2_000));
  });

  it('never leaves a unary call without a deadline: 0 or less falls back', () => {
    expect(unaryDeadline({ timeoutMs: 0 }, 2_000, now)).toEqual(new Date(now + 2_000));
    expect(unaryDeadline(undefined, 0, now)).toEqual(new Date(now + fallbackUnaryTimeoutMs));
    expect(unaryDeadline({ timeoutMs: -1 }, 0, now)).toEqual(new Date(now + fallbackUnaryTimeoutMs));
  });
});

describe('deadlines over loopback', () => {
  let policy: RunningGrpcServer;
  let router: RunningGrpcServer;
  let streamsCancelled = 0;

  beforeAll(async () => {
    // Answers only once its call is cancelled: the deadline is the only way out.
    policy = await startPolicyServer(async (_request, context) => {
      await once(context.signal, 'abort');
      return err(gatewayError('api_error', 'cancelled'));
    });
    router = await startGrpcServer({
      host: '127.0.0.1',
      port: 0,
      transport: plaintext,
      onHandlerFailure: () => undefined,
      services: [
        partialRegistration(routerv1.RouterService, {
          async *complete(_request, context) {
            yield ok({ event: { case: 'started', value: { poolId: 'p', region: 'r' } } });
            await once(context.signal, 'abort');
            streamsCancelled += 1;
          },
          countTokens: async () => ok({ inputTokens: 1n }),
        }),
      ],
    });
  });

  afterAll(() => Promise.all([policy.shutdown(0), router.shutdown(0)]));

  it('gives a unary call whose timeout is 0 the client default instead of none', async () => {
    const client = createServiceClient(policyv1.PolicyService, {
      address: loopbackAddress(policy),
      callee: 'policy',
      defaultTimeoutMs: 200,
      transport: plaintext,
    });
    const result = await client.authorize({ model: 'm' }, { timeoutMs: 0 });
    expect(result).toEqual({ ok: false, error: expect.objectContaining({ type: 'overloaded_error' }) });
    client.close();
  });

  it('ends a server-streaming call at the deadline it was given, and cancels the handler', async () => {
    const client = createServiceClient(routerv1.RouterService, {
      address: loopbackAddress(router),
      callee: 'router',
      defaultTimeoutMs: 0,
      transport: plaintext,
    });
    const seen: string[] = [];
    for await (const item of client.complete({ requestId: 'r' }, { timeoutMs: 300 })) {
      seen.push(item.ok ? (item.value.event.case ?? '') : item.error.type);
    }
    expect(seen).toEqual(['started', 'overloaded_error']);
    await waitUntil(() => streamsCancelled === 1, { what: 'the stream handler to see the deadline' });
    client.close();
  });
});
