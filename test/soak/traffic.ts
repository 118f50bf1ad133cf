import { model } from '../chaos/load';
import { pace } from '@gw/testing';

/** How one soak request ended, as its client saw it. */
export type Ending =
  /** 200 and the whole answer (non-streamed, or a stream up to message_stop): the billable tokens are known. */
  | 'completed'
  /** 200, a stream the client abandoned after a few deltas: an event is due, its tokens are the gateway's to count. */
  | 'disconnected'
  /** 200, a stream that ended early without message_stop (its key revoked, a fault): an event is due. */
  | 'cut'
  /** An answer other than 200: refused before the model (no event) or an error after it (at most one event). */
  | 'refused'
  /** No answer at all (connection refused or reset): the gateway may or may not have an event for it. */
  | 'no-answer';

export interface Outcome {
  ending: Ending;
  /** The request id (the usage event's id); absent when no answer came. */
  requestId?: string;
  status?: number;
  /** For 'refused': the error type of the envelope. */
  errorType?: string;
  /** For 'completed': input + output tokens as the client saw them (no cache tokens from the simulator). */
  billableTokens?: number;
  /** The account the request was made for. */
  accountId: string;
  kind: RequestKind;
}

export type RequestKind = 'message' | 'stream' | 'disconnect' | 'bad-key' | 'over-limit' | 'revoked-stream' | 'revoked';

const randomInt = (below: number) => Math.floor(Math.random() * below);

function prompt(directives: string): string {
  const words = Array.from({ length: 1 + randomInt(40) }, (_, index) => `word${index}`).join(' ');
  return `${words} ${directives}`;
}

interface SseEvent {
  type?: string;
  message?: { usage?: { input_tokens?: number; output_tokens?: number } };
  usage?: { output_tokens?: number };
}

/**
 * One request to /v1/messages with fetch: non-streamed, streamed to the end, or streamed and abandoned after
 * `abandonAfter` deltas (the client closes the connection). Never throws.
 */
export async function send(
  baseUrl: string,
  key: string,
  accountId: string,
  kind: RequestKind,
  options: { stream: boolean; abandonAfter?: number; directives?: string; maxTokens?: number },
): Promise<Outcome> {
  const controller = new AbortController();
  const timeout = setTimeout(() => controller.abort(), 60_000);
  try {
    const response = await fetch(`${baseUrl}/v1/messages`, {
      method: 'POST',
      signal: controller.signal,
      headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({
        model,
        max_tokens: options.maxTokens ?? 8 + randomInt(120),
        stream: options.stream,
        messages: [{ role: 'user', content: prompt(options.directives ?? `sim:latency=${randomInt(200)}`) }],
      }),
    });
    const requestId = response.headers.get('request-id') ?? undefined;
    if (response.status !== 200) {
      const body = (await response.json().catch(() => ({}))) as { error?: { type?: string } };
      return { ending: 'refused', requestId, status: response.status, errorType: body.error?.type, accountId, kind };
    }
    if (!options.stream) {
      const body = (await response.json()) as { usage: { input_tokens: number; output_tokens: number } };
      const billableTokens = body.usage.input_tokens + body.usage.output_tokens;
      return { ending: 'completed', requestId, status: 200, billableTokens, accountId, kind };
    }
    return await readStream(response, { requestId, accountId, kind, abandonAfter: options.abandonAfter, controller });
  } catch {
    return { ending: 'no-answer', accountId, kind };
  } finally {
    clearTimeout(timeout);
  }
}

async function readStream(
  response: Response,
  context: {
    requestId?: string;
    accountId: string;
    kind: RequestKind;
    abandonAfter?: number;
    controller: AbortController;
  },
): Promise<Outcome> {
  const { requestId, accountId, kind } = context;
  const decoder = new TextDecoder();
  let buffer = '';
  let input = 0;
  let output = 0;
  let deltas = 0;
  let stopped = false;
  const reader = response.body!.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let boundary = buffer.indexOf('\n\n');
      while (boundary >= 0) {
        const block = buffer.slice(0, boundary);
        buffer = buffer.slice(boundary + 2);
        boundary = buffer.indexOf('\n\n');
        const data = block
          .split('\n')
          .filter((line) => line.startsWith('data:'))
          .map((line) => line.slice(5).trim())
          .join('');
        if (data.length === 0) continue;
        const event = JSON.parse(data) as SseEvent;
        if (event.type === 'message_start') input = event.message?.usage?.input_tokens ?? 0;
        if (event.type === 'message_delta') output = event.usage?.output_tokens ?? output;
        if (event.type === 'content_block_delta') deltas += 1;
        if (event.type === 'message_stop') stopped = true;
        if (context.abandonAfter !== undefined && deltas >= context.abandonAfter) {
          context.controller.abort();
          return { ending: 'disconnected', requestId, status: 200, accountId, kind };
        }
      }
    }
  } catch {
    return { ending: 'cut', requestId, status: 200, accountId, kind };
  }
  return stopped
    ? { ending: 'completed', requestId, status: 200, billableTokens: input + output, accountId, kind }
    : { ending: 'cut', requestId, status: 200, accountId, kind };
}

/** Runs `step` over and over on `workers` concurrent loops, at most `ratePerSecond` starts in all, until stopped. */
export async function paced(
  workers: number,
  ratePerSecond: number,
  running: () => boolean,
  step: () => Promise<void>,
): Promise<void> {
  const interval = (1_000 * workers) / ratePerSecond;
  const loop = async () => {
    while (running()) {
      const started = Date.now();
      await step();
      const rest = interval - (Date.now() - started);
      if (rest > 0 && running()) await pace(rest);
    }
  };
  await Promise.all(Array.from({ length: workers }, loop));
}
