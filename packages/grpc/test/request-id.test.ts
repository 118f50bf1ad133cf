import { credentials, makeGenericClientConstructor, Metadata } from '@grpc/grpc-js';
import type { Client } from '@grpc/grpc-js';
import { ok } from '@gw/errors';
import { create, policyv1 } from '@gw/proto';
import { waitUntil } from '@gw/testing';
import { createServiceClient, grpcServiceDefinition, wellFormedRequestId } from '../src';
import type { FinishedCall, RunningGrpcServer } from '../src';
import { loopbackAddress, plaintext, startPolicyServer } from './loopback';

describe('wellFormedRequestId', () => {
  it('keeps up to 64 of [A-Za-z0-9_-] and drops anything else', () => {
    expect(wellFormedRequestId('req_AbC-019')).toBe('req_AbC-019');
    expect(wellFormedRequestId('x'.repeat(64))).toBe('x'.repeat(64));
    for (const bad of ['', 'x'.repeat(65), 'req 1', 'req\n1', 'réq', 'req:1', undefined]) {
      expect(wellFormedRequestId(bad)).toBeUndefined();
    }
  });
});

describe('request id in call metadata', () => {
  let server: RunningGrpcServer;
  const seen = new Map<string, string | undefined>();
  const finished: FinishedCall[] = [];
  const failures: { method: string; requestId: string | undefined }[] = [];

  beforeAll(async () => {
    server = await startPolicyServer(
      async (request, context) => {
        seen.set(request.model, context.requestId);
        if (request.model === 'throw') throw new Error('bug');
        return ok({});
      },
      {
        observeCall: (call) => finished.push(call),
        onHandlerFailure: (_error, method, call) => failures.push({ method, requestId: call.requestId }),
      },
    );
  });

  afterAll(() => server.shutdown(1_000));

  const client = () =>
    createServiceClient(policyv1.PolicyService, {
      address: loopbackAddress(server),
      callee: 'policy',
      defaultTimeoutMs: 5_000,
      transport: plaintext,
    });

  it('hands the caller’s request id to the handler and to the call’s reports', async () => {
    const policy = client();
    expect((await policy.authorize({ model: 'plain' }, { requestId: 'req_1' })).ok).toBe(true);
    expect(seen.get('plain')).toBe('req_1');
    await waitUntil(() => finished.find((call) => call.requestId === 'req_1'), { what: 'the finished call' });

    expect((await policy.authorize({ model: 'throw' }, { requestId: 'req_2' })).ok).toBe(false);
    expect(failures).toEqual([{ method: 'Authorize', requestId: 'req_2' }]);
    policy.close();
  });

  it('sends no request id that is not well formed', async () => {
    const policy = client();
    await policy.authorize({ model: 'long' }, { requestId: 'x'.repeat(65) });
    await policy.authorize({ model: 'spaced' }, { requestId: 'req 3' });
    await policy.authorize({ model: 'none' });
    expect([seen.get('long'), seen.get('spaced'), seen.get('none')]).toEqual([undefined, undefined, undefined]);
    expect(seen.has('none')).toBe(true);
    policy.close();
  });

  it('ignores a malformed x-request-id that another client sends', async () => {
    const Constructor = makeGenericClientConstructor(grpcServiceDefinition(policyv1.PolicyService), 'policy');
    const raw: Client = new Constructor(loopbackAddress(server), credentials.createInsecure());
    const metadata = new Metadata();
    metadata.set('x-request-id', 'y'.repeat(500));
    const authorize = (raw as unknown as Record<string, (...args: unknown[]) => void>)['authorize']!.bind(raw);
    await new Promise<void>((resolve, reject) =>
      authorize(create(policyv1.AuthorizeRequestSchema, { model: 'raw' }), metadata, (error: Error | null) =>
        error ? reject(error) : resolve(),
      ),
    );
    expect(seen.has('raw')).toBe(true);
    expect(seen.get('raw')).toBeUndefined();
    raw.close();
  });
});
