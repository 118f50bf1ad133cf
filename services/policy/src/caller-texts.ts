/** One piece of text a caller sent, readable and replaceable in place inside the parsed body. */
export interface TextSlot {
  readonly text: string;
  replace(text: string): void;
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

const isObject = (value: Json | undefined): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function slot(holder: JsonObject | Json[], key: string | number): TextSlot {
  const container = holder as Record<string | number, Json>;
  return {
    get text() {
      return container[key] as string;
    },
    replace(text) {
      container[key] = text;
    },
  };
}

/** Every string inside a JSON value (tool inputs), at any depth. */
function stringsIn(value: Json, slots: TextSlot[]): void {
  if (Array.isArray(value)) {
    value.forEach((item, index) =>
      typeof item === 'string' ? slots.push(slot(value, index)) : stringsIn(item, slots),
    );
  } else if (isObject(value)) {
    for (const [key, item] of Object.entries(value)) {
      if (typeof item === 'string') slots.push(slot(value, key));
      else stringsIn(item, slots);
    }
  }
}

/** A document's text: a plain-text source's data, a content source's string or blocks; base64 and URL sources have none. */
function documentTexts(block: JsonObject, slots: TextSlot[]): void {
  const source = block.source;
  if (!isObject(source)) return;
  if (source.type === 'text' && typeof source.data === 'string') slots.push(slot(source, 'data'));
  else if (source.type === 'content') {
    if (typeof source.content === 'string') slots.push(slot(source, 'content'));
    else if (Array.isArray(source.content)) blockTexts(source.content, slots);
  }
}

/**
 * Text blocks' text; tool_result content (string or blocks); string values of tool_use input; the
 * thinking text of thinking blocks sent back; documents' text. Images, base64 and URL sources and
 * redacted thinking are data, not text, and stay as they are.
 */
function blockTexts(blocks: Json[], slots: TextSlot[]): void {
  for (const block of blocks) {
    if (!isObject(block)) continue;
    if (block.type === 'text' && typeof block.text === 'string') slots.push(slot(block, 'text'));
    else if (block.type === 'tool_result') {
      if (typeof block.content === 'string') slots.push(slot(block, 'content'));
      else if (Array.isArray(block.content)) blockTexts(block.content, slots);
    } else if (block.type === 'tool_use' && block.input !== undefined) stringsIn(block.input, slots);
    else if (block.type === 'thinking' && typeof block.thinking === 'string') slots.push(slot(block, 'thinking'));
    else if (block.type === 'document') documentTexts(block, slots);
  }
}

/**
 * Every text a caller sends in a Messages (or count_tokens) body: `system` (string or text blocks),
 * message text (string or text blocks), `tool_result` content, the string values inside `tool_use`
 * input, thinking text and plain-text documents. Other fields (model, tool definitions, images,
 * binary documents, metadata) are not personal text to transform.
 */
export function callerTexts(body: JsonObject): TextSlot[] {
  const slots: TextSlot[] = [];
  if (typeof body.system === 'string') slots.push(slot(body, 'system'));
  else if (Array.isArray(body.system)) blockTexts(body.system, slots);
  if (Array.isArray(body.messages)) {
    for (const message of body.messages) {
      if (!isObject(message)) continue;
      if (typeof message.content === 'string') slots.push(slot(message, 'content'));
      else if (Array.isArray(message.content)) blockTexts(message.content, slots);
    }
  }
  return slots;
}

export type { JsonObject };
