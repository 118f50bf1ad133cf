import type { Directives } from '../directives';
import { parseDirectives } from '../directives';
import { echoChunks } from '../echo';
import type { SimExchange } from '../exchange';
import { randomId } from '../ids';
import { sleep } from '../sleep';
import type { AnthropicSimOptions } from './common';
import { acceptRequest, sendRequestedError } from './common';
import { errorBody, sendError } from './errors';
import type { MessagesRequest } from './request';
import { validateMessagesRequest } from './request';

/** `sim:tool-call` in the newest user message (with `tools` offered): answer with a call to the first tool. */
const toolCallPattern = /\bsim:tool-call\b/;

/** What the simulated model answers, after max_tokens: what is emitted and why it stops. */
interface Completion {
  /** Text chunks, or the `partial_json` fragments of the tool input; one output token each. */
  chunks: string[];
  toolUse?: { id: string; name: string };
  stopReason: 'end_turn' | 'max_tokens' | 'tool_use';
}

function planEcho(request: MessagesRequest): Completion {
  if (request.inputFromUser && request.firstTool !== undefined && toolCallPattern.test(request.lastUserText)) {
    // The input as the model would write it, in word-sized fragments of JSON.
    const chunks = echoChunks(`{"echo": ${JSON.stringify(request.lastUserText)}}`);
    const toolUse = { id: randomId('toolu_'), name: request.firstTool };
    return chunks.length > request.maxTokens
      ? { chunks: chunks.slice(0, request.maxTokens), toolUse, stopReason: 'max_tokens' }
      : { chunks, toolUse, stopReason: 'tool_use' };
  }
  const chunks = echoChunks(request.lastUserText);
  return chunks.length > request.maxTokens
    ? { chunks: chunks.slice(0, request.maxTokens), stopReason: 'max_tokens' }
    : { chunks, stopReason: 'end_turn' };
}

function usage(inputTokens: number, outputTokens: number) {
  return {
    input_tokens: inputTokens,
    output_tokens: outputTokens,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
  };
}

/** `POST /v1/messages`: validates like the real API, then echoes or misbehaves as asked. */
export async function handleMessages(exchange: SimExchange, options: AnthropicSimOptions): Promise<void> {
  const { response, requestId } = exchange;
  const accepted = acceptRequest(exchange, options);
  if (!accepted.ok) return;
  const validation = validateMessagesRequest(accepted.body);
  if (!validation.ok) {
    sendError(response, requestId, 400, validation.message);
    return;
  }
  const messagesRequest = validation.value;
  const parsed = parseDirectives(messagesRequest.lastUserText);
  if (!parsed.ok) {
    sendError(response, requestId, 400, parsed.message);
    return;
  }
  const directives = parsed.value;
  const completion = planEcho(messagesRequest);

  // A non-streamed answer arrives all at once, so its pacing is time before the headers.
  const paceBeforeHeaders = messagesRequest.stream ? 0 : directives.paceMs * completion.chunks.length;
  if (!(await sleep(directives.latencyMs + paceBeforeHeaders, exchange.signal))) return;

  if (directives.errorStatus !== undefined) {
    sendRequestedError(exchange, directives.errorStatus, directives);
    return;
  }
  if (messagesRequest.stream) {
    await streamMessage(exchange, messagesRequest, completion, directives);
    return;
  }
  if (directives.dropAfter !== undefined) {
    exchange.drop();
    return;
  }
  response.writeHead(200, { 'content-type': 'application/json', 'request-id': requestId });
  response.end(
    JSON.stringify({
      id: randomId('msg_'),
      type: 'message',
      role: 'assistant',
      model: messagesRequest.model,
      content: [contentBlock(completion)],
      stop_reason: completion.stopReason,
      stop_sequence: null,
      usage: usage(messagesRequest.inputTokens, completion.chunks.length),
    }),
  );
}

/** The whole content block of a non-streamed answer. */
function contentBlock(completion: Completion): Record<string, unknown> {
  const text = completion.chunks.join('');
  if (completion.toolUse === undefined) return { type: 'text', text };
  let input: unknown = {};
  try {
    input = JSON.parse(text);
  } catch {
    // Cut at max_tokens: the real API gives what it could parse; the simulator gives nothing.
  }
  return { type: 'tool_use', id: completion.toolUse.id, name: completion.toolUse.name, input };
}

async function streamMessage(
  exchange: SimExchange,
  request: MessagesRequest,
  completion: Completion,
  directives: Directives,
): Promise<void> {
  const { response, signal } = exchange;
  /**
   * Writes one whole event (never split across writes) and waits until it has left, so that pacing
   * is real and a drop comes after what was sent; false once the client has gone.
   */
  const send = (event: string, data: string): Promise<boolean> =>
    new Promise((resolve) => {
      if (signal.aborted) resolve(false);
      else response.write(`event: ${event}\ndata: ${data}\n\n`, (error) => resolve(!error && !signal.aborted));
    });
  const sendJson = (data: { type: string; [field: string]: unknown }) => send(data.type, JSON.stringify(data));

  response.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'request-id': exchange.requestId,
  });
  const started = await sendJson({
    type: 'message_start',
    message: {
      id: randomId('msg_'),
      type: 'message',
      role: 'assistant',
      model: request.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: usage(request.inputTokens, Math.min(1, completion.chunks.length)),
    },
  });
  if (!started) return;
  const { toolUse } = completion;
  const opening = toolUse
    ? { type: 'tool_use', id: toolUse.id, name: toolUse.name, input: {} }
    : { type: 'text', text: '' };
  if (!(await sendJson({ type: 'content_block_start', index: 0, content_block: opening }))) return;
  if (!(await sendJson({ type: 'ping' }))) return;
  // The real API opens a tool input with an empty fragment.
  if (toolUse) {
    const empty = { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '' } };
    if (!(await sendJson(empty))) return;
  }

  const total = completion.chunks.length;
  for (let sent = 0; ; sent += 1) {
    if (directives.streamErrorAfter !== undefined && sent === Math.min(directives.streamErrorAfter, total)) {
      await send('error', errorBody('overloaded_error', 'Overloaded', exchange.requestId));
      response.end();
      return;
    }
    if (directives.dropAfter !== undefined && sent === Math.min(directives.dropAfter, total)) {
      exchange.drop();
      return;
    }
    if (sent === total) break;
    if (!(await sleep(directives.paceMs, signal))) return;
    const delta = {
      type: 'content_block_delta',
      index: 0,
      delta: toolUse
        ? { type: 'input_json_delta', partial_json: completion.chunks[sent] }
        : { type: 'text_delta', text: completion.chunks[sent] },
    };
    if (!(await sendJson(delta))) return;
  }

  if (!(await sendJson({ type: 'content_block_stop', index: 0 }))) return;
  const finalDelta = {
    type: 'message_delta',
    delta: { stop_reason: completion.stopReason, stop_sequence: null },
    usage: { output_tokens: total },
  };
  if (!(await sendJson(finalDelta))) return;
  if (!(await sendJson({ type: 'message_stop' }))) return;
  response.end();
}
