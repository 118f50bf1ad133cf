import { createHash } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { err, errorCatalogue, errorTypes, gatewayError, isErrorType, ok } from '@gw/errors';
import type { ErrorType, GatewayError } from '@gw/errors';
import type { CompletionEvent, CompletionRequest, CompletionStream, JsonObject, TokenUsage } from './completion';
import { isJsonObject, parseJsonObject } from './completion';
import { estimateInputTokens } from '@gw/usage';

/**
 * The answer for test keys (docs/decisions.md): deterministic text from a hash of the request, realistic
 * usage, the upstream's wire format, and magic texts that trigger failures. Never touches an
 * upstream. See README.md for the magic texts.
 */

export interface TestStubOptions {
  /** How long `gw-test:slow` takes overall. */
  slowDurationMs: number;
}

export const defaultTestStubOptions: TestStubOptions = { slowDurationMs: 10_000 };

/** Reported as the pool in Started, so that logs and metrics tell stub answers apart. */
export const testStubPool = { poolId: 'test-stub', region: 'test' } as const;

/** How many deltas `gw-test:stream-error` sends before failing. */
const deltasBeforeStreamError = 3;

const words = (
  'the gateway answers with a stub for test keys and never calls any model so every request gets same reply ' +
  'each time it is sent text tokens stream events arrive in order usage counts look real but nothing billed ' +
  'quiet river stone bright window harbour lantern meadow copper signal orchard compass paper garden bridge'
).split(' ');

const base62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Text of the last user message: its string content, or its text blocks joined. */
export function lastUserText(body: JsonObject): string {
  const messages: unknown[] = Array.isArray(body.messages) ? body.messages : [];
  const last = messages.findLast((message) => isJsonObject(message) && message.role === 'user');
  const content = isJsonObject(last) ? last.content : undefined;
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((block) => (isJsonObject(block) && block.type === 'text' && typeof block.text === 'string' ? block.text : ''))
    .join('');
}

/** JSON with object keys sorted, so that the same request hashes the same however it was written. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (isJsonObject(value)) {
    const fields = Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson(value[key])}`);
    return `{${fields.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** An endless deterministic byte sequence: SHA-256 of the seed and a block counter. */
function* hashBytes(seed: string): Generator<number, never> {
  for (let block = 0; ; block += 1) {
    yield* createHash('sha256').update(seed).update(String(block)).digest();
  }
}

/**
 * The stub's completion for a request: 8 to 32 words in sentences, chosen by the hash of the request
 * without its `stream` flag, so that streamed and non-streamed calls read the same. Each chunk is
 * one output token.
 */
export function stubChunks(body: JsonObject): string[] {
  const { stream: _stream, ...withoutStream } = body;
  const bytes = hashBytes(canonicalJson(withoutStream));
  const next = () => bytes.next().value;
  const count = 8 + (next() % 25);
  const chunks: string[] = [];
  let sentenceLeft = 0;
  for (let i = 0; i < count; i += 1) {
    let word = words[next() % words.length]!;
    if (sentenceLeft === 0) {
      word = word[0]!.toUpperCase() + word.slice(1);
      sentenceLeft = 4 + (next() % 8);
    }
    sentenceLeft -= 1;
    if (sentenceLeft === 0 || i === count - 1) {
      word += '.';
      sentenceLeft = 0;
    }
    chunks.push(i === 0 ? word : ` ${word}`);
  }
  return chunks;
}

/** An id shaped like the upstream's (`msg_…`, `toolu_…`), stable for its seed. */
function upstreamId(prefix: string, seed: string): string {
  const digest = createHash('sha256').update(seed).digest();
  return `${prefix}${Array.from(digest.subarray(0, 24), (byte) => base62[byte % base62.length]).join('')}`;
}

/** The message id, derived from the request id. */
const messageId = (requestId: string) => upstreamId('msg_', requestId);
/** The tool call id, derived from the request id (and different from the message id). */
const toolUseId = (requestId: string) => upstreamId('toolu_', `tool_use:${requestId}`);

/** The tool `gw-test:tool-use` calls when the request declares none. */
export const defaultStubToolName = 'get_weather';
const defaultStubToolInput: JsonObject = { location: 'London' };
/** The longest piece of the input JSON in one `input_json_delta`. */
const inputJsonPieceLength = 8;

/** A value of a JSON Schema's type for the stub's tool input: the first enum value, else a fixed one. */
function stubValue(schema: unknown, word: string): unknown {
  if (!isJsonObject(schema)) return null;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  switch (schema.type) {
    case 'string':
      return word;
    case 'integer':
    case 'number':
      return 1;
    case 'boolean':
      return true;
    case 'array':
      return [];
    case 'object':
      return {};
    default:
      return null;
  }
}

/**
 * The call `gw-test:tool-use` answers with: the tool named (`gw-test:tool-use:<name>`, or by a forced
 * `tool_choice`) or else the first tool of the request (its name, and one value per property of its
 * `input_schema`), or `get_weather` with `{"location":"London"}` when the request has no tools. Deterministic: string values are words of the stub's list chosen by the
 * request's hash.
 */
export function stubToolCall(body: JsonObject, named?: string): { name: string; input: JsonObject } {
  const tools: unknown[] = Array.isArray(body.tools) ? body.tools : [];
  const offered = tools.filter((candidate) => isJsonObject(candidate) && typeof candidate.name === 'string');
  const tool = offered.find((candidate) => isJsonObject(candidate) && candidate.name === named) ?? offered[0];
  if (!isJsonObject(tool) || typeof tool.name !== 'string') {
    return { name: defaultStubToolName, input: defaultStubToolInput };
  }
  const schema = isJsonObject(tool.input_schema) ? tool.input_schema : {};
  const properties = isJsonObject(schema.properties) ? schema.properties : {};
  const { stream: _stream, ...withoutStream } = body;
  const bytes = hashBytes(canonicalJson(withoutStream));
  const input: JsonObject = {};
  for (const [name, property] of Object.entries(properties)) {
    input[name] = stubValue(property, words[bytes.next().value % words.length]!);
  }
  return { name: tool.name, input };
}

/** The input JSON cut into the pieces of the `input_json_delta` events: at least two. */
export function inputJsonPieces(input: JsonObject): string[] {
  const text = JSON.stringify(input);
  const size = Math.min(inputJsonPieceLength, Math.ceil(text.length / 2));
  const pieces: string[] = [];
  for (let start = 0; start < text.length; start += size) pieces.push(text.slice(start, start + size));
  return pieces;
}

type MagicText =
  | { kind: 'none' }
  | { kind: 'error'; error: GatewayError }
  | { kind: 'stream-error' }
  | { kind: 'tool-use'; tool?: string }
  | { kind: 'slow' };

/** Retryable errors carry a wait, as the real ones do. */
function simulatedError(type: ErrorType): GatewayError {
  const message = `Simulated ${type} for a test key (magic text "gw-test:error:${type}").`;
  return gatewayError(type, message, errorCatalogue[type].shouldRetry ? { retryAfterMs: 1000 } : {});
}

export function magicText(text: string): MagicText {
  const requestedError = /gw-test:error:([a-z_]*)/.exec(text);
  if (requestedError) {
    const type = requestedError[1] ?? '';
    if (isErrorType(type)) return { kind: 'error', error: simulatedError(type) };
    return {
      kind: 'error',
      error: gatewayError(
        'invalid_request_error',
        `Unknown test error type "${type}" in gw-test:error:<type>; use one of: ${errorTypes.join(', ')}.`,
      ),
    };
  }
  if (text.includes('gw-test:stream-error')) return { kind: 'stream-error' };
  const toolUse = /gw-test:tool-use(?::([A-Za-z0-9_-]{1,64}))?/.exec(text);
  if (toolUse) return { kind: 'tool-use', tool: toolUse[1] };
  if (text.includes('gw-test:slow')) return { kind: 'slow' };
  return { kind: 'none' };
}

function json(data: unknown): Uint8Array {
  return Buffer.from(JSON.stringify(data));
}

function sse(data: { type: string; [field: string]: unknown }): CompletionEvent {
  return { kind: 'sse', event: data.type, data: json(data) };
}

/** Waits ms; false when the caller cancelled first. */
async function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  try {
    await delay(ms, undefined, { signal });
    return true;
  } catch {
    return false;
  }
}

/**
 * The tool a `tool_choice` forces, as the upstream honours it: `tool` names one, `any` takes the first
 * tool; undefined for `auto`, `none` or none given.
 */
function forcedToolOf(body: JsonObject): { name?: string } | undefined {
  const choice = body.tool_choice;
  if (!isJsonObject(choice)) return undefined;
  if (choice.type === 'tool' && typeof choice.name === 'string') return { name: choice.name };
  return choice.type === 'any' ? {} : undefined;
}

/** Whether the request turns extended thinking on (`enabled` with a budget, or `adaptive`). */
function thinkingRequested(body: JsonObject): boolean {
  return isJsonObject(body.thinking) && (body.thinking.type === 'enabled' || body.thinking.type === 'adaptive');
}

/** The stub's thinking when asked for: a few words of the request's hash, one output token each. */
export function stubThinking(body: JsonObject): string[] {
  return stubChunks({ ...body, thinking: 'stub' }).slice(0, 6);
}

/**
 * A thinking block's signature: opaque, as the upstream's, and stable for its text, so that a client
 * sending the block back in its next turn sends what it got.
 */
export function stubThinkingSignature(thinking: string): string {
  return createHash('sha256').update(`test-stub-thinking:${thinking}`).digest('base64');
}

/** Everything the stub's answer depends on, read from the request body once (large bodies on a thread). */
export type StubPlan =
  | { kind: 'refused'; error: GatewayError }
  | {
      kind: 'tool-use';
      model: string;
      inputTokens: number;
      /** With thinking on: its chunks, before the call. */
      thinking: string[];
      name: string;
      input: JsonObject;
    }
  | {
      kind: 'text';
      model: string;
      inputTokens: number;
      /** With thinking on: its chunks, before the text. */
      thinking: string[];
      /** The output tokens, `max_tokens` applied. */
      chunks: string[];
      stopReason: 'max_tokens' | 'end_turn';
      magic: 'none' | 'stream-error' | 'slow';
    };

/** Reads the body into the stub's plan: pure, so that it can run on a worker thread. */
export function planStubAnswer(bodyJson: Uint8Array, requestModel: string): StubPlan {
  const body = parseJsonObject(bodyJson);
  if (body === undefined) {
    return { kind: 'refused', error: gatewayError('invalid_request_error', 'The request body must be a JSON object.') };
  }
  const magic = magicText(lastUserText(body));
  if (magic.kind === 'error') return { kind: 'refused', error: magic.error };
  const model = typeof body.model === 'string' ? body.model : requestModel;
  const inputTokens = estimateInputTokens(body);
  const thinking = thinkingRequested(body) ? stubThinking(body) : [];
  const forced = forcedToolOf(body);
  if (magic.kind === 'tool-use' || forced !== undefined) {
    const named = magic.kind === 'tool-use' ? magic.tool : forced?.name;
    return { kind: 'tool-use', model, inputTokens, thinking, ...stubToolCall(body, named) };
  }
  const allChunks = stubChunks(body);
  const maxTokens = typeof body.max_tokens === 'number' ? Math.max(0, body.max_tokens) : allChunks.length;
  const chunks = allChunks.slice(0, maxTokens);
  const stopReason = chunks.length < allChunks.length ? 'max_tokens' : 'end_turn';
  return { kind: 'text', model, inputTokens, thinking, chunks, stopReason, magic: magic.kind };
}

export function completeWithTestStub(
  request: CompletionRequest,
  signal: AbortSignal,
  options: TestStubOptions = defaultTestStubOptions,
): CompletionStream {
  return answerWithTestStub(request, planStubAnswer(request.body, request.model), signal, options);
}

/** The stub's answer to a planned request, streamed or not. */
export async function* answerWithTestStub(
  request: CompletionRequest,
  plan: StubPlan,
  signal: AbortSignal,
  options: TestStubOptions = defaultTestStubOptions,
): CompletionStream {
  if (plan.kind === 'refused') {
    yield err(plan.error);
    return;
  }
  if (plan.kind === 'tool-use') {
    yield* toolUseAnswer(request, plan);
    return;
  }
  const { chunks, stopReason, model, magic, thinking } = plan;
  const textIndex = thinking.length > 0 ? 1 : 0;
  const usage: TokenUsage = {
    inputTokens: plan.inputTokens,
    outputTokens: thinking.length + chunks.length,
    cacheReadInputTokens: 0,
    cacheCreationInputTokens: 0,
  };
  const wireUsage = (outputTokens: number) => ({
    input_tokens: usage.inputTokens,
    output_tokens: outputTokens,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
  });
  const id = messageId(request.requestId);

  if (!request.stream) {
    if (magic === 'slow' && !(await pause(options.slowDurationMs, signal))) return;
    yield ok({ kind: 'started', ...testStubPool });
    if (magic === 'stream-error') {
      yield err(simulatedStreamError());
      return;
    }
    const message = {
      id,
      type: 'message',
      role: 'assistant',
      model,
      content: [...thinkingContent(thinking), { type: 'text', text: chunks.join('') }],
      stop_reason: stopReason,
      stop_sequence: null,
      usage: wireUsage(usage.outputTokens),
    };
    yield ok({ kind: 'message', json: json(message) });
    yield ok({ kind: 'finished', usage });
    return;
  }

  yield ok({ kind: 'started', ...testStubPool });
  yield ok(
    sse({
      type: 'message_start',
      message: {
        id,
        type: 'message',
        role: 'assistant',
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: wireUsage(Math.min(1, usage.outputTokens)),
      },
    }),
  );
  for (const event of thinkingEvents(thinking)) yield ok(event);
  yield ok(sse({ type: 'content_block_start', index: textIndex, content_block: { type: 'text', text: '' } }));
  yield ok(sse({ type: 'ping' }));
  const paceMs = magic === 'slow' ? options.slowDurationMs / Math.max(1, chunks.length) : 0;
  for (const [index, text] of chunks.entries()) {
    if (magic === 'stream-error' && index === deltasBeforeStreamError) break;
    if (paceMs > 0 && !(await pause(paceMs, signal))) return;
    yield ok(sse({ type: 'content_block_delta', index: textIndex, delta: { type: 'text_delta', text } }));
  }
  if (magic === 'stream-error') {
    yield err(simulatedStreamError());
    return;
  }
  yield ok(sse({ type: 'content_block_stop', index: textIndex }));
  yield ok(
    sse({
      type: 'message_delta',
      delta: { stop_reason: stopReason, stop_sequence: null },
      usage: { output_tokens: usage.outputTokens },
    }),
  );
  yield ok(sse({ type: 'message_stop' }));
  yield ok({ kind: 'finished', usage });
}

/** The thinking block of a whole answer, when thinking is on. */
function thinkingContent(thinking: string[]): JsonObject[] {
  if (thinking.length === 0) return [];
  const text = thinking.join('');
  return [{ type: 'thinking', thinking: text, signature: stubThinkingSignature(text) }];
}

/** The thinking block streamed as the upstream streams it, at index 0: its text, then its signature. */
function* thinkingEvents(thinking: string[]): Generator<CompletionEvent> {
  if (thinking.length === 0) return;
  const signature = stubThinkingSignature(thinking.join(''));
  yield sse({
    type: 'content_block_start',
    index: 0,
    content_block: { type: 'thinking', thinking: '', signature: '' },
  });
  for (const chunk of thinking) {
    yield sse({ type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: chunk } });
  }
  yield sse({ type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature } });
  yield sse({ type: 'content_block_stop', index: 0 });
}

function simulatedStreamError(): GatewayError {
  return gatewayError(
    'overloaded_error',
    'Simulated overloaded_error after the stream began (magic text "gw-test:stream-error").',
  );
}

/**
 * `gw-test:tool-use`: one `tool_use` block and `stop_reason` `tool_use`, as the upstream answers a
 * tool call. Streamed, the input arrives as `input_json_delta` pieces whose concatenation is the
 * input's JSON; each piece is one output token.
 */
async function* toolUseAnswer(
  request: CompletionRequest,
  { name, input, model, inputTokens, thinking }: Extract<StubPlan, { kind: 'tool-use' }>,
): CompletionStream {
  const pieces = inputJsonPieces(input);
  const toolIndex = thinking.length > 0 ? 1 : 0;
  const usage: TokenUsage = {
    inputTokens,
    outputTokens: thinking.length + pieces.length,
    cacheReadInputTokens: 0,
    cacheCreationInputTokens: 0,
  };
  const wireUsage = (outputTokens: number) => ({
    input_tokens: usage.inputTokens,
    output_tokens: outputTokens,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
  });
  const id = messageId(request.requestId);
  const toolUse = { type: 'tool_use', id: toolUseId(request.requestId), name };

  yield ok({ kind: 'started', ...testStubPool });
  if (!request.stream) {
    const message = {
      id,
      type: 'message',
      role: 'assistant',
      model,
      content: [...thinkingContent(thinking), { ...toolUse, input }],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: wireUsage(usage.outputTokens),
    };
    yield ok({ kind: 'message', json: json(message) });
    yield ok({ kind: 'finished', usage });
    return;
  }
  yield ok(
    sse({
      type: 'message_start',
      message: {
        id,
        type: 'message',
        role: 'assistant',
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: wireUsage(1),
      },
    }),
  );
  for (const event of thinkingEvents(thinking)) yield ok(event);
  yield ok(sse({ type: 'content_block_start', index: toolIndex, content_block: { ...toolUse, input: {} } }));
  yield ok(sse({ type: 'ping' }));
  for (const partial of pieces) {
    yield ok(
      sse({
        type: 'content_block_delta',
        index: toolIndex,
        delta: { type: 'input_json_delta', partial_json: partial },
      }),
    );
  }
  yield ok(sse({ type: 'content_block_stop', index: toolIndex }));
  yield ok(
    sse({
      type: 'message_delta',
      delta: { stop_reason: 'tool_use', stop_sequence: null },
      usage: { output_tokens: usage.outputTokens },
    }),
  );
  yield ok(sse({ type: 'message_stop' }));
  yield ok({ kind: 'finished', usage });
}
