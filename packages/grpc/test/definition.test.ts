import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { commonv1, policyv1, routerv1 } from '@gw/proto';
import { grpcServiceDefinition } from '../src/definition';

const body = (size: number) => Buffer.alloc(size, 'x');

describe('the gRPC definition of a service', () => {
  const authorize = grpcServiceDefinition(policyv1.PolicyService).authorize!;
  const complete = grpcServiceDefinition(routerv1.RouterService).complete!;

  it.each([
    ['a small body', 1_000],
    ['a body just under the large-field bound', 64 * 1024 - 1],
    ['a 4 MB body', 4_000_000],
  ])('writes %s so that it reads back as the same message', (_name, size) => {
    const request = create(routerv1.CompleteRequestSchema, {
      requestId: 'req_1',
      key: { accountId: 'acct_1', environment: commonv1.Environment.LIVE },
      model: 'claude-sonnet-5',
      bodyJson: body(size),
      stream: true,
      headers: { 'anthropic-version': '2023-06-01' },
    });
    const written = complete.requestSerialize(request);
    // Bodies compared as bytes: a deep comparison of 4 MB takes jest seconds.
    const same = (read: routerv1.CompleteRequest) => {
      expect({ ...read, bodyJson: undefined }).toEqual({ ...request, bodyJson: undefined });
      expect(Buffer.from(read.bodyJson).equals(request.bodyJson)).toBe(true);
    };
    same(fromBinary(routerv1.CompleteRequestSchema, written));
    same(complete.requestDeserialize(written) as routerv1.CompleteRequest);
    // The same bytes as protobuf-es writes, the large field moved to the end: the size is unchanged.
    expect(written.byteLength).toBe(toBinary(routerv1.CompleteRequestSchema, request).byteLength);
  });

  it('keeps an optional bytes field present when it is large, and absent when it was absent', () => {
    const large = create(policyv1.AuthorizeResponseSchema, { bodyJson: body(100_000), placeholderNonce: 'n' });
    const absent = create(policyv1.AuthorizeResponseSchema, { placeholderNonce: 'n' });
    const readLarge = fromBinary(policyv1.AuthorizeResponseSchema, authorize.responseSerialize(large));
    expect(readLarge.placeholderNonce).toBe('n');
    expect(Buffer.from(readLarge.bodyJson!).equals(large.bodyJson!)).toBe(true);
    const readBack = fromBinary(policyv1.AuthorizeResponseSchema, authorize.responseSerialize(absent));
    expect(readBack.bodyJson).toBeUndefined();
  });

  it('leaves the caller its message as it was', () => {
    const request = create(policyv1.AuthorizeRequestSchema, { model: 'm', bodyJson: body(100_000) });
    authorize.requestSerialize(request);
    expect(request.bodyJson.byteLength).toBe(100_000);
  });
});
