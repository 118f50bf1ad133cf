/** What the simulator needs from a validated chat completions request. */
export interface ChatRequest {
  model: string;
  /** `max_tokens` or `max_completion_tokens`; undefined when neither is given. */
  maxTokens: number | undefined;
  stream: boolean;
  /** `stream_options.include_usage`: a final chunk with the usage. */
  includeUsage: boolean;
  stop: string[];
  /**
   * The newest input the model answers: the text of the last `user` message, or, when the
   * conversation ends with `tool` messages (results of the model's tool calls), their text joined.
   */
  inputText: string;
  /** Whether `inputText` comes from a user message (not from tool results). */
  inputFromUser: boolean;
  /** The name of the first tool offered, if any. */
  firstTool: string | undefined;
  inputTokens: number;
}

/** A 400: the message, and the parameter it is about (OpenAI's `param`). */
export interface Invalid {
  ok: false;
  message: string;
  param?: string;
}

type Checked<T> = { ok: true; value: T } | Invalid;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function invalid(message: string, param?: string): Invalid {
  return { ok: false, message, param };
}

function totalStringLength(value: unknown): number {
  if (typeof value === 'string') return value.length;
  if (Array.isArray(value)) return value.reduce((sum: number, item) => sum + totalStringLength(item), 0);
  if (isRecord(value)) return Object.values(value).reduce((sum: number, item) => sum + totalStringLength(item), 0);
  return 0;
}

/**
 * The simulator's prompt token count for a chat completions body: a quarter of the characters of
 * every string in `messages` and `tools` (roles, ids and types included), rounded up, at least 1.
 */
export function estimateChatInputTokens(body: Record<string, unknown>): number {
  const characters = totalStringLength(body.messages) + totalStringLength(body.tools);
  return Math.max(1, Math.ceil(characters / 4));
}

/** The top-level fields of OpenAI's chat completions API; anything else is refused, as OpenAI does. */
const knownFields = new Set([
  'model',
  'messages',
  'max_tokens',
  'max_completion_tokens',
  'temperature',
  'top_p',
  'n',
  'stream',
  'stream_options',
  'stop',
  'presence_penalty',
  'frequency_penalty',
  'logit_bias',
  'logprobs',
  'top_logprobs',
  'user',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'response_format',
  'seed',
  'metadata',
  'store',
  'service_tier',
  'reasoning_effort',
  'modalities',
  'prediction',
  'audio',
  'web_search_options',
]);

const roles = ['system', 'developer', 'user', 'assistant', 'tool'];

/** Text of a content: a string, or its text parts joined. */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part) => (isRecord(part) && typeof part.text === 'string' ? part.text : '')).join('');
}

/** Checks a content: a string, or parts of the kinds allowed (`text`, and `image_url` where images are). */
function checkContent(content: unknown, param: string, images: boolean): Invalid | undefined {
  if (typeof content === 'string') return undefined;
  if (!Array.isArray(content)) {
    return invalid(`Invalid type for '${param}': expected one of a string or array of objects.`, param);
  }
  for (const [index, part] of content.entries()) {
    const partParam = `${param}[${index}]`;
    if (!isRecord(part)) return invalid(`Invalid type for '${partParam}': expected an object.`, partParam);
    if (part.type === 'text') {
      if (typeof part.text !== 'string') return invalid(`Missing required parameter: '${partParam}.text'.`, partParam);
    } else if (part.type === 'image_url' && images) {
      if (!isRecord(part.image_url) || typeof part.image_url.url !== 'string') {
        return invalid(`Missing required parameter: '${partParam}.image_url.url'.`, partParam);
      }
    } else {
      return invalid(
        `Invalid value: '${String(part.type)}'. Supported values are: 'text'${images ? ", 'image_url'" : ''}.`,
        `${partParam}.type`,
      );
    }
  }
  return undefined;
}

function checkToolCalls(calls: unknown, param: string): Checked<string[]> {
  if (!Array.isArray(calls)) return invalid(`Invalid type for '${param}': expected an array.`, param);
  const ids: string[] = [];
  for (const [index, call] of calls.entries()) {
    const callParam = `${param}[${index}]`;
    if (!isRecord(call) || typeof call.id !== 'string' || call.type !== 'function' || !isRecord(call.function)) {
      return invalid(`Invalid value for '${callParam}': expected {id, type: 'function', function}.`, callParam);
    }
    if (typeof call.function.name !== 'string' || typeof call.function.arguments !== 'string') {
      return invalid(
        `Invalid value for '${callParam}.function': expected a string name and string arguments.`,
        callParam,
      );
    }
    ids.push(call.id);
  }
  return { ok: true, value: ids };
}

/**
 * Checks `messages` like OpenAI: roles, contents, and that every tool call of an assistant message
 * is answered by `tool` messages right after it (and no `tool` message answers nothing).
 */
function checkMessages(messages: unknown): Invalid | undefined {
  if (messages === undefined) return invalid("Missing required parameter: 'messages'.", 'messages');
  if (!Array.isArray(messages)) return invalid("Invalid type for 'messages': expected an array.", 'messages');
  if (messages.length === 0)
    return invalid("Invalid 'messages': empty array. Expected at least one message.", 'messages');
  let unanswered: string[] = [];
  for (const [index, message] of messages.entries()) {
    const param = `messages[${index}]`;
    if (!isRecord(message)) return invalid(`Invalid type for '${param}': expected an object.`, param);
    if (typeof message.role !== 'string' || !roles.includes(message.role)) {
      return invalid(
        `Invalid value: '${String(message.role)}'. Supported values are: ${roles.map((role) => `'${role}'`).join(', ')}.`,
        `${param}.role`,
      );
    }
    if (message.role !== 'tool' && unanswered.length > 0) {
      return invalid(
        `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${unanswered.join(', ')}`,
        'messages',
      );
    }
    switch (message.role) {
      case 'tool': {
        if (typeof message.tool_call_id !== 'string') {
          return invalid(`Missing required parameter: '${param}.tool_call_id'.`, `${param}.tool_call_id`);
        }
        if (!unanswered.includes(message.tool_call_id)) {
          return invalid(
            "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
            `${param}.role`,
          );
        }
        unanswered = unanswered.filter((id) => id !== message.tool_call_id);
        const problem = checkContent(message.content, `${param}.content`, false);
        if (problem) return problem;
        break;
      }
      case 'assistant': {
        if (message.tool_calls !== undefined) {
          const ids = checkToolCalls(message.tool_calls, `${param}.tool_calls`);
          if (!ids.ok) return ids;
          unanswered = ids.value;
        }
        const withoutContent = message.content === undefined || message.content === null;
        if (withoutContent && unanswered.length === 0) {
          return invalid(`Missing required parameter: '${param}.content'.`, `${param}.content`);
        }
        if (!withoutContent) {
          const problem = checkContent(message.content, `${param}.content`, false);
          if (problem) return problem;
        }
        break;
      }
      default: {
        const problem = checkContent(message.content, `${param}.content`, message.role === 'user');
        if (problem) return problem;
      }
    }
  }
  if (unanswered.length > 0) {
    return invalid(
      `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${unanswered.join(', ')}`,
      'messages',
    );
  }
  return undefined;
}

/** The newest input (see `ChatRequest.inputText`). */
function newestInput(messages: Record<string, unknown>[]): { text: string; fromUser: boolean } {
  const trailingTools: string[] = [];
  for (let index = messages.length - 1; index >= 0 && messages[index]?.role === 'tool'; index -= 1) {
    trailingTools.unshift(textOf(messages[index]?.content));
  }
  if (trailingTools.length > 0) return { text: trailingTools.join(''), fromUser: false };
  const lastUser = messages.findLast((message) => message.role === 'user');
  return { text: textOf(lastUser?.content), fromUser: true };
}

/** Checks `tools` and `tool_choice`; the first tool's name. */
function checkTools(body: Record<string, unknown>): Checked<string | undefined> {
  const { tools, tool_choice: choice } = body;
  const names: string[] = [];
  if (tools !== undefined) {
    if (!Array.isArray(tools)) return invalid("Invalid type for 'tools': expected an array.", 'tools');
    for (const [index, tool] of tools.entries()) {
      const param = `tools[${index}]`;
      if (!isRecord(tool) || tool.type !== 'function' || !isRecord(tool.function)) {
        return invalid(`Invalid value for '${param}': expected {type: 'function', function}.`, param);
      }
      const { name, parameters, description } = tool.function;
      if (typeof name !== 'string' || !/^[a-zA-Z0-9_-]{1,64}$/.test(name)) {
        return invalid(`Invalid '${param}.function.name': expected a string matching '^[a-zA-Z0-9_-]{1,64}$'.`, param);
      }
      if (parameters !== undefined && !isRecord(parameters)) {
        return invalid(`Invalid type for '${param}.function.parameters': expected an object.`, param);
      }
      if (description !== undefined && typeof description !== 'string') {
        return invalid(`Invalid type for '${param}.function.description': expected a string.`, param);
      }
      names.push(name);
    }
  }
  if (choice !== undefined) {
    if (names.length === 0)
      return invalid(
        "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
        'tool_choice',
      );
    const named =
      isRecord(choice) && choice.type === 'function' && isRecord(choice.function) ? choice.function.name : undefined;
    if (
      !['none', 'auto', 'required'].includes(String(choice)) &&
      !(typeof named === 'string' && names.includes(named))
    ) {
      return invalid(
        "Invalid value for 'tool_choice': expected 'none', 'auto', 'required' or a function of 'tools'.",
        'tool_choice',
      );
    }
  }
  if (body.parallel_tool_calls !== undefined) {
    if (typeof body.parallel_tool_calls !== 'boolean')
      return invalid("Invalid type for 'parallel_tool_calls': expected a boolean.", 'parallel_tool_calls');
    if (names.length === 0)
      return invalid(
        "Invalid value for 'parallel_tool_calls': only allowed when 'tools' are specified.",
        'parallel_tool_calls',
      );
  }
  return { ok: true, value: names[0] };
}

function checkRange(body: Record<string, unknown>, field: string, min: number, max: number): Invalid | undefined {
  const value = body[field];
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || value < min || value > max) {
    return invalid(`Invalid '${field}': expected a number from ${min} to ${max}.`, field);
  }
  return undefined;
}

/** Checks a chat completions body like the OpenAI API does (the parts the simulator reads, and unknown fields). */
export function validateChatRequest(body: unknown): Checked<ChatRequest> {
  if (!isRecord(body)) return invalid('The request body must be a JSON object.');
  const unknown = Object.keys(body).find((field) => !knownFields.has(field));
  if (unknown !== undefined) return invalid(`Unrecognized request argument supplied: ${unknown}`, unknown);
  if (typeof body.model !== 'string' || body.model === '') {
    return invalid('you must provide a model parameter', 'model');
  }
  const messagesProblem = checkMessages(body.messages);
  if (messagesProblem) return messagesProblem;
  const messages = body.messages as Record<string, unknown>[];

  let maxTokens: number | undefined;
  for (const field of ['max_tokens', 'max_completion_tokens']) {
    const value = body[field];
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
      return invalid(`Invalid '${field}': integer below minimum value. Expected a value >= 1.`, field);
    }
    maxTokens = value;
  }
  if (body.stream !== undefined && typeof body.stream !== 'boolean') {
    return invalid("Invalid type for 'stream': expected a boolean.", 'stream');
  }
  const stream = body.stream === true;
  if (body.stream_options !== undefined && body.stream_options !== null) {
    if (!stream)
      return invalid("The 'stream_options' parameter is only allowed when 'stream' is enabled.", 'stream_options');
    if (!isRecord(body.stream_options))
      return invalid("Invalid type for 'stream_options': expected an object.", 'stream_options');
  }
  const includeUsage = stream && isRecord(body.stream_options) && body.stream_options.include_usage === true;
  let stop: string[] = [];
  if (typeof body.stop === 'string') stop = [body.stop];
  else if (Array.isArray(body.stop) && body.stop.every((item) => typeof item === 'string'))
    stop = body.stop as string[];
  else if (body.stop !== undefined && body.stop !== null) {
    return invalid("Invalid type for 'stop': expected a string or an array of strings.", 'stop');
  }
  const range = checkRange(body, 'temperature', 0, 2) ?? checkRange(body, 'top_p', 0, 1);
  if (range) return range;
  if (body.user !== undefined && typeof body.user !== 'string')
    return invalid("Invalid type for 'user': expected a string.", 'user');
  const firstTool = checkTools(body);
  if (!firstTool.ok) return firstTool;

  const input = newestInput(messages);
  return {
    ok: true,
    value: {
      model: body.model,
      maxTokens,
      stream,
      includeUsage,
      stop,
      inputText: input.text,
      inputFromUser: input.fromUser,
      firstTool: firstTool.value,
      inputTokens: estimateChatInputTokens(body),
    },
  };
}
