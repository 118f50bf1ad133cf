import { gatewayError } from '@gw/errors';
import type { GatewayError } from '@gw/errors';
import { isJsonObject } from '../../completion';
import type { JsonObject } from '../../completion';
import type { AdapterCall } from '../types';
import type { OpenAIAdapterConfig } from './config';
import type {
  ChatCompletionRequest,
  ChatContentPart,
  ChatMessage,
  ChatTextPart,
  ChatTool,
  ChatToolCall,
  ChatToolChoice,
} from './wire';

/**
 * An Anthropic Messages request as an OpenAI chat completions request. Pure: the caller's body in,
 * the upstream's body out.
 *
 * | Messages                                  | chat completions                                                  |
 * | ----------------------------------------- | ----------------------------------------------------------------- |
 * | `model`                                   | the pool's upstream model                                         |
 * | `system` (string or text blocks)          | a leading `system` message (blocks joined with "\n")              |
 * | user text / image blocks                  | `user` content: a string for one text block, else parts           |
 * | user `tool_result` blocks                 | `tool` messages, in order, before the rest of that user turn      |
 * | assistant text / `tool_use` blocks        | `assistant` content and `tool_calls` (arguments as a JSON string) |
 * | `tools` (custom tools)                    | `tools: [{type: "function", function: {name, description, parameters}}]` |
 * | `tool_choice` auto / any / tool / none    | "auto" / "required" / {type: "function", function: {name}} / "none" |
 * | `disable_parallel_tool_use: true`         | `parallel_tool_calls: false`                                      |
 * | `max_tokens`, `temperature`, `top_p`      | the same                                                          |
 * | `stop_sequences`                          | `stop`                                                            |
 * | `stream: true`                            | `stream: true` (+ `stream_options.include_usage` when configured) |
 * | `metadata.user_id`                        | `user`                                                            |
 *
 * Dropped, having no equivalent: `top_k`, `thinking`, `service_tier`, `cache_control`, citations,
 * `output_config`, `container`, `inference_geo`; assistant `thinking` / `redacted_thinking` blocks.
 *
 * Refused (`invalid_request_error` naming the field): images when the config says the upstream
 * takes none, images by `file_id`, documents other than plain text, images inside tool results,
 * server tools, and any other block type.
 */

/** The upstream body, and the first part it could not carry (left out of `request`), if any. */
export interface TranslatedRequest {
  request: ChatCompletionRequest;
  refusal?: GatewayError;
}

const notSupported = 'is not supported by the upstream serving this model';

/** Collects the first refusal; translation goes on so that `request` is whatever can be carried. */
class Refusals {
  first: GatewayError | undefined;

  refuse(field: string, reason: string): void {
    this.first ??= gatewayError('invalid_request_error', `${field}: ${reason}`);
  }
}

interface Context {
  config: OpenAIAdapterConfig;
  refusals: Refusals;
}

function blockType(block: JsonObject): string {
  return typeof block.type === 'string' ? block.type : '(no type)';
}

/** Text parts as the upstream's content: one text part as a plain string, which every server takes. */
function contentOf<P extends ChatContentPart>(parts: P[]): string | P[] {
  if (parts.length === 0) return '';
  const [only] = parts;
  return parts.length === 1 && only?.type === 'text' ? only.text : parts;
}

/**
 * An image block as an `image_url` part: a data URL for a base64 source, the URL for a url source.
 * Translated even when the config refuses images, so that a router that does not check
 * (`checkRequest`) leaves the decision to the upstream rather than dropping the image silently.
 */
function imagePart(block: JsonObject, field: string, context: Context): ChatContentPart | undefined {
  const source = block.source;
  let url: string | undefined;
  if (isJsonObject(source) && source.type === 'base64') {
    if (typeof source.media_type === 'string' && typeof source.data === 'string') {
      url = `data:${source.media_type};base64,${source.data}`;
    }
  } else if (isJsonObject(source) && source.type === 'url') {
    if (typeof source.url === 'string') url = source.url;
  } else if (isJsonObject(source) && source.type === 'file') {
    context.refusals.refuse(field, `an image by file_id ${notSupported}; send it as base64 or a URL.`);
    return undefined;
  }
  if (url === undefined) {
    context.refusals.refuse(field, 'an image block needs a base64 source (media_type, data) or a url source.');
    return undefined;
  }
  if (!context.config.images) context.refusals.refuse(field, `image input ${notSupported}.`);
  return { type: 'image_url', image_url: { url } };
}

/** A plain-text document as text; any other document has no equivalent. */
function documentPart(block: JsonObject, field: string, context: Context): ChatTextPart | undefined {
  const source = block.source;
  if (isJsonObject(source) && source.type === 'text' && typeof source.data === 'string') {
    return { type: 'text', text: source.data };
  }
  context.refusals.refuse(field, `a document other than plain text ${notSupported}.`);
  return undefined;
}

/** A tool result's content as the `tool` message's: text only. */
function toolResultContent(content: unknown, field: string, context: Context): string | ChatTextPart[] {
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) {
    context.refusals.refuse(`${field}.content`, 'expected a string or an array of content blocks.');
    return '';
  }
  const parts: ChatTextPart[] = [];
  content.forEach((item: unknown, index) => {
    const itemField = `${field}.content.${index}`;
    if (isJsonObject(item) && item.type === 'text' && typeof item.text === 'string') {
      parts.push({ type: 'text', text: item.text });
    } else if (isJsonObject(item) && item.type === 'image') {
      context.refusals.refuse(itemField, `an image inside a tool result ${notSupported}.`);
    } else {
      const type = isJsonObject(item) ? blockType(item) : typeof item;
      context.refusals.refuse(itemField, `"${type}" blocks inside a tool result are not supported by the upstream.`);
    }
  });
  return contentOf(parts);
}

/** A user turn: its tool results as `tool` messages first, in order, then the rest as one `user` message. */
function userMessages(content: unknown, field: string, context: Context): ChatMessage[] {
  if (typeof content === 'string') return [{ role: 'user', content }];
  if (!Array.isArray(content)) {
    context.refusals.refuse(field, 'expected a string or an array of content blocks.');
    return [];
  }
  const results: ChatMessage[] = [];
  const parts: ChatContentPart[] = [];
  content.forEach((block: unknown, index) => {
    const blockField = `${field}.${index}`;
    if (!isJsonObject(block)) {
      context.refusals.refuse(blockField, 'expected a content block.');
      return;
    }
    switch (block.type) {
      case 'text':
        if (typeof block.text === 'string') parts.push({ type: 'text', text: block.text });
        else context.refusals.refuse(blockField, 'a text block needs a string text.');
        return;
      case 'image': {
        const part = imagePart(block, blockField, context);
        if (part) parts.push(part);
        return;
      }
      case 'document': {
        const part = documentPart(block, blockField, context);
        if (part) parts.push(part);
        return;
      }
      case 'tool_result':
        if (typeof block.tool_use_id !== 'string' || block.tool_use_id === '') {
          context.refusals.refuse(blockField, 'a tool_result block needs a tool_use_id.');
          return;
        }
        results.push({
          role: 'tool',
          tool_call_id: block.tool_use_id,
          content: toolResultContent(block.content, blockField, context),
        });
        return;
      default:
        context.refusals.refuse(blockField, `"${blockType(block)}" blocks are not supported by the upstream.`);
    }
  });
  // A turn of tool results only is just those; otherwise the user's own words follow them.
  if (parts.length > 0 || results.length === 0) results.push({ role: 'user', content: contentOf(parts) });
  return results;
}

/** An assistant turn: its text as content, its tool_use blocks as tool_calls. */
function assistantMessage(content: unknown, field: string, context: Context): ChatMessage | undefined {
  if (typeof content === 'string') return { role: 'assistant', content };
  if (!Array.isArray(content)) {
    context.refusals.refuse(field, 'expected a string or an array of content blocks.');
    return undefined;
  }
  let text = '';
  const calls: ChatToolCall[] = [];
  content.forEach((block: unknown, index) => {
    const blockField = `${field}.${index}`;
    if (!isJsonObject(block)) {
      context.refusals.refuse(blockField, 'expected a content block.');
      return;
    }
    switch (block.type) {
      case 'text':
        if (typeof block.text === 'string') text += block.text;
        else context.refusals.refuse(blockField, 'a text block needs a string text.');
        return;
      case 'tool_use':
        if (typeof block.id !== 'string' || typeof block.name !== 'string' || !isJsonObject(block.input)) {
          context.refusals.refuse(blockField, 'a tool_use block needs a string id, a string name and an object input.');
          return;
        }
        calls.push({
          id: block.id,
          type: 'function',
          function: { name: block.name, arguments: JSON.stringify(block.input) },
        });
        return;
      case 'thinking':
      case 'redacted_thinking':
        // The model's own reasoning from an earlier turn: nothing to give an upstream that has none.
        return;
      default:
        context.refusals.refuse(blockField, `"${blockType(block)}" blocks are not supported by the upstream.`);
    }
  });
  if (calls.length === 0) return { role: 'assistant', content: text };
  return { role: 'assistant', content: text === '' ? null : text, tool_calls: calls };
}

/** System text: a string, or text blocks joined with "\n"; undefined when empty. */
function systemText(system: unknown, field: string, context: Context): string | undefined {
  if (system === undefined || system === null) return undefined;
  if (typeof system === 'string') return system === '' ? undefined : system;
  if (!Array.isArray(system)) {
    context.refusals.refuse(field, 'expected a string or an array of text blocks.');
    return undefined;
  }
  const texts: string[] = [];
  system.forEach((block: unknown, index) => {
    if (isJsonObject(block) && block.type === 'text' && typeof block.text === 'string') texts.push(block.text);
    else context.refusals.refuse(`${field}.${index}`, 'expected a text block.');
  });
  return texts.length === 0 ? undefined : texts.join('\n');
}

function chatMessages(message: unknown, index: number, context: Context): ChatMessage[] {
  const field = `messages.${index}`;
  if (!isJsonObject(message)) {
    context.refusals.refuse(field, 'expected a message.');
    return [];
  }
  switch (message.role) {
    case 'user':
      return userMessages(message.content, `${field}.content`, context);
    case 'assistant': {
      const assistant = assistantMessage(message.content, `${field}.content`, context);
      return assistant ? [assistant] : [];
    }
    case 'system': {
      // The newest SDKs allow a system turn among the messages; it stays where it is.
      const text = systemText(message.content, `${field}.content`, context);
      return text === undefined ? [] : [{ role: 'system', content: text }];
    }
    default:
      context.refusals.refuse(`${field}.role`, "expected 'user' or 'assistant'.");
      return [];
  }
}

/** Custom tools as functions; server tools (`web_search_…`, `bash_…`, …) have no equivalent. */
function chatTools(tools: unknown, context: Context): ChatTool[] {
  if (!Array.isArray(tools)) return [];
  const translated: ChatTool[] = [];
  tools.forEach((tool: unknown, index) => {
    const field = `tools.${index}`;
    if (!isJsonObject(tool)) {
      context.refusals.refuse(field, 'expected a tool.');
      return;
    }
    if (tool.type !== undefined && tool.type !== null && tool.type !== 'custom') {
      context.refusals.refuse(field, `the server tool "${String(tool.type)}" ${notSupported}.`);
      return;
    }
    if (typeof tool.name !== 'string' || !isJsonObject(tool.input_schema)) {
      context.refusals.refuse(field, 'a tool needs a string name and an object input_schema.');
      return;
    }
    const definition: ChatTool['function'] = { name: tool.name, parameters: tool.input_schema };
    if (typeof tool.description === 'string') definition.description = tool.description;
    if (typeof tool.strict === 'boolean') definition.strict = tool.strict;
    translated.push({ type: 'function', function: definition });
  });
  return translated;
}

function chatToolChoice(choice: unknown): Pick<ChatCompletionRequest, 'tool_choice' | 'parallel_tool_calls'> {
  if (!isJsonObject(choice)) return {};
  let toolChoice: ChatToolChoice | undefined;
  switch (choice.type) {
    case 'auto':
      toolChoice = 'auto';
      break;
    case 'any':
      toolChoice = 'required';
      break;
    case 'none':
      toolChoice = 'none';
      break;
    case 'tool':
      if (typeof choice.name === 'string') toolChoice = { type: 'function', function: { name: choice.name } };
      break;
  }
  return {
    ...(toolChoice === undefined ? {} : { tool_choice: toolChoice }),
    ...(choice.disable_parallel_tool_use === true ? { parallel_tool_calls: false as const } : {}),
  };
}

function isFiniteNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

/** The caller's Messages body as the upstream's chat completions body (see the table above). */
export function toChatCompletionRequest(
  config: OpenAIAdapterConfig,
  call: Pick<AdapterCall, 'body' | 'stream' | 'upstreamModel'>,
): TranslatedRequest {
  const context: Context = { config, refusals: new Refusals() };
  const { body } = call;
  const messages: ChatMessage[] = [];
  const system = systemText(body.system, 'system', context);
  if (system !== undefined) messages.push({ role: 'system', content: system });
  if (Array.isArray(body.messages)) {
    body.messages.forEach((message: unknown, index) => messages.push(...chatMessages(message, index, context)));
  }

  const request: ChatCompletionRequest = { model: call.upstreamModel, messages };
  if (isFiniteNumber(body.max_tokens)) request.max_tokens = body.max_tokens;
  if (isFiniteNumber(body.temperature)) request.temperature = body.temperature;
  if (isFiniteNumber(body.top_p)) request.top_p = body.top_p;
  if (Array.isArray(body.stop_sequences)) {
    const stop = body.stop_sequences.filter((item: unknown): item is string => typeof item === 'string');
    if (stop.length > 0) request.stop = stop;
  }
  if (call.stream) {
    request.stream = true;
    if (config.streamUsage) request.stream_options = { include_usage: true };
  }
  if (isJsonObject(body.metadata) && typeof body.metadata.user_id === 'string' && body.metadata.user_id !== '') {
    request.user = body.metadata.user_id;
  }
  const tools = chatTools(body.tools, context);
  // tool_choice and parallel_tool_calls are refused by the upstreams without tools.
  if (tools.length > 0) Object.assign(request, { tools }, chatToolChoice(body.tool_choice));
  return context.refusals.first === undefined ? { request } : { request, refusal: context.refusals.first };
}
