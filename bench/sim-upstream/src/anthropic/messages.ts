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
import { thinkingSignature } from './signatures';

/** `sim:tool-call` in the newest user message (with `tools` offered): answer with a call to the first tool. */
const toolCallPattern = /\bsim:tool-call\b/;
/** `sim:redacted-thinking` (with thinking on): a `redacted_thinking` block before the thinking. */
const redactedThinkingPattern = /\bsim:redacted-thinking\b/;

/**
 * The `data` of the simulator's `redacted_thinking` block: opaque like the real API's (encrypted
 * reasoning), fixed so that tests can expect it exactly. Counts as one output token.
 */
export const redactedThinkingData =
  'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB5URjIBAg==';

/** What the simulated model answers, after max_tokens: what is emitted and why it stops. */
interface Completion {
  /** With thinking on and `sim:redacted-thinking`: one redacted_thinking block first (one output token). */
  redactedThinking: boolean;
  /** With thinking on: the thinking text's chunks (one output token each), before the answer. */
  thinkingChunks?: string[];
  /** Text chunks, or the `partial_json` fragments of the tool input; one output token each. */
  chunks: string[];
  toolUse?: { id: string; name: string };
  stopReason: 'end_turn' | 'max_tokens' | 'tool_use';
}

/** A value of a JSON Schema holding the echo: its string fields carry the text, every other field a plain value. */
function valueOfSchema(schema: unknown, text: string): unknown {
  if (typeof schema !== 'object' || schema === null) return text;
  const node = schema as Record<string, unknown>;
  if (Array.isArray(node.enum) && node.enum.length > 0) return node.enum[0];
  switch (node.type) {
    case 'object': {
      const properties = (node.properties ?? {}) as Record<string, unknown>;
      return Object.fromEntries(Object.entries(properties).map(([name, field]) => [name, valueOfSchema(field, text)]));
    }
    case 'array':
      return [];
    case 'integer':
    case 'number':
      return 0;
    case 'boolean':
      return false;
    case 'null':
      return null;
    default:
      return text;
  }
}

function planAnswer(request: MessagesRequest): Pick<Completion, 'chunks' | 'toolUse'> {
  const asked = request.inputFromUser && request.firstTool !== undefined && toolCallPattern.test(request.lastUserText);
  // A forced tool_choice is a call whatever the text says, as there.
  const tool = request.forcedTool ?? (asked ? request.firstTool : undefined);
  if (tool !== undefined) {
    // The input as the model would write it, in word-sized fragments of JSON.
    const chunks = echoChunks(`{"echo": ${JSON.stringify(request.lastUserText)}}`);
    return { chunks, toolUse: { id: randomId('toolu_'), name: tool } };
  }
  if (request.outputSchema !== undefined) {
    return { chunks: echoChunks(JSON.stringify(valueOfSchema(request.outputSchema, request.lastUserText))) };
  }
  return { chunks: echoChunks(request.lastUserText) };
}

/**
 * The echo, after its thinking when thinking is on (the thinking text is the echo too, so that a
 * test sees its own words, or their placeholders, come back in it); everything counts against
 * max_tokens in the order it is sent.
 */
function planEcho(request: MessagesRequest): Completion {
  const answer = planAnswer(request);
  const redactedThinking = request.thinking && redactedThinkingPattern.test(request.lastUserText);
  let budget = request.maxTokens - (redactedThinking ? 1 : 0);
  let cut = budget < 0;
  let thinkingChunks: string[] | undefined;
  if (request.thinking) {
    thinkingChunks = echoChunks(request.lastUserText);
    if (thinkingChunks.length > budget) {
      thinkingChunks = thinkingChunks.slice(0, Math.max(0, budget));
      cut = true;
    }
    budget -= thinkingChunks.length;
  }
  let chunks = answer.chunks;
  if (chunks.length > budget) {
    chunks = chunks.slice(0, Math.max(0, budget));
    cut = true;
  }
  const stopReason = cut ? 'max_tokens' : answer.toolUse ? 'tool_use' : 'end_turn';
  return { redactedThinking, thinkingChunks, chunks, toolUse: answer.toolUse, stopReason };
}

/** Output tokens: every chunk sent, and one for a redacted_thinking block. */
function outputTokens(completion: Completion): number {
  return (completion.redactedThinking ? 1 : 0) + (completion.thinkingChunks?.length ?? 0) + completion.chunks.length;
}

function usage(inputTokens: number, outputTokens: number, directives: Directives) {
  return {
    input_tokens: inputTokens,
    output_tokens: outputTokens,
    cache_creation_input_tokens: directives.cacheWriteTokens,
    cache_read_input_tokens: directives.cacheReadTokens,
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
  const paceBeforeHeaders = messagesRequest.stream ? 0 : directives.paceMs * countedDeltas(completion);
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
      content: contentBlocks(completion),
      stop_reason: completion.stopReason,
      stop_sequence: null,
      usage: usage(messagesRequest.inputTokens, outputTokens(completion), directives),
    }),
  );
}

/** The deltas `sim:pace`, `sim:stream-error-after` and `sim:drop-after` count: one per chunk. */
function countedDeltas(completion: Completion): number {
  return (completion.thinkingChunks?.length ?? 0) + completion.chunks.length;
}

/** The whole content of a non-streamed answer: redacted thinking, thinking, then the text or tool call. */
function contentBlocks(completion: Completion): Record<string, unknown>[] {
  const blocks: Record<string, unknown>[] = [];
  if (completion.redactedThinking) blocks.push({ type: 'redacted_thinking', data: redactedThinkingData });
  if (completion.thinkingChunks !== undefined) {
    const thinking = completion.thinkingChunks.join('');
    blocks.push({ type: 'thinking', thinking, signature: thinkingSignature(thinking) });
  }
  const text = completion.chunks.join('');
  if (completion.toolUse === undefined) {
    blocks.push({ type: 'text', text });
    return blocks;
  }
  let input: unknown = {};
  try {
    input = JSON.parse(text);
  } catch {
    // Cut at max_tokens: the real API gives what it could parse; the simulator gives nothing.
  }
  blocks.push({ type: 'tool_use', id: completion.toolUse.id, name: completion.toolUse.name, input });
  return blocks;
}

/** One content block as streamed: its opening, the deltas counted as chunks, and those around them. */
interface StreamedBlock {
  opening: Record<string, unknown>;
  /** Sent before the chunks, not counted (the empty first fragment of a tool input). */
  leading: Record<string, unknown>[];
  chunks: Record<string, unknown>[];
  /** Sent after the chunks, not counted (the signature of a thinking block). */
  trailing: Record<string, unknown>[];
}

function streamedBlocks(completion: Completion): StreamedBlock[] {
  const blocks: StreamedBlock[] = [];
  if (completion.redactedThinking) {
    // The real API sends a redacted block whole in its content_block_start, without deltas.
    const opening = { type: 'redacted_thinking', data: redactedThinkingData };
    blocks.push({ opening, leading: [], chunks: [], trailing: [] });
  }
  if (completion.thinkingChunks !== undefined) {
    const thinking = completion.thinkingChunks.join('');
    blocks.push({
      opening: { type: 'thinking', thinking: '', signature: '' },
      leading: [],
      chunks: completion.thinkingChunks.map((chunk) => ({ type: 'thinking_delta', thinking: chunk })),
      trailing: [{ type: 'signature_delta', signature: thinkingSignature(thinking) }],
    });
  }
  const { toolUse } = completion;
  blocks.push(
    toolUse
      ? {
          opening: { type: 'tool_use', id: toolUse.id, name: toolUse.name, input: {} },
          // The real API opens a tool input with an empty fragment.
          leading: [{ type: 'input_json_delta', partial_json: '' }],
          chunks: completion.chunks.map((chunk) => ({ type: 'input_json_delta', partial_json: chunk })),
          trailing: [],
        }
      : {
          opening: { type: 'text', text: '' },
          leading: [],
          chunks: completion.chunks.map((chunk) => ({ type: 'text_delta', text: chunk })),
          trailing: [],
        },
  );
  return blocks;
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
  const sendDelta = (index: number, delta: Record<string, unknown>) =>
    sendJson({ type: 'content_block_delta', index, delta });

  response.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'request-id': exchange.requestId,
  });
  const output = outputTokens(completion);
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
      usage: usage(request.inputTokens, Math.min(1, output), directives),
    },
  });
  if (!started) return;

  const total = countedDeltas(completion);
  let sent = 0;
  /** Before each counted delta and at the end: the misbehaviour asked for once `sent` deltas are out. */
  const misbehaves = async (): Promise<boolean> => {
    if (directives.streamErrorAfter !== undefined && sent === Math.min(directives.streamErrorAfter, total)) {
      await send('error', errorBody('overloaded_error', 'Overloaded', exchange.requestId));
      response.end();
      return true;
    }
    if (directives.dropAfter !== undefined && sent === Math.min(directives.dropAfter, total)) {
      exchange.drop();
      return true;
    }
    return false;
  };

  for (const [index, block] of streamedBlocks(completion).entries()) {
    if (!(await sendJson({ type: 'content_block_start', index, content_block: block.opening }))) return;
    // The real API pings once, after the first block opens.
    if (index === 0 && !(await sendJson({ type: 'ping' }))) return;
    for (const delta of block.leading) if (!(await sendDelta(index, delta))) return;
    for (const delta of block.chunks) {
      if (await misbehaves()) return;
      if (!(await sleep(directives.paceMs, signal))) return;
      if (!(await sendDelta(index, delta))) return;
      sent += 1;
    }
    if (sent === total && (await misbehaves())) return;
    for (const delta of block.trailing) if (!(await sendDelta(index, delta))) return;
    if (!(await sendJson({ type: 'content_block_stop', index }))) return;
  }

  const finalDelta = {
    type: 'message_delta',
    delta: { stop_reason: completion.stopReason, stop_sequence: null },
    usage: { output_tokens: output },
  };
  if (!(await sendJson(finalDelta))) return;
  if (!(await sendJson({ type: 'message_stop' }))) return;
  response.end();
}
