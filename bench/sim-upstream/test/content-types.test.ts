import { createHash } from 'node:crypto';
import { createParser } from 'eventsource-parser';
import type { EventSourceMessage } from 'eventsource-parser';
import {
  estimateChatInputTokens,
  estimateInputTokens,
  redactedThinkingData,
  startSimUpstream,
  thinkingSignature,
} from '../src';
import type { RunningSimUpstream } from '../src';

/** Extended thinking, cache counts, reasoning and anthropic-beta, as the simulator answers them. */

let sim: RunningSimUpstream;
beforeAll(async () => {
  sim = await startSimUpstream({ host: '127.0.0.1', port: 0 });
});
afterAll(() => sim.close());

const headers = { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' };
const thinking = { type: 'enabled', budget_tokens: 1024 };

function post(body: unknown, extraHeaders: Record<string, string> = {}, path = '/v1/messages') {
  return fetch(`${sim.url}${path}`, {
    method: 'POST',
    headers: { ...headers, ...extraHeaders },
    body: JSON.stringify(body),
  });
}

function events(text: string): { event: string; data: unknown }[] {
  const parsed: EventSourceMessage[] = [];
  createParser({ onEvent: (event) => parsed.push(event) }).feed(text);
  return parsed.map((event) => ({ event: event.event ?? '', data: JSON.parse(event.data) as unknown }));
}

const ask = (text: string, extra: Record<string, unknown> = {}) => ({
  model: 'claude-sim',
  max_tokens: 2048,
  messages: [{ role: 'user', content: text }],
  ...extra,
});

describe('extended thinking', () => {
  it('answers thinking, then the text, not streamed; thinking counts as output', async () => {
    const text = 'think about this';
    const body = ask(text, { thinking });
    const message = (await (await post(body)).json()) as Record<string, unknown>;
    expect(message.content).toEqual([
      { type: 'thinking', thinking: text, signature: thinkingSignature(text) },
      { type: 'text', text },
    ]);
    // Keyed, as the real API's: not a plain hash of the text that anyone could compute.
    expect(thinkingSignature(text)).not.toBe(createHash('sha256').update(text).digest('base64'));
    expect(message.usage).toEqual({
      input_tokens: estimateInputTokens(body),
      output_tokens: 6,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    });
  });

  it('streams redacted_thinking whole, thinking_delta per word and signature_delta before the stop', async () => {
    const text = 'secret sim:redacted-thinking';
    const response = await post(ask(text, { thinking: { type: 'adaptive' }, stream: true }));
    const received = events(await response.text());
    expect(received.map((event) => event.event)).toEqual([
      'message_start',
      'content_block_start',
      'ping',
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(received[1]!.data).toEqual({
      type: 'content_block_start',
      index: 0,
      content_block: { type: 'redacted_thinking', data: redactedThinkingData },
    });
    expect(received.slice(4, 9).map((event) => event.data)).toEqual([
      { type: 'content_block_start', index: 1, content_block: { type: 'thinking', thinking: '', signature: '' } },
      { type: 'content_block_delta', index: 1, delta: { type: 'thinking_delta', thinking: 'secret' } },
      { type: 'content_block_delta', index: 1, delta: { type: 'thinking_delta', thinking: ' sim:redacted-thinking' } },
      { type: 'content_block_delta', index: 1, delta: { type: 'signature_delta', signature: thinkingSignature(text) } },
      { type: 'content_block_stop', index: 1 },
    ]);
    expect(received[9]!.data).toMatchObject({ index: 2, content_block: { type: 'text', text: '' } });
    expect(received[13]!.data).toMatchObject({ usage: { output_tokens: 5 } });
  });

  it('gives no thinking without the parameter, and refuses a budget like the real API', async () => {
    const plain = (await (await post(ask('x sim:redacted-thinking'))).json()) as { content: unknown[] };
    expect(plain.content).toEqual([{ type: 'text', text: 'x sim:redacted-thinking' }]);
    const small = await post(ask('x', { thinking: { type: 'enabled', budget_tokens: 100 } }));
    expect(small.status).toBe(400);
    const over = await post({ ...ask('x', { thinking }), max_tokens: 1024 });
    expect(((await over.json()) as { error: { message: string } }).error.message).toBe(
      '`max_tokens` must be greater than `thinking.budget_tokens`.',
    );
  });

  it('verifies the signature of thinking sent back: its own thinking passes, a changed text or signature does not', async () => {
    const first = (await (await post(ask('think about this', { thinking }))).json()) as { content: unknown[] };
    const turn = (assistant: unknown[]) => ({
      ...ask('and then?', { thinking }),
      messages: [
        { role: 'user', content: 'think about this' },
        { role: 'assistant', content: assistant },
        { role: 'user', content: 'and then?' },
      ],
    });
    expect((await post(turn(first.content))).status).toBe(200);
    const [signed, answer] = first.content as [{ thinking: string; signature: string }, unknown];
    for (const forged of [
      { ...signed, thinking: `${signed.thinking} [EMAIL_1]` },
      { ...signed, signature: 'c2lnbmF0dXJl' },
      { type: 'thinking', thinking: signed.thinking },
    ]) {
      const refused = await post(turn([forged, answer]));
      expect(refused.status).toBe(400);
      expect(await refused.json()).toMatchObject({
        type: 'error',
        error: {
          type: 'invalid_request_error',
          message: 'messages.1.content.0: Invalid `signature` in `thinking` block',
        },
      });
    }
  });
});

describe('cache counts', () => {
  it('reports sim:cache-read and sim:cache-write exactly, streamed in message_start', async () => {
    const body = ask('cached sim:cache-read=1200 sim:cache-write=300', {
      system: [{ type: 'text', text: 'long system', cache_control: { type: 'ephemeral' } }],
    });
    const message = (await (await post(body)).json()) as { usage: unknown };
    expect(message.usage).toEqual({
      input_tokens: estimateInputTokens(body),
      output_tokens: 3,
      cache_creation_input_tokens: 300,
      cache_read_input_tokens: 1200,
    });
    const streamed = events(await (await post({ ...body, stream: true })).text());
    expect(streamed[0]!.data).toMatchObject({
      message: { usage: { cache_creation_input_tokens: 300, cache_read_input_tokens: 1200 } },
    });
  });

  it('reports cached_tokens in chat completions, with prompt_tokens including them', async () => {
    const body = { model: 'm', max_tokens: 64, messages: [{ role: 'user', content: 'hi sim:cache-read=50' }] };
    const response = await fetch(`${sim.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const completion = (await response.json()) as { usage: unknown };
    const prompt = estimateChatInputTokens(body) + 50;
    expect(completion.usage).toEqual({
      prompt_tokens: prompt,
      completion_tokens: 2,
      total_tokens: prompt + 2,
      prompt_tokens_details: { cached_tokens: 50 },
    });
  });
});

describe('sim:reasoning in chat completions', () => {
  const chat = (stream: boolean) =>
    fetch(`${sim.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'm',
        max_tokens: 64,
        stream,
        ...(stream ? { stream_options: { include_usage: true } } : {}),
        messages: [{ role: 'user', content: 'why sim:reasoning' }],
      }),
    });

  it('sends reasoning_content before the answer, counted as completion tokens', async () => {
    const whole = (await (await chat(false)).json()) as {
      choices: { message: Record<string, unknown> }[];
      usage: { completion_tokens: number };
    };
    expect(whole.choices[0]!.message).toMatchObject({
      content: 'why sim:reasoning',
      reasoning_content: 'why sim:reasoning',
    });
    expect(whole.usage.completion_tokens).toBe(4);

    const text = await (await chat(true)).text();
    const deltas = text
      .split('\n\n')
      .filter((line) => line.startsWith('data: {'))
      .map((line) => (JSON.parse(line.slice(6)) as { choices: { delta: unknown }[] }).choices[0]?.delta)
      .filter((delta) => delta !== undefined);
    expect(deltas.slice(1, 5)).toEqual([
      { reasoning_content: 'why' },
      { reasoning_content: ' sim:reasoning' },
      { content: 'why' },
      { content: ' sim:reasoning' },
    ]);
  });
});

describe('anthropic-beta', () => {
  it('accepts known betas, joined or repeated', async () => {
    const response = await post(ask('hi'), { 'anthropic-beta': 'prompt-caching-2024-07-31,pdfs-2024-09-25' });
    expect(response.status).toBe(200);
  });

  it('refuses an unknown beta as the real API does, on count_tokens too', async () => {
    for (const path of ['/v1/messages', '/v1/messages/count_tokens']) {
      const body =
        path === '/v1/messages' ? ask('hi') : { model: 'claude-sim', messages: [{ role: 'user', content: 'hi' }] };
      const response = await post(body, { 'anthropic-beta': 'pdfs-2024-09-25, made-up-2099-01-01' }, path);
      expect(response.status).toBe(400);
      expect(await response.json()).toEqual({
        type: 'error',
        error: {
          type: 'invalid_request_error',
          message:
            'Unexpected value(s) `made-up-2099-01-01` for the `anthropic-beta` header. Please consult our documentation at docs.anthropic.com or try again without the header.',
        },
        request_id: response.headers.get('request-id'),
      });
    }
  });
});
