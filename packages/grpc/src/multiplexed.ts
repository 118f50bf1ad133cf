import type { DescMethod } from '@bufbuild/protobuf';
import { commonv1 } from '@gw/proto';

/** A service's `Calls`: a bidi stream of MultiplexedCall in, MultiplexedReply out. */
export function isMultiplexedStream(method: DescMethod): boolean {
  return (
    method.methodKind === 'bidi_streaming' &&
    method.input.typeName === commonv1.MultiplexedCallSchema.typeName &&
    method.output.typeName === commonv1.MultiplexedReplySchema.typeName
  );
}

/** setTimeout's longest delay; a longer one would fire at once. Deadlines of multiplexed calls stop here. */
export const maxTimerMs = 2 ** 31 - 1;
