import { createAnthropic } from '@ai-sdk/anthropic';
import { AIMessage, AIMessageChunk, HumanMessage } from '@langchain/core/messages';
import type { BaseMessage } from '@langchain/core/messages';
import { tool as langchainTool } from '@langchain/core/tools';
import { ChatAnthropic } from '@langchain/anthropic';
import { echoChunks, estimateInputTokens } from '@gw/sim-upstream';
import type { RecordedRequest } from '@gw/sim-upstream';
import { waitUntil } from '@gw/testing';
import { generateText, stepCountIs, streamText, tool as aiTool } from 'ai';
import { z } from 'zod';
import { harness } from './harness';
import { admin, rawRequest } from './http';

/**
 * Agent frameworks' own Anthropic clients (the Vercel AI SDK's provider and LangChain's chat model),
 * configured with the gateway's base URL and a gateway key and nothing else: a whole answer, a
 * streamed answer and a tool round trip each, through a live key to the simulated upstream (which
 * echoes) and through a test key to the deterministic stub.
 */

const h = harness();
const model = 'claude-sonnet-5';
/** Bedrock in Ireland, the first pool of the model for an EU key (deploy/local/gateway.yaml). */
const simUrl = h.simUrls[4]!;

/** A fresh account and key, so that /v1/usage counts this test's calls alone. */
async function freshKey(environment: 'live' | 'test'): Promise<string> {
  const account = await admin<{ id: string }>(h, 'POST', '/accounts', { name: 'agent-frameworks', plan: 'pro' });
  const key = await admin<{ key: string }>(h, 'POST', '/keys', {
    account_id: account.body.id,
    name: 'agent-frameworks',
    environment,
    residency: 'eu',
    privacy_mode: 'off',
  });
  expect(key.status).toBe(201);
  return key.body.key;
}

/** The InvokeModel calls the simulated upstream has received since the last clear, each answered in full. */
async function upstreamCalls(count: number): Promise<RecordedRequest[]> {
  return waitUntil(
    async () => {
      const log = (await (await fetch(`${simUrl}/_sim/requests`)).json()) as RecordedRequest[];
      return log.filter((entry) => /^\/model\/[^/]+\/invoke/.test(entry.path));
    },
    { what: `${count} completed InvokeModel calls at the simulated Bedrock` },
    (calls) => calls.length >= count && calls.every((call) => call.outcome === 'completed'),
  );
}

interface Reported {
  input: number;
  output: number;
}

/**
 * The upstream's usage as the framework reports it, call by call, must be what the simulated upstream
 * computes for the body it received (input) and what the gateway bills (input plus output, request by
 * request, in GET /v1/usage).
 */
async function expectBilled(key: string, calls: RecordedRequest[], reported: Reported[]): Promise<void> {
  expect(reported).toHaveLength(calls.length);
  calls.forEach((call, index) =>
    expect(reported[index]!.input).toBe(estimateInputTokens(call.body as Record<string, unknown>)),
  );
  for (const usage of reported) expect(usage.output).toBeGreaterThan(0);
  const billable = reported.reduce((sum, usage) => sum + usage.input + usage.output, 0);
  const report = await waitUntil(
    async () => {
      const response = await rawRequest(`${h.baseUrl}/v1/usage`, { method: 'GET', headers: { 'x-api-key': key } });
      return JSON.parse(response.body) as {
        tokens: { used: number };
        by_model: { model: string; requests: number; billable_tokens: number }[];
      };
    },
    { what: `${billable} tokens billed in /v1/usage`, timeoutMs: 20_000 },
    (usage) => usage.tokens.used >= billable && usage.by_model[0]?.requests === calls.length,
  );
  expect(report.tokens.used).toBe(billable);
  expect(report.by_model).toEqual([
    { model, requests: calls.length, billable_tokens: billable, cost_gbp: expect.any(Number) },
  ]);
}

type Block = { type: string; text?: string; id?: string; tool_use_id?: string; content?: unknown; input?: unknown };
type Turn = { role: string; content: string | Block[] };

const messagesOf = (call: RecordedRequest) => (call.body as { messages: Turn[] }).messages;
const blocksOf = (turn: Turn): Block[] =>
  typeof turn.content === 'string' ? [{ type: 'text', text: turn.content }] : turn.content;
const lastUserText = (call: RecordedRequest) =>
  blocksOf(messagesOf(call).at(-1)!)
    .map((block) => block.text ?? '')
    .join('');

/**
 * What the upstream received on the second call of a tool round trip: the model's tool_use, then the
 * tool's result for that id, carrying the text the tool returned.
 */
function expectToolRoundTrip(second: RecordedRequest, result: string): void {
  const [, assistant, user] = messagesOf(second);
  expect(assistant!.role).toBe('assistant');
  const toolUse = blocksOf(assistant!).find((block) => block.type === 'tool_use');
  expect(toolUse).toEqual(expect.objectContaining({ id: expect.stringMatching(/^toolu_/) }));
  expect(user!.role).toBe('user');
  const toolResult = blocksOf(user!).find((block) => block.type === 'tool_result');
  expect(toolResult?.tool_use_id).toBe(toolUse!.id);
  expect(JSON.stringify(toolResult!.content)).toContain(result);
}

beforeEach(() => fetch(`${simUrl}/_sim/requests`, { method: 'DELETE' }));

describe('the Vercel AI SDK (@ai-sdk/anthropic)', () => {
  const provider = (apiKey: string) => createAnthropic({ baseURL: `${h.baseUrl}/v1`, apiKey });

  it('gets a whole answer through a live key: the echo of its prompt, billed as the upstream reported', async () => {
    const key = await freshKey('live');
    const prompt = 'Vercel whole answer through the gateway';
    const result = await generateText({ model: provider(key)(model), prompt, maxOutputTokens: 256, maxRetries: 0 });
    expect(result.text).toBe(prompt);
    expect(result.finishReason).toBe('stop');
    const calls = await upstreamCalls(1);
    expect(calls).toHaveLength(1);
    expect(lastUserText(calls[0]!)).toBe(prompt);
    expect(calls[0]!.body).toMatchObject({ anthropic_version: 'bedrock-2023-05-31' });
    await expectBilled(key, calls, [{ input: result.usage.inputTokens!, output: result.usage.outputTokens! }]);
  });

  it('streams an answer through a live key, piece by piece', async () => {
    const key = await freshKey('live');
    const prompt = 'Vercel streamed answer in several words';
    const result = streamText({ model: provider(key)(model), prompt, maxOutputTokens: 256, maxRetries: 0 });
    const pieces: string[] = [];
    for await (const piece of result.textStream) pieces.push(piece);
    expect(pieces.length).toBeGreaterThan(1);
    expect(pieces.join('')).toBe(prompt);
    const usage = await result.usage;
    const calls = await upstreamCalls(1);
    expect(calls[0]!.path).toMatch(/\/invoke-with-response-stream$/);
    expect(lastUserText(calls[0]!)).toBe(prompt);
    await expectBilled(key, calls, [{ input: usage.inputTokens!, output: usage.outputTokens! }]);
  });

  const lookupOrder = (ran: unknown[]) =>
    aiTool({
      description: 'Looks up an order',
      inputSchema: z.object({ echo: z.string() }),
      execute: async (input) => {
        ran.push(input);
        return 'order 42 shipped on Monday';
      },
    });

  it('runs a tool round trip through a live key: the tool runs and its result comes back as the answer', async () => {
    const key = await freshKey('live');
    const ran: unknown[] = [];
    const prompt = 'Where is my order? sim:tool-call';
    const result = await generateText({
      model: provider(key)(model),
      prompt,
      tools: { lookup_order: lookupOrder(ran) },
      stopWhen: stepCountIs(3),
      maxOutputTokens: 256,
      maxRetries: 0,
    });
    expect(ran).toEqual([{ echo: prompt }]);
    expect(result.steps.map((step) => step.finishReason)).toEqual(['tool-calls', 'stop']);
    expect(result.text).toBe('order 42 shipped on Monday');
    const calls = await upstreamCalls(2);
    expect(calls).toHaveLength(2);
    expect((calls[0]!.body as { tools: { name: string }[] }).tools.map((offered) => offered.name)).toEqual([
      'lookup_order',
    ]);
    expectToolRoundTrip(calls[1]!, 'order 42 shipped on Monday');
    await expectBilled(
      key,
      calls,
      result.steps.map((step) => ({ input: step.usage.inputTokens!, output: step.usage.outputTokens! })),
    );
  });

  it('runs a tool round trip through a test key with the stub, and nothing reaches the upstream', async () => {
    const key = await freshKey('test');
    const ran: unknown[] = [];
    const result = await generateText({
      model: provider(key)(model),
      prompt: 'Where is my order? gw-test:tool-use',
      tools: { lookup_order: lookupOrder(ran) },
      stopWhen: stepCountIs(3),
      maxOutputTokens: 256,
      maxRetries: 0,
    });
    expect(ran).toEqual([{ echo: expect.any(String) }]);
    expect(result.steps.map((step) => step.finishReason)).toEqual(['tool-calls', 'stop']);
    expect(result.text.length).toBeGreaterThan(0);
    const log = (await (await fetch(`${simUrl}/_sim/requests`)).json()) as RecordedRequest[];
    expect(log).toEqual([]);
  });
});

describe("LangChain's Anthropic chat model (@langchain/anthropic)", () => {
  const chat = (apiKey: string) =>
    new ChatAnthropic({ model, anthropicApiUrl: h.baseUrl, apiKey, maxTokens: 256, maxRetries: 0 });
  const usageOf = (message: AIMessage): Reported => ({
    input: message.usage_metadata!.input_tokens,
    output: message.usage_metadata!.output_tokens,
  });

  it('gets a whole answer through a live key: the echo of its prompt, billed as the upstream reported', async () => {
    const key = await freshKey('live');
    const prompt = 'LangChain whole answer through the gateway';
    const answer = await chat(key).invoke([new HumanMessage(prompt)]);
    expect(answer.text).toBe(prompt);
    const calls = await upstreamCalls(1);
    expect(calls).toHaveLength(1);
    expect(lastUserText(calls[0]!)).toBe(prompt);
    await expectBilled(key, calls, [usageOf(answer)]);
  });

  it('streams an answer through a live key, chunk by chunk', async () => {
    const key = await freshKey('live');
    const prompt = 'LangChain streamed answer in several words';
    let whole: AIMessageChunk | undefined;
    let textChunks = 0;
    for await (const chunk of await chat(key).stream([new HumanMessage(prompt)])) {
      if (chunk.text !== '') textChunks += 1;
      whole = whole === undefined ? chunk : whole.concat(chunk);
    }
    expect(textChunks).toBeGreaterThan(1);
    expect(whole!.text).toBe(prompt);
    const calls = await upstreamCalls(1);
    expect(calls[0]!.path).toMatch(/\/invoke-with-response-stream$/);
    // LangChain adds message_start's output_tokens to message_delta's, which is already the total:
    // the upstream reported one output token per echoed word, and that is what must be billed.
    const reported = { input: usageOf(whole!).input, output: echoChunks(prompt).length };
    expect(usageOf(whole!).output).toBe(reported.output + 1);
    await expectBilled(key, calls, [reported]);
  });

  const lookupOrder = (ran: unknown[]) =>
    langchainTool(
      async (input: { echo: string }) => {
        ran.push(input);
        return 'order 42 shipped on Monday';
      },
      { name: 'lookup_order', description: 'Looks up an order', schema: z.object({ echo: z.string() }) },
    );

  /** LangChain's tool-calling loop: the model asks, the framework runs the tool, the result goes back. */
  async function roundTrip(key: string, prompt: string, ran: unknown[]) {
    const orders = lookupOrder(ran);
    const withTools = chat(key).bindTools([orders]);
    const conversation: BaseMessage[] = [new HumanMessage(prompt)];
    const first = await withTools.invoke(conversation);
    expect(first.tool_calls).toHaveLength(1);
    conversation.push(first);
    for (const call of first.tool_calls!) conversation.push(await orders.invoke(call));
    const final = await withTools.invoke(conversation);
    return { first, final };
  }

  it('runs a tool round trip through a live key: the tool runs and its result comes back as the answer', async () => {
    const key = await freshKey('live');
    const ran: unknown[] = [];
    const prompt = 'Where is my order? sim:tool-call';
    const { first, final } = await roundTrip(key, prompt, ran);
    expect(ran).toEqual([{ echo: prompt }]);
    expect(final.tool_calls ?? []).toEqual([]);
    expect(final.text).toBe('order 42 shipped on Monday');
    const calls = await upstreamCalls(2);
    expect(calls).toHaveLength(2);
    expectToolRoundTrip(calls[1]!, 'order 42 shipped on Monday');
    await expectBilled(key, calls, [usageOf(first), usageOf(final)]);
  });

  it('answers a test key with the stub: the same text whole and streamed, and a tool round trip', async () => {
    const key = await freshKey('test');
    const prompt = [new HumanMessage('LangChain on a test key')];
    const whole = await chat(key).invoke(prompt);
    let streamed = '';
    for await (const chunk of await chat(key).stream(prompt)) streamed += chunk.text;
    expect(whole.text.length).toBeGreaterThan(0);
    expect(streamed).toBe(whole.text);
    const ran: unknown[] = [];
    const { final } = await roundTrip(key, 'Where is my order? gw-test:tool-use', ran);
    expect(ran).toEqual([{ echo: expect.any(String) }]);
    expect(final.text.length).toBeGreaterThan(0);
    const log = (await (await fetch(`${simUrl}/_sim/requests`)).json()) as RecordedRequest[];
    expect(log).toEqual([]);
  });
});
