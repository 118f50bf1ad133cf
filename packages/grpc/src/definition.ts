import type { MethodDefinition, ServiceDefinition } from '@grpc/grpc-js';
import { fromBinary, ScalarType, toBinary } from '@bufbuild/protobuf';
import type { DescField, DescMessage, DescMethod, DescService, MessageShape } from '@bufbuild/protobuf';
import { FeatureSet_FieldPresence } from '@bufbuild/protobuf/wkt';

/** A `bytes` field at least this long is written after the rest of its message (see `serialiser`). */
const largeBytesField = 64 * 1024;

/** An unsigned varint, as protobuf writes tags and lengths. */
function varint(value: number): number[] {
  const out: number[] = [];
  let rest = value;
  while (rest > 0x7f) {
    out.push((rest & 0x7f) | 0x80);
    rest = Math.floor(rest / 128);
  }
  out.push(rest);
  return out;
}

/** Top-level singular `bytes` fields, outside any oneof: where request and completion bodies travel. */
function bytesFieldsOf(schema: DescMessage): DescField[] {
  return schema.fields.filter(
    (field) => field.fieldKind === 'scalar' && field.scalar === ScalarType.BYTES && field.oneof === undefined,
  );
}

/**
 * protobuf-es writes a bytes field through a growing buffer (a zeroed allocation of twice the size, a copy, and
 * another when it finishes): about 5 ms of the event loop for a 4 MB body, twice per request in ingress. So a
 * large bytes field is left out of the message that protobuf-es writes and appended after it, tag and length
 * and its bytes in one copy. Protobuf readers take fields in any order, so the result decodes to the same message.
 */
function serialiser<D extends DescMessage>(schema: D): (message: MessageShape<D>) => Buffer {
  const bytesFields = bytesFieldsOf(schema);
  return (message) => {
    const values = message as unknown as Record<string, unknown>;
    const large = bytesFields.filter((field) => {
      const value = values[field.localName];
      return value instanceof Uint8Array && value.byteLength >= largeBytesField;
    });
    if (large.length === 0) {
      const bytes = toBinary(schema, message);
      return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    }
    const rest: Record<string, unknown> = { ...values };
    const parts: Uint8Array[] = [];
    for (const field of large) {
      const value = values[field.localName] as Uint8Array;
      // Left out as protobuf-es leaves out an absent optional field or an empty implicit one.
      rest[field.localName] = field.presence === FeatureSet_FieldPresence.IMPLICIT ? new Uint8Array(0) : undefined;
      parts.push(Uint8Array.from([...varint((field.number << 3) | 2), ...varint(value.byteLength)]), value);
    }
    return Buffer.concat([toBinary(schema, rest as MessageShape<D>), ...parts]);
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
