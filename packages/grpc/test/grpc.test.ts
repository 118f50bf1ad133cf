import { err, gatewayError, ok } from '@gw/errors';
import { policyv1, routerv1 } from '@gw/proto';
import { createServiceClient, isServing, registration, startGrpcServer } from '../src';
import type { RunningGrpcServer } from '../src';
import { plaintext } from './loopback';

describe('gRPC adapter over loopback', () => {
  let server: RunningGrpcServer;
  const failures: string[] = [];
  const finished: string[] = [];

  beforeAll(async () => {
    server = await startGrpcServer({
      host: '127.0.0.1',
      port: 0,
      transport: plaintext,
      onHandlerFailure: (_error, method) => failures.push(method),
      observeCall: (call) => finished.push(`${call.method} ${call.code}`),
      services: [
        registration(policyv1.PolicyService, {
          async authorize(request) {
            if (request.model === 'throw') throw new Error('bug');
            if (request.model === 'limited') {
              return err(
                gatewayError('rate_limit_error', 'slow down', {
                  retryAfterMs: 1500,
                  rateLimit: { limit: 10, remaining: 0, resetUnixMs: 1_700_000_000_000 },
                }),
              );
            }
            return ok({ pools: [{ poolId: request.model, region: 'eu-west' }] });
          },
          async listModels() {
            return ok({ models: [] });
          },
          async *watchCatalogue() {
            // Not exercised here.
          },
        }),
        registration(routerv1.RouterService, {
          async *complete(request) {
            yield ok({ event: { case: 'started', value: { poolId: 'p', region: 'r' } } });
            for (let index = 0; index < 3; index += 1) {
              yield ok({ event: { case: 'sse', value: { event: 'ping', data: Buffer.from(`${index}`) } } });
            }
            if (request.requestId === 'fail') yield err(gatewayError('overloaded_error', 'busy'));
          },
          async countTokens() {
            return ok({ inputTokens: 1n, estimated: true });
          },
        }),
      ],
    });
    server.setServing(true);
  });

  afterAll(() => server.shutdown(1_000));

  const address = () => `127.0.0.1:${server.port}`;

  it('carries a success and a GatewayError value across the wire unchanged', async () => {
    const client = createServiceClient(policyv1.PolicyService, {
      address: address(),
      callee: 'policy',
      defaultTimeoutMs: 2_000,
      transport: plaintext,
    });
    const success = await client.authorize({ model: 'pool-a' });
    expect(success.ok && success.value.pools[0]?.poolId).toBe('pool-a');
    expect(await client.authorize({ model: 'limited' })).toEqual({
      ok: false,
      error: {
        type: 'rate_limit_error',
        message: 'slow down',
        retryAfterMs: 1500,
        rateLimit: { limit: 10, remaining: 0, resetUnixMs: 1_700_000_000_000 },
      },
    });
    client.close();
  });

  it('turns a handler that throws into api_error without its details, and reports it', async () => {
    const client = createServiceClient(policyv1.PolicyService, {
      address: address(),
      callee: 'policy',
      defaultTimeoutMs: 2_000,
      transport: plaintext,
    });
    const result = await client.authorize({ model: 'throw' });
    expect(result).toEqual({ ok: false, error: expect.objectContaining({ type: 'api_error' }) });
    expect(JSON.stringify(result)).not.toContain('bug');
    expect(failures).toContain('Authorize');
    client.close();
  });

  it('streams responses, then the failure as the last item', async () => {
    const client = createServiceClient(routerv1.RouterService, {
      address: address(),
      callee: 'router',
      defaultTimeoutMs: 0,
      transport: plaintext,
    });
    const seen: string[] = [];
    for await (const item of client.complete({ requestId: 'fail' })) {
      seen.push(item.ok ? (item.value.event.case ?? '') : item.error.type);
    }
    expect(seen).toEqual(['started', 'sse', 'sse', 'sse', 'overloaded_error']);
    client.close();
  });

  it('maps an unreachable service to overloaded_error naming it', async () => {
    const client = createServiceClient(policyv1.PolicyService, {
      address: '127.0.0.1:1',
      callee: 'policy',
      defaultTimeoutMs: 500,
      transport: plaintext,
    });
    const result = await client.authorize({ model: 'x' });
    expect(result).toEqual({
      ok: false,
      error: expect.objectContaining({ type: 'overloaded_error', message: expect.stringContaining('policy') }),
    });
    client.close();
  });

  it('reports every finished call with its status code, for the boundary metrics', () => {
    expect(finished).toEqual(
      expect.arrayContaining([
        'Authorize OK',
        'Authorize RESOURCE_EXHAUSTED',
        'Authorize INTERNAL',
        'Complete UNAVAILABLE',
      ]),
    );
  });

  it('serves grpc.health.v1', async () => {
    expect(await isServing(address(), plaintext)).toBe(true);
    server.setServing(false);
    expect(await isServing(address(), plaintext)).toBe(false);
    server.setServing(true);
  });
});
