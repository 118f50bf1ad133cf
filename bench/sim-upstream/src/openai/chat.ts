import type { Directives } from '../directives';
import { parseDirectives } from '../directives';
import { echoChunks } from '../echo';
import type { SimExchange } from '../exchange';
import { randomId } from '../ids';
import { sleep } from '../sleep';
import { openAIErrorBody, sendOpenAIError } from './errors';
import type { ChatRequest } from './request';
import { validateChatRequest } from './request';

/** Options of the protocol that apply to every request of a listener. */
export interface OpenAISimOptions {
  /** When set, requests must carry it as `Authorization: Bearer <key>` (or Azure's `api-key`). */
  apiKey?: string;
}

/** `sim:tool-call` in the newest user message (with `tools` offered): answer with a call to the first tool. */
const toolCallPattern = /\bsim:tool-call\b/;
/** `sim:reasoning`: the answer comes after reasoning, as vLLM's reasoning parsers send it (`reasoning_content`). */
const reasoningPattern = /\bsim:reasoning\b/;

/** What the simulated model answers, after max_tokens and the stop strings. */
interface Completion {
  /** With `sim:reasoning`: the reasoning's chunks (the echo too), before the answer; one output token each. */
  reasoningChunks: string[];
  /** Text chunks, or the argument fragments of the tool call; one output token each. */
  chunks: string[];
  toolCall?: { id: string; name: string };
  finishReason: 'stop' | 'length' | 'tool_calls';
  /** The stop string that ended the text (vLLM's `stop_reason`); null otherwise. */
  stopReason: string | null;
}

/** Cuts the text at the first stop string found, like a model that generated it. */
function applyStop(text: string, stop: string[]): { text: string; matched: string | null } {
  let cut: { at: number; matched: string } | undefined;
  for (const sequence of stop) {
    const at = sequence === '' ? -1 : text.indexOf(sequence);
    if (at >= 0 && (cut === undefined || at < cut.at)) cut = { at, matched: sequence };
  }
  return cut === undefined ? { text, matched: null } : { text: text.slice(0, cut.at), matched: cut.matched };
}

function planCompletion(request: ChatRequest): Completion {
  const reasoningChunks = reasoningPattern.test(request.inputText) ? echoChunks(request.inputText) : [];
  return { reasoningChunks, ...planAnswer(request) };
}

function planAnswer(request: ChatRequest): Omit<Completion, 'reasoningChunks'> {
  const limit = request.maxTokens ?? Number.POSITIVE_INFINITY;
  if (request.inputFromUser && request.firstTool !== undefined && toolCallPattern.test(request.inputText)) {
    // The arguments as the model would write them, in word-sized fragments of JSON.
    const chunks = echoChunks(`{"echo": ${JSON.stringify(request.inputText)}}`);
    const toolCall = { id: randomId('call_'), name: request.firstTool };
    return chunks.length > limit
      ? { chunks: chunks.slice(0, limit), toolCall, finishReason: 'length', stopReason: null }
      : { chunks, toolCall, finishReason: 'tool_calls', stopReason: null };
  }
  const stopped = applyStop(request.inputText, request.stop);
  const chunks = echoChunks(stopped.text);
  if (chunks.length > limit) return { chunks: chunks.slice(0, limit), finishReason: 'length', stopReason: null };
  return { chunks, finishReason: 'stop', stopReason: stopped.matched };
}

/**
 * The usage as vLLM reports it: `prompt_tokens` includes the cached ones (`sim:cache-read`), which
 * `prompt_tokens_details.cached_tokens` names; `completion_tokens` includes the reasoning.
 */
function usage(request: ChatRequest, completion: Completion, directives: Directives) {
  const cached = directives.cacheReadTokens;
  const output = completion.reasoningChunks.length + completion.chunks.length;
  return {
    prompt_tokens: request.inputTokens + cached,
    total_tokens: request.inputTokens + cached + output,
    completion_tokens: output,
    prompt_tokens_details: cached > 0 ? { cached_tokens: cached } : null,
  };
}

/** The key, when one is configured: `Authorization: Bearer <key>` or `api-key: <key>`. */
function authorized(exchange: SimExchange, options: OpenAISimOptions): boolean {
  if (options.apiKey === undefined) return true;
  const { authorization, 'api-key': apiKey } = exchange.request.headers;
  return authorization === `Bearer ${options.apiKey}` || apiKey === options.apiKey;
}

/** `POST /v1/chat/completions`: validates like the OpenAI API, then echoes, calls a tool or misbehaves as asked. */
export async function handleChatCompletions(exchange: SimExchange, options: OpenAISimOptions): Promise<void> {
  const { response, requestId } = exchange;
  if (!authorized(exchange, options)) {
    sendOpenAIError(response, requestId, 401, 'Incorrect API key provided.');
    return;
  }
  if (exchange.body.kind !== 'json') {
    sendOpenAIError(response, requestId, 400, 'We could not parse the JSON body of your request.');
    return;
  }
  const validation = validateChatRequest(exchange.body.value);
  if (!validation.ok) {
    sendOpenAIError(response, requestId, 400, validation.message, { param: validation.param });
    return;
  }
  const request = validation.value;
  const parsed = parseDirectives(request.inputText);
  if (!parsed.ok) {
    sendOpenAIError(response, requestId, 400, parsed.message);
    return;
  }
  const directives = parsed.value;
  const completion = planCompletion(request);

  const paceBeforeHeaders = request.stream
    ? 0
    : directives.paceMs * (completion.reasoningChunks.length + completion.chunks.length);
  if (!(await sleep(directives.latencyMs + paceBeforeHeaders, exchange.signal))) return;
  if (directives.errorStatus !== undefined) {
    const headers: Record<string, string> =
      directives.retryAfterSeconds === undefined ? {} : { 'retry-after': String(directives.retryAfterSeconds) };
    const status = directives.errorStatus;
    sendOpenAIError(response, requestId, status, `sim: error status ${status} on request`, { headers });
    return;
  }
  if (request.stream) {
    await streamCompletion(exchange, request, completion, directives);
    return;
  }
  if (directives.dropAfter !== undefined) {
    exchange.drop();
    return;
  }
  const text = completion.toolCall ? null : completion.chunks.join('');
  const toolCalls = completion.toolCall
    ? [
        {
          id: completion.toolCall.id,
          type: 'function',
          function: { name: completion.toolCall.name, arguments: completion.chunks.join('') },
        },
      ]
    : [];
  response.writeHead(200, { 'content-type': 'application/json', 'x-request-id': requestId });
  response.end(
    JSON.stringify({
      id: randomId('chatcmpl-'),
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: request.model,
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: text,
            ...(completion.reasoningChunks.length > 0
              ? { reasoning_content: completion.reasoningChunks.join('') }
              : {}),
            tool_calls: toolCalls,
          },
          logprobs: null,
          finish_reason: completion.finishReason,
          stop_reason: completion.stopReason,
        },
      ],
      usage: usage(request, completion, directives),
    }),
  );
}

async function streamCompletion(
  exchange: SimExchange,
  request: ChatRequest,
  completion: Completion,
  directives: Directives,
): Promise<void> {
  const { response, signal } = exchange;
  /** Writes one whole `data:` event and waits until it has left; false once the client has gone. */
  const send = (data: string): Promise<boolean> =>
    new Promise((resolve) => {
      if (signal.aborted) resolve(false);
      else response.write(`data: ${data}\n\n`, (error) => resolve(!error && !signal.aborted));
    });
  const id = randomId('chatcmpl-');
  const created = Math.floor(Date.now() / 1000);
  // With include_usage, every chunk carries `usage: null` but the last, as OpenAI documents.
  const nullUsage = request.includeUsage ? { usage: null } : {};
  const chunk = (choices: unknown[], extra: Record<string, unknown> = nullUsage) =>
    send(JSON.stringify({ id, object: 'chat.completion.chunk', created, model: request.model, choices, ...extra }));
  const choice = (delta: Record<string, unknown>, finishReason: string | null = null, more = {}) => ({
    index: 0,
    delta,
    logprobs: null,
    finish_reason: finishReason,
    ...more,
  });

  response.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'x-request-id': exchange.requestId,
  });
  const { toolCall } = completion;
  const opening = toolCall
    ? {
        role: 'assistant',
        content: null,
        tool_calls: [{ index: 0, id: toolCall.id, type: 'function', function: { name: toolCall.name, arguments: '' } }],
      }
    : { role: 'assistant', content: '' };
  if (!(await chunk([choice(opening)]))) return;

  // Reasoning first (`delta.reasoning_content`), then the answer; every piece is one counted delta.
  const pieces = [
    ...completion.reasoningChunks.map((piece) => ({ reasoning_content: piece })),
    ...completion.chunks.map((piece) =>
      toolCall ? { tool_calls: [{ index: 0, function: { arguments: piece } }] } : { content: piece },
    ),
  ];
  const total = pieces.length;
  for (let sent = 0; ; sent += 1) {
    if (directives.streamErrorAfter !== undefined && sent === Math.min(directives.streamErrorAfter, total)) {
      // vLLM's mid-stream error: an error object in a data line, the status as its code.
      await send(openAIErrorBody(503, 'Overloaded'));
      response.end();
      return;
    }
    if (directives.dropAfter !== undefined && sent === Math.min(directives.dropAfter, total)) {
      exchange.drop();
      return;
    }
    if (sent === total) break;
    if (!(await sleep(directives.paceMs, signal))) return;
    if (!(await chunk([choice(pieces[sent]!)]))) return;
  }

  if (!(await chunk([choice({}, completion.finishReason, { stop_reason: completion.stopReason })]))) return;
  if (request.includeUsage && !(await chunk([], { usage: usage(request, completion, directives) }))) return;
  if (!(await send('[DONE]'))) return;
  response.end();
}
