import { invalidThinkingSignature } from './signatures';

/** What the simulator needs from a validated Messages request. */
export interface MessagesRequest {
  model: string;
  maxTokens: number;
  stream: boolean;
  /**
   * Text of the last user message: its string content, or its text blocks joined; when that message
   * carries `tool_result` blocks (results of the model's tool calls), their text first, then its text blocks.
   */
  lastUserText: string;
  /** Whether `lastUserText` is the user's own text (not tool results). */
  inputFromUser: boolean;
  /** The name of the first tool offered, if any. */
  firstTool: string | undefined;
  /** The tool `tool_choice` makes the model call (`tool` names it, `any` means the first), if any. */
  forcedTool: string | undefined;
  /** `output_config.format` of type `json_schema`: the answer is JSON of this schema. */
  outputSchema: Record<string, unknown> | undefined;
  /** Whether the request turns extended thinking on (`thinking.type` `enabled` or `adaptive`). */
  thinking: boolean;
  inputTokens: number;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter((block): block is { type: 'text'; text: string } => isRecord(block) && block.type === 'text')
    .map((block) => (typeof block.text === 'string' ? block.text : ''))
    .join('');
}

/** The text of the `tool_result` blocks of a content list, joined; undefined when there are none. */
function toolResultText(content: unknown): string | undefined {
  if (!Array.isArray(content)) return undefined;
  const results = content.filter((block) => isRecord(block) && block.type === 'tool_result') as Record<
    string,
    unknown
  >[];
  if (results.length === 0) return undefined;
  return results.map((block) => contentText(block.content)).join('');
}

function firstToolName(tools: unknown): string | undefined {
  if (!Array.isArray(tools)) return undefined;
  const first: unknown = tools[0];
  return isRecord(first) && typeof first.name === 'string' ? first.name : undefined;
}

function totalStringLength(value: unknown): number {
  if (typeof value === 'string') return value.length;
  if (Array.isArray(value)) return value.reduce((sum: number, item) => sum + totalStringLength(item), 0);
  if (isRecord(value)) return Object.values(value).reduce((sum: number, item) => sum + totalStringLength(item), 0);
  return 0;
}

/**
 * A deterministic stand-in for the upstream's token count: a quarter of the characters of every
 * string in `system`, `messages` and `tools`, rounded up, at least 1.
 */
export function estimateInputTokens(body: Record<string, unknown>): number {
  const characters = totalStringLength(body.system) + totalStringLength(body.messages) + totalStringLength(body.tools);
  return Math.max(1, Math.ceil(characters / 4));
}

/** The fields of a count_tokens request the simulator uses. */
export interface CountTokensRequest {
  model: string;
  /** Text of the last user message, where the `sim:` texts are read. */
  lastUserText: string;
  inputTokens: number;
}

type Checked<T> = { ok: true; value: T } | { ok: false; message: string };

function checkModel(body: Record<string, unknown>): Checked<string> {
  if (body.model === undefined) return { ok: false, message: 'model: Field required' };
  if (typeof body.model !== 'string' || body.model.length === 0) {
    return { ok: false, message: 'model: Input should be a non-empty string' };
  }
  return { ok: true, value: body.model };
}

/** Checks `messages`; the text of the last user message when they are valid. */
function checkMessages(body: Record<string, unknown>): Checked<string> {
  if (body.messages === undefined) return { ok: false, message: 'messages: Field required' };
  if (!Array.isArray(body.messages)) return { ok: false, message: 'messages: Input should be a valid list' };
  const messages: unknown[] = body.messages;
  if (messages.length === 0) return { ok: false, message: 'messages: at least one message is required' };
  for (const [index, message] of messages.entries()) {
    if (!isRecord(message)) return { ok: false, message: `messages.${index}: Input should be a valid dictionary` };
    // `system` mid-conversation is accepted as the real API accepts it (instructions at that point of the turn).
    if (message.role !== 'user' && message.role !== 'assistant' && message.role !== 'system') {
      return { ok: false, message: `messages.${index}.role: Input should be 'user', 'assistant' or 'system'` };
    }
    if (typeof message.content !== 'string' && !Array.isArray(message.content)) {
      return { ok: false, message: `messages.${index}.content: Input should be a valid string or list` };
    }
  }
  return { ok: true, value: newestInput(messages).text };
}

/** The newest input (see `MessagesRequest.lastUserText`). */
function newestInput(messages: unknown[]): { text: string; fromUser: boolean } {
  const lastUser = messages.findLast((message) => isRecord(message) && message.role === 'user') as
    Record<string, unknown> | undefined;
  const results = toolResultText(lastUser?.content);
  const text = contentText(lastUser?.content);
  // Tool results come first; text blocks beside them still carry the caller's words and `sim:` texts.
  if (results !== undefined) return { text: text ? `${results}\n${text}` : results, fromUser: false };
  return { text, fromUser: true };
}

/**
 * `thinking`: absent, `{type: "disabled"}`, `{type: "adaptive"}` or `{type: "enabled", budget_tokens}`
 * with a budget of at least 1,024 below `max_tokens`, as the real API demands. Whether it is on.
 */
function checkThinking(thinking: unknown, maxTokens: number): Checked<boolean> {
  if (thinking === undefined) return { ok: true, value: false };
  if (!isRecord(thinking)) return { ok: false, message: 'thinking: Input should be a valid dictionary' };
  switch (thinking.type) {
    case 'disabled':
      return { ok: true, value: false };
    case 'adaptive':
      return { ok: true, value: true };
    case 'enabled': {
      const budget = thinking.budget_tokens;
      if (typeof budget !== 'number' || !Number.isInteger(budget)) {
        return { ok: false, message: 'thinking.enabled.budget_tokens: Input should be a valid integer' };
      }
      if (budget < 1024) {
        return { ok: false, message: 'thinking.enabled.budget_tokens: Input should be greater than or equal to 1024' };
      }
      if (maxTokens <= budget) {
        return { ok: false, message: '`max_tokens` must be greater than `thinking.budget_tokens`.' };
      }
      return { ok: true, value: true };
    }
    default:
      return { ok: false, message: "thinking.type: Input should be 'enabled', 'adaptive' or 'disabled'" };
  }
}

/** `temperature` and `top_p`: a number from 0 to 1 when present, as the real API demands. */
function checkUnitInterval(body: Record<string, unknown>, field: 'temperature' | 'top_p'): Checked<void> {
  const value = body[field];
  if (value === undefined) return { ok: true, value: undefined };
  if (typeof value !== 'number') return { ok: false, message: `${field}: Input should be a valid number` };
  if (value < 0 || value > 1) return { ok: false, message: `${field}: Input should be less than or equal to 1` };
  return { ok: true, value: undefined };
}

/**
 * `tool_choice`: `auto`, `none`, `any` (some tool, here the first) or `tool` with a name among the tools; the
 * tool the answer must call, if any.
 */
function checkToolChoice(choice: unknown, tools: unknown): Checked<string | undefined> {
  if (choice === undefined) return { ok: true, value: undefined };
  if (!isRecord(choice)) return { ok: false, message: 'tool_choice: Input should be a valid dictionary' };
  switch (choice.type) {
    case 'auto':
    case 'none':
      return { ok: true, value: undefined };
    case 'any':
      return { ok: true, value: firstToolName(tools) };
    case 'tool': {
      const names = Array.isArray(tools) ? tools.filter(isRecord).map((tool) => tool.name) : [];
      if (typeof choice.name !== 'string') return { ok: false, message: 'tool_choice.tool.name: Field required' };
      if (!names.includes(choice.name)) {
        return { ok: false, message: `Tool '${choice.name.slice(0, 64)}' not found in provided tools` };
      }
      return { ok: true, value: choice.name };
    }
    default:
      return { ok: false, message: "tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'" };
  }
}

/** `output_config.format`: a `json_schema` format's schema. */
function outputSchemaOf(body: Record<string, unknown>): Record<string, unknown> | undefined {
  const config = body.output_config;
  const format = isRecord(config) ? config.format : undefined;
  return isRecord(format) && format.type === 'json_schema' && isRecord(format.schema) ? format.schema : undefined;
}

/** Checks the fields the upstream requires, with messages in the upstream's style. */
export function validateMessagesRequest(body: unknown): Checked<MessagesRequest> {
  if (!isRecord(body)) return { ok: false, message: 'Request body must be a JSON object.' };
  const model = checkModel(body);
  if (!model.ok) return model;
  if (body.max_tokens === undefined) return { ok: false, message: 'max_tokens: Field required' };
  if (typeof body.max_tokens !== 'number' || !Number.isInteger(body.max_tokens)) {
    return { ok: false, message: 'max_tokens: Input should be a valid integer' };
  }
  if (body.max_tokens < 0) return { ok: false, message: 'max_tokens: Input should be greater than or equal to 0' };
  if (body.stream !== undefined && typeof body.stream !== 'boolean') {
    return { ok: false, message: 'stream: Input should be a valid boolean' };
  }
  const lastUserText = checkMessages(body);
  if (!lastUserText.ok) return lastUserText;
  const badSignature = invalidThinkingSignature(body.messages as unknown[]);
  if (badSignature !== undefined) return { ok: false, message: badSignature };
  const thinking = checkThinking(body.thinking, body.max_tokens);
  if (!thinking.ok) return thinking;
  for (const field of ['temperature', 'top_p'] as const) {
    const checked = checkUnitInterval(body, field);
    if (!checked.ok) return checked;
  }
  const forcedTool = checkToolChoice(body.tool_choice, body.tools);
  if (!forcedTool.ok) return forcedTool;
  return {
    ok: true,
    value: {
      model: model.value,
      maxTokens: body.max_tokens,
      thinking: thinking.value,
      stream: body.stream === true,
      lastUserText: lastUserText.value,
      inputFromUser: newestInput(body.messages as unknown[]).fromUser,
      firstTool: firstToolName(body.tools),
      forcedTool: forcedTool.value,
      outputSchema: outputSchemaOf(body),
      inputTokens: estimateInputTokens(body),
    },
  };
}

/**
 * Fields of a Messages request that count_tokens does not take; the real API refuses them
 * ("Extra inputs are not permitted"), so a gateway that leaks one is caught here.
 */
export const generationOnlyFields = [
  'max_tokens',
  'metadata',
  'service_tier',
  'stop_sequences',
  'stream',
  'temperature',
  'top_k',
  'top_p',
] as const;

/** Checks a count_tokens body: `model` and `messages` as for Messages, and none of the generation-only fields. */
export function validateCountTokensRequest(body: unknown): Checked<CountTokensRequest> {
  if (!isRecord(body)) return { ok: false, message: 'Request body must be a JSON object.' };
  const model = checkModel(body);
  if (!model.ok) return model;
  const extra = generationOnlyFields.find((field) => field in body);
  if (extra !== undefined) return { ok: false, message: `${extra}: Extra inputs are not permitted` };
  const lastUserText = checkMessages(body);
  if (!lastUserText.ok) return lastUserText;
  return {
    ok: true,
    value: { model: model.value, lastUserText: lastUserText.value, inputTokens: estimateInputTokens(body) },
  };
}
