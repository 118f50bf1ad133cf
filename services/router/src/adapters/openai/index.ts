import { randomUUID } from 'node:crypto';
import { createParser } from 'eventsource-parser';
import { err, ok } from '@gw/errors';
import type { CompletionStream } from '../../completion';
import { errorAfterStart } from '../../upstream-errors';
import type { UpstreamBody } from '../../upstream-http';
import { estimateInputTokens } from '@gw/usage';
import { betaNamesOf } from '../betas';
import type { RelayCall, UpstreamAdapter } from '../types';
import { acceptsContentType, upstreamRequest } from './api';
import { openAIAdapterConfig } from './config';
import type { OpenAIAdapterConfig } from './config';
import { parseErrorBody } from './errors';
import { toChatCompletionRequest } from './request';
import { thinkingRequested, toAnthropicMessage } from './response';
import type { AnswerContext } from './response';
import { ChatStreamTranslator } from './stream';
import type { AnthropicEvent } from './stream';

export type { OpenAIAdapterConfig, OpenAICredentialStyle } from './config';
export { openAIAdapterConfig } from './config';

function sse({ event, data }: AnthropicEvent) {
  return { kind: 'sse' as const, event, data: Buffer.from(JSON.stringify(data)) };
}

/** Translates the upstream's chunks as they arrive: each chunk's events are yielded before the next is read. */
async function* relayStream(body: UpstreamBody, fallbackId: string, answer: AnswerContext): CompletionStream {
  const payloads: string[] = [];
  const parser = createParser({ onEvent: (event) => payloads.push(event.data) });
  const decoder = new TextDecoder();
  const translator = new ChatStreamTranslator(fallbackId, answer);
  for await (const chunk of body) {
    if (!chunk.ok) {
      const error = errorAfterStart(chunk.error);
      if (error) yield err(error);
      return;
    }
    parser.feed(decoder.decode(chunk.value, { stream: true }));
    for (const payload of payloads.splice(0)) {
      if (payload.trim() === '') continue;
      const step = translator.accept(payload);
      if (!step.ok) {
        yield step;
        return;
      }
      for (const event of step.value) yield ok(sse(event));
    }
  }
  const end = translator.end();
  if (!end.ok) {
    yield end;
    return;
  }
  for (const event of end.value.events) yield ok(sse(event));
  yield ok({ kind: 'finished', usage: end.value.usage });
}

async function* relayMessage(body: UpstreamBody, fallbackId: string, answer: AnswerContext): CompletionStream {
  const chunks: Uint8Array[] = [];
  for await (const chunk of body) {
    if (!chunk.ok) {
      const error = errorAfterStart(chunk.error);
      if (error) yield err(error);
      return;
    }
    chunks.push(chunk.value);
  }
  const translated = toAnthropicMessage(Buffer.concat(chunks).toString('utf8'), fallbackId, answer);
  if (!translated.ok) {
    yield translated;
    return;
  }
  yield ok({ kind: 'message', json: Buffer.from(JSON.stringify(translated.value.message)) });
  yield ok({ kind: 'finished', usage: translated.value.usage });
}

function answerContext(call: RelayCall): AnswerContext {
  return {
    model: call.model,
    thinking: thinkingRequested(call.body),
    estimatedInputTokens: estimateInputTokens(call.body),
  };
}

/**
 * OpenAI-compatible chat completions (vLLM, TGI, Ollama, llama.cpp, Azure OpenAI) behind the
 * Anthropic Messages interface: the caller's request translated to `POST /v1/chat/completions`,
 * the answer translated back to a Message or to the Anthropic event stream. No count-tokens
 * capability: the protocol has no way to count, so the router answers its estimate.
 */
export function createOpenAIAdapter(
  config: OpenAIAdapterConfig = openAIAdapterConfig,
  /** The message id when the upstream sends none. */
  newId: () => string = () => randomUUID().replaceAll('-', ''),
): UpstreamAdapter {
  return {
    checkRequest(call) {
      const { refusal } = toChatCompletionRequest(config, { ...call, upstreamModel: '' });
      return refusal === undefined ? ok(undefined) : err(refusal);
    },
    // Chat completions have no betas: each is dropped, and named to the caller.
    droppedBetas: betaNamesOf,
    buildRequest(call) {
      // A refused call (checkRequest) gets what can be carried; see request.ts.
      return upstreamRequest(config, call, toChatCompletionRequest(config, call).request);
    },
    acceptsContentType,
    parseErrorBody,
    relay: (body, call) =>
      call.stream ? relayStream(body, newId(), answerContext(call)) : relayMessage(body, newId(), answerContext(call)),
  };
}
