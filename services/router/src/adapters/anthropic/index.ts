import { createParser } from 'eventsource-parser';
import type { EventSourceMessage } from 'eventsource-parser';
import { err, ok } from '@gw/errors';
import type { CompletionStream } from '../../completion';
import { errorAfterStart } from '../../upstream-errors';
import type { UpstreamBody } from '../../upstream-http';
import type { UpstreamAdapter } from '../types';
import { anthropicAdapterConfig } from './config';
import type { AnthropicAdapterConfig } from './config';
import {
  AnthropicStreamReader,
  acceptsContentType,
  inputTokensOfCount,
  parseErrorBody,
  toCountTokensRequest,
  relayedMessage,
  toUpstreamRequest,
} from './transform';

/**
 * Relays each upstream event verbatim (the data bytes are the upstream's JSON as received), but
 * message_start, which names the caller's model alias.
 */
export async function* relayEvents(body: UpstreamBody, model: string): CompletionStream {
  const parsed: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (event) => parsed.push(event) });
  const decoder = new TextDecoder();
  const reader = new AnthropicStreamReader(model);
  for await (const chunk of body) {
    if (!chunk.ok) {
      const error = errorAfterStart(chunk.error);
      if (error) yield err(error);
      return;
    }
    parser.feed(decoder.decode(chunk.value, { stream: true }));
    for (const event of parsed.splice(0)) {
      const step = reader.accept(event);
      if (step.kind === 'fail') {
        yield err(step.error);
        return;
      }
      if (step.kind === 'relay')
        yield ok({ kind: 'sse', event: step.event, data: Buffer.from(step.data ?? event.data) });
    }
  }
  const usage = reader.finish();
  yield usage.ok ? ok({ kind: 'finished', usage: usage.value }) : usage;
}

/** A whole Message body relayed with the caller's alias; shared by the adapters whose answers are Messages. */
export async function* relayMessage(body: UpstreamBody, model: string): CompletionStream {
  const chunks: Uint8Array[] = [];
  for await (const chunk of body) {
    if (!chunk.ok) {
      const error = errorAfterStart(chunk.error);
      if (error) yield err(error);
      return;
    }
    chunks.push(chunk.value);
  }
  const relayed = relayedMessage(Buffer.concat(chunks).toString('utf8'), model);
  if (!relayed.ok) {
    yield relayed;
    return;
  }
  yield ok({ kind: 'message', json: Buffer.from(relayed.value.json) });
  yield ok({ kind: 'finished', usage: relayed.value.usage });
}

export function createAnthropicAdapter(config: AnthropicAdapterConfig = anthropicAdapterConfig): UpstreamAdapter {
  return {
    buildRequest: (call) => toUpstreamRequest(config, call),
    acceptsContentType,
    parseErrorBody,
    relay: (body, call) => (call.stream ? relayEvents(body, call.model) : relayMessage(body, call.model)),
    countTokens: {
      buildRequest: (call) => toCountTokensRequest(config, call),
      acceptsContentType: (contentType) => acceptsContentType(contentType, false),
      parseCount: inputTokensOfCount,
    },
  };
}
