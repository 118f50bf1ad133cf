import type { JsonObject } from '../../completion';

/**
 * The OpenAI chat completions wire shapes the adapter writes. What it reads back (completions,
 * chunks, errors) is checked field by field from `unknown`, since every server fills it differently.
 */

export interface ChatTextPart {
  type: 'text';
  text: string;
}

export type ChatContentPart = ChatTextPart | { type: 'image_url'; image_url: { url: string } };

export interface ChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string | ChatContentPart[] }
  | { role: 'assistant'; content: string | null; tool_calls?: ChatToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string | ChatTextPart[] };

export interface ChatTool {
  type: 'function';
  function: { name: string; description?: string; parameters: JsonObject; strict?: boolean };
}

export type ChatToolChoice = 'auto' | 'required' | 'none' | { type: 'function'; function: { name: string } };

export interface ChatCompletionRequest {
  model: string;
  messages: ChatMessage[];
  max_tokens?: number;
  temperature?: number;
  top_p?: number;
  stop?: string[];
  stream?: true;
  stream_options?: { include_usage: true };
  user?: string;
  tools?: ChatTool[];
  tool_choice?: ChatToolChoice;
  parallel_tool_calls?: false;
}
