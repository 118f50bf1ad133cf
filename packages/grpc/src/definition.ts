import type { MethodDefinition, ServiceDefinition } from '@grpc/grpc-js';
import { fromBinary, toBinary } from '@bufbuild/protobuf';
import type { DescMessage, DescMethod, DescService, MessageShape } from '@bufbuild/protobuf';

function serialiser<D extends DescMessage>(schema: D): (message: MessageShape<D>) => Buffer {
  return (message) => {
    const bytes = toBinary(schema, message);
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  };
}

function deserialiser<D extends DescMessage>(schema: D): (buffer: Buffer) => MessageShape<D> {
  return (buffer) => fromBinary(schema, buffer);
}

function methodDefinition(method: DescMethod): MethodDefinition<unknown, unknown> {
  return {
    path: `/${method.parent.typeName}/${method.name}`,
    originalName: method.name,
    requestStream: method.methodKind === 'client_streaming' || method.methodKind === 'bidi_streaming',
    responseStream: method.methodKind === 'server_streaming' || method.methodKind === 'bidi_streaming',
    requestSerialize: serialiser(method.input) as (value: unknown) => Buffer,
    requestDeserialize: deserialiser(method.input),
    responseSerialize: serialiser(method.output) as (value: unknown) => Buffer,
    responseDeserialize: deserialiser(method.output),
  };
}

/** Turns a protobuf-es service descriptor into the definition @grpc/grpc-js serves and calls. */
export function grpcServiceDefinition(service: DescService): ServiceDefinition {
  return Object.fromEntries(service.methods.map((method) => [method.localName, methodDefinition(method)]));
}
