import Anthropic from '@anthropic-ai/sdk';
import type { RecordedRequest } from '@gw/sim-upstream';
import { harness } from './harness';
import { admin, counterTotal } from './http';

/**
 * A model served only by an OpenAI-compatible pool (`openai-eu-west`, adapter `openai`), through the
 * whole stack with the official SDK: the gateway speaks chat completions to the simulated upstream
 * and the SDK sees the Anthropic Messages API, plain, streamed and with tools.
 */

const h = harness();
const model = 'llama-4-maverick';
/** The OpenAI-compatible simulator listens beside the Anthropic ones, at the stack's port offset. */
const simUrl = h.simUrls[2]!;

async function keyFor(plan: string, residency: 'uk' | 'eu'): Promise<string> {
  const account = await admin<{ id: string }>(h, 'POST', '/accounts', { name: `openai-${plan}-${residency}`, plan });
  const key = await admin<{ key?: string }>(h, 'POST', '/keys', {
    account_id: account.body.id,
    name: 'openai adapter',
    environment: 'live',
    residency,
    privacy_mode: 'off',
  });
  expect(key.status).toBe(201);
  return key.body.key!;
}

async function upstreamRequests(): Promise<RecordedRequest[]> {
  return (await (await fetch(`${simUrl}/_sim/requests`)).json()) as RecordedRequest[];
}

const weather: Anthropic.Tool = {
  name: 'get_weather',
  description: 'The current weather in a city.',
  input_schema: { type: 'object', properties: { echo: { type: 'string' } } },
};

describe('an OpenAI-compatible upstream behind the Messages API', () => {
  let sdk: Anthropic;

  beforeAll(async () => {
    sdk = new Anthropic({ baseURL: h.baseUrl, apiKey: await keyFor('pro', 'eu'), maxRetries: 0 });
  });
  beforeEach(() => fetch(`${simUrl}/_sim/requests`, { method: 'DELETE' }));

  it('answers messages.create with the echo, having sent chat completions upstream', async () => {
    const text = 'Hello from the OpenAI adapter test';
    const { data: message, response } = await sdk.messages
      .create({ model, max_tokens: 256, system: 'Be brief.', messages: [{ role: 'user', content: text }] })
      .withResponse();
    expect(response.headers.get('x-gateway-region')).toBe('eu-west');
    expect(message).toMatchObject({
      type: 'message',
      role: 'assistant',
      content: [{ type: 'text', text }],
      stop_reason: 'end_turn',
      stop_sequence: null,
    });
    expect(message.id).toMatch(/^msg_/);
    expect(message.usage.input_tokens).toBeGreaterThan(0);
    expect(message.usage.output_tokens).toBe(text.split(' ').length);

    const [upstream, ...others] = await upstreamRequests();
    expect(others).toEqual([]);
    expect(upstream).toMatchObject({ path: '/v1/chat/completions', outcome: 'completed' });
    expect(upstream!.body).toEqual({
      model: 'meta-llama/Llama-4-Maverick',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: text },
      ],
      max_tokens: 256,
    });
  });

  it('streams the same message: messages.stream(...).finalMessage() equals the echo', async () => {
    const params = {
      model,
      max_tokens: 256,
      messages: [{ role: 'user' as const, content: 'one two three four five' }],
    };
    const created = await sdk.messages.create(params);
    const stream = sdk.messages.stream(params);
    const events: string[] = [];
    stream.on('streamEvent', (event) => events.push(event.type));
    const streamed = await stream.finalMessage();
    expect(streamed.content).toEqual(created.content);
    expect(streamed.content).toEqual([expect.objectContaining({ type: 'text', text: 'one two three four five' })]);
    expect(streamed.stop_reason).toBe('end_turn');
    expect(streamed.usage.output_tokens).toBe(5);
    expect(streamed.usage.input_tokens).toBe(created.usage.input_tokens);
    expect(events).toEqual([
      'message_start',
      'content_block_start',
      ...Array<string>(5).fill('content_block_delta'),
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect((await upstreamRequests()).at(-1)!.body).toMatchObject({
      stream: true,
      stream_options: { include_usage: true },
    });
  });

  it('round-trips a tool call: tool_use from the model, tool_result back, a text answer', async () => {
    const question = 'What is the weather in Oslo? sim:tool-call';
    const asked = await sdk.messages.create({
      model,
      max_tokens: 256,
      tools: [weather],
      messages: [{ role: 'user', content: question }],
    });
    expect(asked.stop_reason).toBe('tool_use');
    expect(asked.content).toEqual([
      { type: 'tool_use', id: expect.stringMatching(/^toolu_/), name: 'get_weather', input: { echo: question } },
    ]);
    const toolUse = asked.content[0] as Anthropic.ToolUseBlock;

    // Streamed, the SDK assembles the same call from the input_json_delta fragments.
    const streamed = await sdk.messages
      .stream({ model, max_tokens: 256, tools: [weather], messages: [{ role: 'user', content: question }] })
      .finalMessage();
    expect(streamed.stop_reason).toBe('tool_use');
    expect(streamed.content).toEqual([
      { type: 'tool_use', id: expect.stringMatching(/^toolu_/), name: 'get_weather', input: { echo: question } },
    ]);

    const answered = await sdk.messages.create({
      model,
      max_tokens: 256,
      tools: [weather],
      messages: [
        { role: 'user', content: question },
        { role: 'assistant', content: asked.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUse.id, content: 'Sunny, 21 degrees' }] },
      ],
    });
    expect(answered.stop_reason).toBe('end_turn');
    expect(answered.content).toEqual([expect.objectContaining({ type: 'text', text: 'Sunny, 21 degrees' })]);
    const upstream = (await upstreamRequests()).at(-1)!.body as { messages: unknown[] };
    expect(upstream.messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: toolUse.id,
            type: 'function',
            function: { name: 'get_weather', arguments: JSON.stringify({ echo: question }) },
          },
        ],
      },
      { role: 'tool', tool_call_id: toolUse.id, content: 'Sunny, 21 degrees' },
    ]);
  });

  it('carries the upstream message of a 400, and counts tokens by the estimate', async () => {
    const refused = await sdk.messages
      .create({ model, max_tokens: 16, messages: [{ role: 'user', content: 'sim:error=400' }] })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(Anthropic.BadRequestError);
    expect((refused as InstanceType<typeof Anthropic.BadRequestError>).error).toMatchObject({
      error: { type: 'invalid_request_error', message: 'sim: error status 400 on request' },
    });

    const counted = await sdk.messages.countTokens({ model, messages: [{ role: 'user', content: 'count me please' }] });
    expect(counted.input_tokens).toBeGreaterThan(0);
    expect((await upstreamRequests()).filter((entry) => entry.path !== '/v1/chat/completions')).toEqual([]);
  });

  it('is not served to a UK key: the only pool is in the EU', async () => {
    const uk = new Anthropic({ baseURL: h.baseUrl, apiKey: await keyFor('pro', 'uk'), maxRetries: 0 });
    const refused = await uk.messages
      .create({ model, max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] })
      .catch((error: unknown) => error);
    expect((refused as InstanceType<typeof Anthropic.APIError>).status).toBe(422);
    expect(await upstreamRequests()).toEqual([]);
  });

  it('goes without the betas chat completions cannot carry, naming them in a header and a metric', async () => {
    const dropped = () => counterTotal(h.metricsUrls.router!, 'gateway_upstream_betas_dropped_total');
    const before = await dropped();
    const { response } = await sdk.messages
      .create(
        { model, max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] },
        { headers: { 'anthropic-beta': 'claude-code-20250219,interleaved-thinking-2025-05-14,bad name!' } },
      )
      .withResponse();
    // The header names them as far as they may be told back: caller text cut, and printable only.
    expect(response.headers.get('x-gateway-dropped-betas')).toBe(
      'claude-code-20250219,interleaved-thinking-2025-05-14,bad?name!',
    );
    expect(await dropped()).toBe(before + 3);
    const [sent] = await upstreamRequests();
    expect(sent!.headers['anthropic-beta']).toBeUndefined();
  });
});
