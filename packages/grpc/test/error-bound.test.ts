import { err, gatewayError, ok } from '@gw/errors';
import { commonv1, fromBinary, policyv1 } from '@gw/proto';
import { waitUntil } from '@gw/testing';
import { boundedMessage, createServiceClient, errorDetailTrailer, maxCrossingMessageBytes, toGrpcStatus } from '../src';
import type { RunningGrpcServer } from '../src';
import { loopbackAddress, plaintext, startPolicyServer } from './loopback';

const bytes = (text: string) => Buffer.byteLength(text, 'utf8');

describe('boundedMessage', () => {
  it('leaves a message of at most 1 KiB alone', () => {
    expect(boundedMessage('short')).toBe('short');
    expect(boundedMessage('x'.repeat(1024))).toBe('x'.repeat(1024));
  });

  it('cuts a longer one to 1 KiB of valid UTF-8 ending in an ellipsis', () => {
    for (const unit of ['x', 'é', '€', '😀']) {
      const cut = boundedMessage(unit.repeat(5_000));
      expect(bytes(cut)).toBeLessThanOrEqual(maxCrossingMessageBytes);
      expect(bytes(cut)).toBeGreaterThan(maxCrossingMessageBytes - 8);
      expect(cut.endsWith('…')).toBe(true);
      expect(cut.slice(0, -1)).toBe(unit.repeat(cut.slice(0, -1).length / unit.length));
      expect(cut).not.toContain('\uFFFD');
    }
  });
});

describe('toGrpcStatus', () => {
  it('bounds the message in grpc-message and in the error-detail trailer', () => {
    const status = toGrpcStatus(gatewayError('invalid_request_error', `model ${'x'.repeat(200_000)}`));
    expect(bytes(status.details!)).toBeLessThanOrEqual(maxCrossingMessageBytes);
    const detail = fromBinary(commonv1.ErrorDetailSchema, status.metadata!.get(errorDetailTrailer)[0] as Buffer);
    expect(detail.message).toBe(status.details);
  });
});

describe('a huge error message over loopback', () => {
  let server: RunningGrpcServer;
  let release: () => void = () => undefined;
  let slowArrived = false;

  beforeAll(async () => {
    server = await startPolicyServer(async (request) => {
      if (request.model === 'slow') {
        slowArrived = true;
        await new Promise<void>((resolve) => (release = resolve));
        return ok({});
      }
      // A refusal that echoes what the caller sent, as validation errors do.
      return err(gatewayError('invalid_request_error', `unknown model: ${request.model}`));
    });
  });

  afterAll(() => server.shutdown(1_000));

  it('reaches the caller cut to 1 KiB, and a concurrent call on the same channel still succeeds', async () => {
    const client = createServiceClient(policyv1.PolicyService, {
      address: loopbackAddress(server),
      callee: 'policy',
      defaultTimeoutMs: 2_000,
      transport: plaintext,
    });
    const slow = client.authorize({ model: 'slow' });
    await waitUntil(() => slowArrived, { what: 'the slow call to reach the handler' });

    const refused = await client.authorize({ model: 'x'.repeat(200_000) });
    expect(refused.ok ? 'answered' : refused.error.type).toBe('invalid_request_error');
    expect(refused.ok || bytes(refused.error.message)).toBeLessThanOrEqual(maxCrossingMessageBytes);

    release();
    expect((await slow).ok).toBe(true);
    client.close();
  });
});
