import { err, gatewayError, ok } from '@gw/errors';
import type { GatewayError, Result } from '@gw/errors';
import { isJsonObject, noUsage } from '../../completion';
import type { JsonObject, TokenUsage } from '../../completion';
import { malformedUpstreamMessage } from '../../upstream-errors';
import { errorOfInBandError, upstreamErrorOf } from './errors';

/**
 * A chat completion (or its pieces) as an Anthropic Message. Pure; shared with the stream
 * translator (stream.ts).
 */

/** What translating an answer needs of the call it answers. */
export interface AnswerContext {
  /** The model alias the caller asked for, named in the Message instead of the upstream's id. */
  model: string;
  /**
   * Whether the caller turned extended thinking on: then the reasoning the upstream sends
   * (`reasoning_content`, or `reasoning`) becomes thinking blocks; otherwise it is left out, as
   * the Messages API sends no thinking unasked. Either way it is counted in the output tokens.
   */
  thinking: boolean;
  /** The router's input-token estimate: message_start's count, and the input when the upstream reports no usage. */
  estimatedInputTokens: number;
}

/** Whether a Messages request turns extended thinking on (`thinking.type` `enabled` or `adaptive`). */
export function thinkingRequested(body: JsonObject): boolean {
  return isJsonObject(body.thinking) && (body.thinking.type === 'enabled' || body.thinking.type === 'adaptive');
}

/** The reasoning text of a message or delta: vLLM's `reasoning_content`, or `reasoning` (newer vLLM, OpenRouter). */
export function reasoningOf(message: JsonObject): string {
  if (typeof message.reasoning_content === 'string') return message.reasoning_content;
  return typeof message.reasoning === 'string' ? message.reasoning : '';
}

/**
 * A thinking block from the upstream's reasoning. Its signature is empty: the upstream signs
 * nothing, and the gateway does not pretend to (docs/decisions.md).
 */
export function thinkingBlock(thinking: string): JsonObject {
  return { type: 'thinking', thinking, signature: '' };
}

export type StopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use' | 'refusal';

export interface Stop {
  reason: StopReason;
  sequence: string | null;
}

export const malformed = (): GatewayError => gatewayError('api_error', malformedUpstreamMessage);

const invalidArguments = (): GatewayError =>
  gatewayError('api_error', 'The model service sent tool arguments that are not a JSON object. Retry once.');

/** `msg_` and the upstream's id without its `chatcmpl-` prefix; `fallback` when it sent none. */
export function messageIdOf(upstreamId: unknown, fallback: string): string {
  const id = typeof upstreamId === 'string' ? upstreamId.replace(/^chatcmpl-/, '').replace(/[^A-Za-z0-9_-]/g, '') : '';
  return `msg_${id === '' ? fallback : id}`;
}

/** The tool call's id, `toolu_`-prefixed unless it has the prefix; one derived from the message when it has none. */
export function toolUseIdOf(callId: unknown, messageId: string, position: number): string {
  if (typeof callId === 'string' && callId !== '') return callId.startsWith('toolu_') ? callId : `toolu_${callId}`;
  return `toolu_${messageId.replace(/^msg_/, '')}_${position}`;
}

function count(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
}

/**
 * A wire `usage` as token counts: input = prompt_tokens less the cached ones, output =
 * completion_tokens, cache reads = prompt_tokens_details.cached_tokens. Undefined when there is none.
 */
export function usageOf(wire: unknown): TokenUsage | undefined {
  if (!isJsonObject(wire)) return undefined;
  const prompt = count(wire.prompt_tokens);
  const completion = count(wire.completion_tokens);
  if (prompt === undefined && completion === undefined) return undefined;
  const details = wire.prompt_tokens_details;
  const cached = Math.min(prompt ?? 0, (isJsonObject(details) ? count(details.cached_tokens) : undefined) ?? 0);
  return {
    inputTokens: (prompt ?? 0) - cached,
    outputTokens: completion ?? 0,
    cacheReadInputTokens: cached,
    cacheCreationInputTokens: 0,
  };
}

/** The usage object of an Anthropic Message. */
export function wireUsage(usage: TokenUsage): JsonObject {
  return {
    input_tokens: usage.inputTokens,
    output_tokens: usage.outputTokens,
    cache_creation_input_tokens: usage.cacheCreationInputTokens,
    cache_read_input_tokens: usage.cacheReadInputTokens,
  };
}

/**
 * `finish_reason` as `stop_reason`: stop → end_turn, or stop_sequence when the upstream says which
 * stop string matched (vLLM's `stop_reason`); length → max_tokens; tool_calls / function_call →
 * tool_use (also when tool calls came with a plain stop); content_filter → refusal. TGI's
 * `eos_token` / `stop_sequence` read as stop.
 */
export function stopOf(finishReason: unknown, matched: unknown, calledTools: boolean): Stop {
  switch (finishReason) {
    case 'length':
      return { reason: 'max_tokens', sequence: null };
    case 'tool_calls':
    case 'function_call':
      return { reason: 'tool_use', sequence: null };
    case 'content_filter':
      return { reason: 'refusal', sequence: null };
    default:
      if (calledTools) return { reason: 'tool_use', sequence: null };
      if (typeof matched === 'string' && matched !== '') return { reason: 'stop_sequence', sequence: matched };
      return { reason: 'end_turn', sequence: null };
  }
}

/** Tool arguments (a JSON string) as the tool_use input; "" is no arguments. */
export function inputOfArguments(text: string): Result<JsonObject> {
  if (text.trim() === '') return ok({});
  try {
    const input: unknown = JSON.parse(text);
    return isJsonObject(input) ? ok(input) : err(invalidArguments());
  } catch {
    return err(invalidArguments());
  }
}

/** The choice the router asked for (it never asks for more than one). */
export function firstChoice(value: JsonObject): JsonObject | undefined {
  if (!Array.isArray(value.choices)) return undefined;
  const choices = value.choices.filter(isJsonObject);
  return choices.find((choice) => choice.index === 0 || choice.index === undefined) ?? choices[0];
}

/** A content that is a string, or text parts, as text. */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part: unknown) => (isJsonObject(part) && typeof part.text === 'string' ? part.text : ''))
    .join('');
}

function toolUseBlocks(message: JsonObject, messageId: string): Result<JsonObject[]> {
  const calls: JsonObject[] = Array.isArray(message.tool_calls) ? message.tool_calls.filter(isJsonObject) : [];
  // The deprecated single function call of older servers.
  if (calls.length === 0 && isJsonObject(message.function_call)) calls.push({ function: message.function_call });
  const blocks: JsonObject[] = [];
  for (const [position, call] of calls.entries()) {
    const fn = call.function;
    if (!isJsonObject(fn) || typeof fn.name !== 'string' || fn.name === '') return err(malformed());
    const input = inputOfArguments(typeof fn.arguments === 'string' ? fn.arguments : '');
    if (!input.ok) return input;
    blocks.push({ type: 'tool_use', id: toolUseIdOf(call.id, messageId, position), name: fn.name, input: input.value });
  }
  return ok(blocks);
}

export interface TranslatedMessage {
  message: JsonObject;
  usage: TokenUsage;
}

/**
 * A non-streamed chat completion body as an Anthropic Message naming the caller's alias: the
 * reasoning as a thinking block (when asked for), its text, then a tool_use block per tool call, the
 * stop reason and the usage (the input estimate when the upstream reports none). An error body is that error; anything else that is not
 * a completion is api_error.
 */
export function toAnthropicMessage(body: string, fallbackId: string, answer: AnswerContext): Result<TranslatedMessage> {
  let value: unknown;
  try {
    value = JSON.parse(body) as unknown;
  } catch {
    return err(malformed());
  }
  const reported = upstreamErrorOf(value);
  if (reported !== undefined) return err(errorOfInBandError(reported));
  if (!isJsonObject(value)) return err(malformed());
  const choice = firstChoice(value);
  const message = choice?.message;
  if (choice === undefined || !isJsonObject(message)) return err(malformed());

  const id = messageIdOf(value.id, fallbackId);
  const tools = toolUseBlocks(message, id);
  if (!tools.ok) return tools;
  // A refusal (OpenAI's `refusal` field) is the answer's text when there is no other.
  const text = textOf(message.content) || (typeof message.refusal === 'string' ? message.refusal : '');
  const reasoning = answer.thinking ? reasoningOf(message) : '';
  const content: JsonObject[] = [
    ...(reasoning === '' ? [] : [thinkingBlock(reasoning)]),
    ...(text === '' ? [] : [{ type: 'text', text }]),
    ...tools.value,
  ];
  const stop = stopOf(choice.finish_reason, choice.stop_reason, tools.value.length > 0);
  const usage = usageOf(value.usage) ?? { ...noUsage, inputTokens: answer.estimatedInputTokens };
  return ok({
    message: {
      id,
      type: 'message',
      role: 'assistant',
      model: answer.model,
      content,
      stop_reason: stop.reason,
      stop_sequence: stop.sequence,
      usage: wireUsage(usage),
    },
    usage,
  });
}
