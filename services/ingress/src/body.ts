import type { IncomingMessage } from 'node:http';
import { err, gatewayError, ok } from '@gw/errors';
import type { Result } from '@gw/errors';

export function tooLarge(limitBytes: number) {
  return gatewayError(
    'request_too_large',
    `The request body is larger than the limit of ${limitBytes} bytes. Split or shrink the request.`,
  );
}

/** Reads a request body up to a limit; past it, stops reading and refuses with request_too_large. */
export function readBody(request: IncomingMessage, limitBytes: number): Promise<Result<Buffer>> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let received = 0;
    const finish = (result: Result<Buffer>) => {
      request.off('data', onData);
      request.off('end', onEnd);
      request.off('error', onError);
      resolve(result);
    };
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (received > limitBytes) {
        request.pause();
        finish(err(tooLarge(limitBytes)));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => finish(ok(Buffer.concat(chunks, received)));
    const onError = () =>
      finish(err(gatewayError('invalid_request_error', 'The request body could not be read completely.')));
    request.on('data', onData);
    request.on('end', onEnd);
    request.on('error', onError);
  });
}
