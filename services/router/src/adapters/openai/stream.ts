import { err, gatewayError, ok } from '@gw/errors';
import type { GatewayError, Result } from '@gw/errors';
import { isJsonObject } from '../../completion';
import type { JsonObject, TokenUsage } from '../../completion';
import { errorOfInBandError, upstreamErrorOf } from './errors';
import {
  firstChoice,
  inputOfArguments,
  malformed,
  messageIdOf,
  reasoningOf,
  stopOf,
  thinkingBlock,
  toolUseIdOf,
  usageOf,
  wireUsage,
} from './response';
import type { AnswerContext, Stop } from './response';

/** One Anthropic SSE event: its name and its JSON (whose `type` is the name). */
export interface AnthropicEvent {
  event: string;
  data: JsonObject;
}

interface ToolBlock {
  index: number;
  /** The argument fragments so far, to check the whole is a JSON object when the block closes. */
  arguments: string;
}

type OpenBlock =
  | { kind: 'text'; index: number }
  | { kind: 'thinking'; index: number }
  | { kind: 'tool'; index: number; tool: ToolBlock };

const endedEarly = (): GatewayError =>
  gatewayError('api_error', 'The model service ended the stream early. Retry once.');

/**
 * Turns an OpenAI chat completions stream (`data: {chunk}` … `data: [DONE]`) into the Anthropic
 * event order, one upstream chunk at a time, holding nothing back:
 *
 * - `message_start` with the first chunk, naming the caller's alias (usage input_tokens when that
 *   chunk has usage, else the router's estimate: servers report usage only at the end);
 * - reasoning (`reasoning_content` / `reasoning`), when the caller turned thinking on, as a
 *   `thinking` block of `thinking_delta`s (signature empty); otherwise left out, but counted;
 * - per block `content_block_start` (`ping` after the first one only, as the real API does),
 *   `content_block_delta`…, `content_block_stop`: text as `text_delta`; each tool call its own
 *   `tool_use` block whose argument fragments are `input_json_delta`s (the first `""`, as the real
 *   API sends); indices 0, 1, 2… in start order; a block closes when another starts or the choice
 *   finishes;
 * - `message_delta` (stop_reason, cumulative usage) and `message_stop` as soon as the finish reason
 *   and the usage after it are both known, or at `[DONE]` / the end of the body when no usage comes.
 *   Without any usage from the upstream, output_tokens counts the chunks that carried content
 *   (reasoning included) and input_tokens stays the estimate.
 *
 * An error chunk fails the stream with that error; a body that ends before a finish reason or
 * `[DONE]` is api_error.
 */
export class ChatStreamTranslator {
  private readonly fallbackId: string;
  private messageId: string;
  private started = false;
  private stopped = false;
  private blocks = 0;
  private open: OpenBlock | undefined;
  /** Tool calls by the upstream's tool call index. */
  private readonly tools = new Map<number, ToolBlock>();
  private finish: { reason: unknown; matched: unknown } | undefined;
  private usage: TokenUsage | undefined;
  /** Whether the usage known is the final one: reported with or after the finish reason. */
  private finalUsage = false;
  /** Chunks that carried content: the output estimate when the upstream reports no usage. */
  private contentChunks = 0;

  private readonly answer: AnswerContext;

  constructor(fallbackId: string, answer: AnswerContext) {
    this.fallbackId = fallbackId;
    this.answer = answer;
    this.messageId = messageIdOf(undefined, fallbackId);
  }

  /** One `data:` payload: the events it makes, or the failure that ends the stream. */
  accept(data: string): Result<AnthropicEvent[]> {
    const events: AnthropicEvent[] = [];
    if (this.stopped) return ok(events);
    if (data.trim() === '[DONE]') return this.stop(events);
    let chunk: unknown;
    try {
      chunk = JSON.parse(data) as unknown;
    } catch {
      return err(malformed());
    }
    const reported = upstreamErrorOf(chunk);
    if (reported !== undefined) return err(errorOfInBandError(reported));
    if (!isJsonObject(chunk)) return err(malformed());

    if (!this.started) this.start(chunk, events);
    const usage = usageOf(chunk.usage);
    if (usage !== undefined) {
      this.usage = usage;
      if (this.finish !== undefined) this.finalUsage = true;
    }

    const choice = firstChoice(chunk);
    const delta = choice?.delta;
    if (isJsonObject(delta)) {
      let carried = false;
      const reasoning = reasoningOf(delta);
      if (reasoning !== '') {
        if (this.answer.thinking) {
          const step = this.thinking(reasoning, events);
          if (!step.ok) return step;
        }
        carried = true;
      }
      if (typeof delta.content === 'string' && delta.content !== '') {
        const step = this.text(delta.content, events);
        if (!step.ok) return step;
        carried = true;
      }
      const calls: unknown[] = Array.isArray(delta.tool_calls)
        ? delta.tool_calls
        : isJsonObject(delta.tool_calls)
          ? [delta.tool_calls]
          : [];
      for (const call of calls) {
        const step = this.toolCall(call, events);
        if (!step.ok) return step;
        carried ||= step.value;
      }
      if (carried) this.contentChunks += 1;
    }
    if (choice !== undefined && typeof choice.finish_reason === 'string' && this.finish === undefined) {
      this.finish = { reason: choice.finish_reason, matched: choice.stop_reason };
      if (usage !== undefined) this.finalUsage = true;
      const closed = this.closeBlock(events);
      if (!closed.ok) return closed;
    }
    if (this.finish !== undefined && this.finalUsage) return this.stop(events);
    return ok(events);
  }

  /** At the end of the body: the last events and the usage, or api_error when it ended too soon. */
  end(): Result<{ events: AnthropicEvent[]; usage: TokenUsage }> {
    const events: AnthropicEvent[] = [];
    if (!this.stopped) {
      if (this.finish === undefined) return err(endedEarly());
      const stopped = this.stop(events);
      if (!stopped.ok) return stopped;
    }
    return ok({ events, usage: this.finalCounts() });
  }

  private start(chunk: JsonObject, events: AnthropicEvent[]): void {
    this.started = true;
    this.messageId = messageIdOf(chunk.id, this.fallbackId);
    const known = usageOf(chunk.usage);
    events.push({
      event: 'message_start',
      data: {
        type: 'message_start',
        message: {
          id: this.messageId,
          type: 'message',
          role: 'assistant',
          model: this.answer.model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: wireUsage({
            inputTokens: known?.inputTokens ?? this.answer.estimatedInputTokens,
            outputTokens: 0,
            cacheReadInputTokens: known?.cacheReadInputTokens ?? 0,
            cacheCreationInputTokens: 0,
          }),
        },
      },
    });
  }

  /** Starts block `index`; the first block is followed by a ping, as the real API does. */
  private startBlock(contentBlock: JsonObject, events: AnthropicEvent[]): number {
    const index = this.blocks;
    this.blocks += 1;
    events.push({
      event: 'content_block_start',
      data: { type: 'content_block_start', index, content_block: contentBlock },
    });
    if (index === 0) events.push({ event: 'ping', data: { type: 'ping' } });
    return index;
  }

  private delta(index: number, delta: JsonObject, events: AnthropicEvent[]): void {
    events.push({ event: 'content_block_delta', data: { type: 'content_block_delta', index, delta } });
  }

  /** Reasoning after text or a tool call starts a new thinking block. */
  private thinking(thinking: string, events: AnthropicEvent[]): Result<void> {
    if (this.open?.kind !== 'thinking') {
      const closed = this.closeBlock(events);
      if (!closed.ok) return closed;
      this.open = { kind: 'thinking', index: this.startBlock(thinkingBlock(''), events) };
    }
    this.delta(this.open.index, { type: 'thinking_delta', thinking }, events);
    return ok(undefined);
  }

  /** Text after a tool call starts a new text block. */
  private text(text: string, events: AnthropicEvent[]): Result<void> {
    if (this.open?.kind !== 'text') {
      const closed = this.closeBlock(events);
      if (!closed.ok) return closed;
      this.open = { kind: 'text', index: this.startBlock({ type: 'text', text: '' }, events) };
    }
    this.delta(this.open.index, { type: 'text_delta', text }, events);
    return ok(undefined);
  }

  /** One entry of `delta.tool_calls`; true when it carried an argument fragment. */
  private toolCall(call: unknown, events: AnthropicEvent[]): Result<boolean> {
    if (!isJsonObject(call)) return err(malformed());
    const key = typeof call.index === 'number' ? call.index : 0;
    const fn = isJsonObject(call.function) ? call.function : {};
    let tool = this.tools.get(key);
    if (tool === undefined) {
      if (typeof fn.name !== 'string' || fn.name === '') return err(malformed());
      const closed = this.closeBlock(events);
      if (!closed.ok) return closed;
      const id = toolUseIdOf(call.id, this.messageId, this.tools.size);
      tool = { index: this.startBlock({ type: 'tool_use', id, name: fn.name, input: {} }, events), arguments: '' };
      this.tools.set(key, tool);
      this.open = { kind: 'tool', index: tool.index, tool };
      this.delta(tool.index, { type: 'input_json_delta', partial_json: '' }, events);
    }
    const fragment = typeof fn.arguments === 'string' ? fn.arguments : '';
    if (fragment === '') return ok(false);
    // A fragment for a tool call whose block has closed (interleaved calls, which servers do not
    // send in practice) still goes to that block's index, where the SDKs accumulate it.
    tool.arguments += fragment;
    this.delta(tool.index, { type: 'input_json_delta', partial_json: fragment }, events);
    return ok(true);
  }

  /** Closes the open block; a tool block's arguments must then be a JSON object. */
  private closeBlock(events: AnthropicEvent[]): Result<void> {
    const open = this.open;
    if (open === undefined) return ok(undefined);
    events.push({ event: 'content_block_stop', data: { type: 'content_block_stop', index: open.index } });
    this.open = undefined;
    if (open.kind === 'tool') {
      const input = inputOfArguments(open.tool.arguments);
      if (!input.ok) return input;
    }
    return ok(undefined);
  }

  private finalCounts(): TokenUsage {
    return (
      this.usage ?? {
        inputTokens: this.answer.estimatedInputTokens,
        outputTokens: this.contentChunks,
        cacheReadInputTokens: 0,
        cacheCreationInputTokens: 0,
      }
    );
  }

  /** message_delta and message_stop (message_start first if nothing came before `[DONE]`). */
  private stop(events: AnthropicEvent[]): Result<AnthropicEvent[]> {
    if (!this.started) this.start({}, events);
    const closed = this.closeBlock(events);
    if (!closed.ok) return closed;
    const stop: Stop = stopOf(this.finish?.reason, this.finish?.matched, this.tools.size > 0);
    const counts = this.finalCounts();
    const usage: JsonObject =
      this.usage === undefined
        ? { output_tokens: counts.outputTokens }
        : {
            output_tokens: counts.outputTokens,
            input_tokens: counts.inputTokens,
            cache_read_input_tokens: counts.cacheReadInputTokens,
          };
    events.push({
      event: 'message_delta',
      data: { type: 'message_delta', delta: { stop_reason: stop.reason, stop_sequence: stop.sequence }, usage },
    });
    events.push({ event: 'message_stop', data: { type: 'message_stop' } });
    this.stopped = true;
    return ok(events);
  }
}
