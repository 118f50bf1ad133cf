import Anthropic from '@anthropic-ai/sdk';
import { harness } from './harness';
import { admin } from './http';
import { startIngressReplica } from './replicas';
import type { Replica } from './replicas';

/**
 * A model served by the Anthropic pool, through the whole stack with the official SDK: a tool-use
 * round trip, and SSE pings kept up through the silences of a slow stream.
 */

const h = harness();
/** Served by the Anthropic API alone (Claude Sonnet 5 goes to Bedrock first: regional-providers.test.ts). */
const model = 'claude-haiku-4-5';
/** A second ingress with a short ping interval, on its own ports beside the stack's. */
const pinging = { http: 21091, admin: 21092, metrics: 21093 };
const pingIntervalMs = 300;
/** The stack's quota: 50053 at the e2e port offset of 10000 (deploy/local/src/layout.ts). */
const quotaAddress = h.replica.quotaAddress;

async function keyFor(environment: 'live' | 'test'): Promise<string> {
  const account = await admin<{ id: string }>(h, 'POST', '/accounts', {
    name: `anthropic-${environment}`,
    plan: 'pro',
  });
  const key = await admin<{ key?: string }>(h, 'POST', '/keys', {
    account_id: account.body.id,
    name: 'anthropic adapter',
    environment,
    residency: 'eu',
    privacy_mode: 'off',
  });
  expect(key.status).toBe(201);
  return key.body.key!;
}

const weather: Anthropic.Tool = {
  name: 'get_weather',
  description: 'The current weather in a city.',
  input_schema: { type: 'object', properties: { echo: { type: 'string' } } },
};

describe('the Anthropic pool behind the Messages API', () => {
  let sdk: Anthropic;

  beforeAll(async () => {
    sdk = new Anthropic({ baseURL: h.baseUrl, apiKey: await keyFor('live'), maxRetries: 0 });
  });

  it('round-trips a tool call: a streamed tool_use, tool_result back, a text answer', async () => {
    const question = 'What is the weather in Oslo? sim:tool-call';
    const asked = await sdk.messages
      .stream({ model, max_tokens: 256, tools: [weather], messages: [{ role: 'user', content: question }] })
      .finalMessage();
    expect(asked.stop_reason).toBe('tool_use');
    expect(asked.content).toEqual([
      { type: 'tool_use', id: expect.stringMatching(/^toolu_/), name: 'get_weather', input: { echo: question } },
    ]);
    const toolUse = asked.content[0] as Anthropic.ToolUseBlock;

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
    expect(answered.content).toEqual([expect.objectContaining({ type: 'text' })]);
    expect((answered.content[0] as Anthropic.TextBlock).text).toContain('Sunny, 21 degrees');
  });
});

describe('SSE pings through long silences', () => {
  let ingress: Replica;

  beforeAll(async () => {
    ingress = await startIngressReplica(h, pinging, quotaAddress, { SSE_PING_INTERVAL_MS: String(pingIntervalMs) });
  });
  afterAll(async () => {
    await ingress?.stop();
  });

  it('sends ping events at the configured interval while the deltas are slow', async () => {
    // The stub spreads gw-test:slow over about ten seconds: ten words, about a second apart.
    const content = 'gw-test:slow one two three four five six seven eight nine';
    const response = await fetch(`http://127.0.0.1:${pinging.http}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': await keyFor('test'), 'content-type': 'application/json' },
      body: JSON.stringify({ model, max_tokens: 64, stream: true, messages: [{ role: 'user', content }] }),
    });
    expect(response.status).toBe(200);
    const body = await response.text();
    const events = body
      .split('\n\n')
      .map((block) => /^event: (.*)$/m.exec(block)?.[1])
      .filter((name): name is string => name !== undefined);
    expect(events.at(-1)).toBe('message_stop');
    // Beyond the one ping the upstream sends right after content_block_start.
    const pings = events.filter((name) => name === 'ping').length;
    expect(pings - 1).toBeGreaterThanOrEqual(3);
    // Pings come between the deltas, not only at the end.
    const firstDelta = events.indexOf('content_block_delta');
    const lastDelta = events.lastIndexOf('content_block_delta');
    expect(events.slice(firstDelta, lastDelta).filter((name) => name === 'ping').length).toBeGreaterThan(0);
  }, 30_000);
});
