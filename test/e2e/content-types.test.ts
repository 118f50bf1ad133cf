import { createHash, randomBytes } from 'node:crypto';
import Anthropic from '@anthropic-ai/sdk';
import Redis from 'ioredis';
import {
  echoChunks,
  estimateChatInputTokens,
  estimateInputTokens,
  redactedThinkingData,
  thinkingSignature,
} from '@gw/sim-upstream';
import type { RecordedRequest } from '@gw/sim-upstream';
import { waitUntil } from '@gw/testing';
import { harness } from './harness';
import { admin, rawRequest } from './http';
import { waitForUsageRow } from './usage';

/**
 * What users of the upstream API send every day, through the whole stack with the official SDK and
 * raw HTTP, through both adapters where the protocol allows: extended thinking, prompt caching,
 * documents and images, the model alias in answers, message_start's input count and anthropic-beta.
 * Usage numbers are checked exactly in the response, the usage event (Kafka → metering → Postgres),
 * `/v1/usage` and quota's allowance counter.
 */

const h = harness();
/**
 * The simulators: EU Anthropic pool, the OpenAI-compatible pool and Bedrock in Ireland, the first EU pool
 * of Claude Sonnet 5 (see deploy/local/gateway.yaml).
 */
const simAnthropic = h.simUrls[0]!;
const simOpenAI = h.simUrls[2]!;
const simBedrock = h.simUrls[4]!;
/** Served first by Bedrock in Ireland for the EU tier. */
const sonnet = 'claude-sonnet-5';
/** Served by the EU Anthropic pool under its dated upstream id. */
const haiku = 'claude-haiku-4-5';
const haikuUpstream = 'claude-haiku-4-5-20251001';
/** Served by the OpenAI-compatible pool. */
const llama = 'llama-4-maverick';
const llamaUpstream = 'meta-llama/Llama-4-Maverick';
/** GBP per million tokens, input and output (deploy/local/gateway.yaml). */
const prices: Record<string, { input: number; output: number }> = {
  [sonnet]: { input: 2.4, output: 12 },
  [haiku]: { input: 0.8, output: 4 },
  [llama]: { input: 0.2, output: 0.6 },
};
const thinking = { type: 'enabled' as const, budget_tokens: 1024 };

/** What InvokeModel gets for a Messages body: the same without `model` and `stream`, with Bedrock's version. */
function bedrockBody(params: Record<string, unknown>): Record<string, unknown> {
  const { model: _model, stream: _stream, ...rest } = params;
  return { ...rest, anthropic_version: 'bedrock-2023-05-31' };
}

type PrivacyMode = 'off' | 'flag' | 'redact' | 'tokenise';

interface Account {
  accountId: string;
  key: string;
  sdk: Anthropic;
}

async function liveAccount(privacyMode: PrivacyMode = 'off'): Promise<Account> {
  const account = await admin<{ id: string }>(h, 'POST', '/accounts', { name: `content ${privacyMode}`, plan: 'pro' });
  expect(account.status).toBe(201);
  const key = await admin<{ key: string }>(h, 'POST', '/keys', {
    account_id: account.body.id,
    name: 'content types',
    environment: 'live',
    residency: 'eu',
    privacy_mode: privacyMode,
  });
  expect(key.status).toBe(201);
  const sdk = new Anthropic({ baseURL: h.baseUrl, apiKey: key.body.key, maxRetries: 0 });
  return { accountId: account.body.id, key: key.body.key, sdk };
}

async function upstreamRequests(simUrl: string): Promise<RecordedRequest[]> {
  return (await (await fetch(`${simUrl}/_sim/requests`)).json()) as RecordedRequest[];
}

/** The request the upstream got for a gateway request id (the router sends it as x-request-id). */
async function upstreamRequestOf(simUrl: string, requestId: string): Promise<RecordedRequest> {
  const found = (await upstreamRequests(simUrl)).find((entry) => entry.headers['x-request-id'] === requestId);
  if (found === undefined) throw new Error(`the upstream at ${simUrl} got no request ${requestId}`);
  return found;
}

interface SseEvent {
  event: string;
  data: unknown;
}

/** A streamed POST /v1/messages read whole: status, request id and the events, data parsed. */
async function rawStream(
  key: string,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<{ status: number; requestId: string; events: SseEvent[]; text: string }> {
  const response = await rawRequest(`${h.baseUrl}/v1/messages`, {
    headers: { 'x-api-key': key, ...headers },
    body: JSON.stringify({ ...body, stream: true }),
  });
  const events = response.body
    .split('\n\n')
    .map((block) => block.split('\n').filter((line) => !line.startsWith(':')))
    .filter((lines) => lines.length > 0 && lines[0] !== '')
    .map((lines) => ({
      event: lines.find((line) => line.startsWith('event: '))!.slice(7),
      data: JSON.parse(lines.find((line) => line.startsWith('data: '))!.slice(6)) as unknown,
    }));
  return { status: response.status, requestId: String(response.headers['request-id']), events, text: response.body };
}

/** The expected tokens of one request. */
interface Tokens {
  input: number;
  output: number;
  cacheRead?: number;
  cacheWrite?: number;
}

/** input + output + ceil(10 % of cache reads) + ceil(125 % of cache writes). */
function billableOf(tokens: Tokens): number {
  return (
    tokens.input +
    tokens.output +
    Math.ceil((tokens.cacheRead ?? 0) / 10) +
    Math.ceil(((tokens.cacheWrite ?? 0) * 5) / 4)
  );
}

const allowanceCounter = (accountId: string) =>
  `q:{a:${accountId}:live}:tokens:${new Date().toISOString().slice(0, 7)}`;

interface UsageReport {
  tokens: { used: number };
  by_model: { model: string; requests: number; billable_tokens: number; cost_gbp: number }[];
}

const redis = new Redis(h.replica.redisUrl);
afterAll(() => redis.disconnect());

/**
 * Every place a fresh account's requests reach, exactly: each request's usage event row, then
 * `/v1/usage` (tokens.used and one by_model line with its cost) and quota's allowance counter.
 */
async function expectBilled(
  account: Account,
  model: string,
  requests: { requestId: string; tokens: Tokens }[],
  outcome = 'success',
) {
  let billable = 0;
  let cost = 0;
  for (const { requestId, tokens } of requests) {
    const row = await waitForUsageRow(h.databaseUrl, requestId);
    const expected = billableOf(tokens);
    expect({
      model: row.model,
      outcome: row.outcome,
      input_tokens: Number(row.input_tokens),
      output_tokens: Number(row.output_tokens),
      cache_read_input_tokens: Number(row.cache_read_input_tokens),
      cache_creation_input_tokens: Number(row.cache_creation_input_tokens),
      billable_tokens: Number(row.billable_tokens),
    }).toEqual({
      model,
      outcome,
      input_tokens: tokens.input,
      output_tokens: tokens.output,
      cache_read_input_tokens: tokens.cacheRead ?? 0,
      cache_creation_input_tokens: tokens.cacheWrite ?? 0,
      billable_tokens: expected,
    });
    billable += expected;
    const weightedInput = expected - tokens.output;
    cost += (weightedInput * prices[model]!.input + tokens.output * prices[model]!.output) / 1e6;
  }
  const report = await waitUntil(
    async () => {
      const response = await rawRequest(`${h.baseUrl}/v1/usage`, {
        method: 'GET',
        headers: { 'x-api-key': account.key },
      });
      return JSON.parse(response.body) as UsageReport;
    },
    { what: '/v1/usage to count the requests' },
    (value) => value.tokens.used === billable && value.by_model[0]?.requests === requests.length,
  );
  expect(report.by_model).toEqual([
    { model, requests: requests.length, billable_tokens: billable, cost_gbp: expect.any(Number) },
  ]);
  expect(report.by_model[0]!.cost_gbp).toBeCloseTo(cost, 4);
  const counter = await waitUntil(
    async () => Number((await redis.get(allowanceCounter(account.accountId))) ?? 0),
    { what: 'the allowance counter to be charged' },
    (value) => value === billable,
  );
  expect(counter).toBe(billable);
}

const startOf = (events: SseEvent[]) => events[0]!.data as { message: Record<string, unknown> };
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

beforeEach(async () => {
  await fetch(`${simAnthropic}/_sim/requests`, { method: 'DELETE' });
  await fetch(`${simOpenAI}/_sim/requests`, { method: 'DELETE' });
  await fetch(`${simBedrock}/_sim/requests`, { method: 'DELETE' });
});

describe('extended thinking', () => {
  const text = 'Think about the weather in Oslo';

  it('Bedrock pool: thinking and redacted_thinking relayed exactly, streamed and not, counted as output', async () => {
    const account = await liveAccount();
    const ask = `${text} sim:redacted-thinking`;
    const params = { model: sonnet, max_tokens: 2048, thinking, messages: [{ role: 'user' as const, content: ask }] };
    const askWords = echoChunks(ask);
    const input = estimateInputTokens(params);
    // One token for the redacted block, one per word of thinking and of text.
    const output = 1 + askWords.length * 2;

    const { data: message, response } = await account.sdk.messages.create(params).withResponse();
    const created = response.headers.get('request-id')!;
    expect(message).toEqual({
      id: expect.stringMatching(/^msg_/),
      type: 'message',
      role: 'assistant',
      model: sonnet,
      content: [
        { type: 'redacted_thinking', data: redactedThinkingData },
        { type: 'thinking', thinking: ask, signature: thinkingSignature(ask) },
        { type: 'text', text: ask },
      ],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: input, output_tokens: output, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    });
    expect((await upstreamRequestOf(simBedrock, created)).body).toEqual(bedrockBody(params));

    const streamed = await rawStream(account.key, params);
    expect(streamed.status).toBe(200);
    expect(streamed.events).toEqual([
      {
        event: 'message_start',
        data: {
          type: 'message_start',
          message: {
            id: expect.stringMatching(/^msg_/),
            type: 'message',
            role: 'assistant',
            model: sonnet,
            content: [],
            stop_reason: null,
            stop_sequence: null,
            usage: {
              input_tokens: input,
              output_tokens: 1,
              cache_creation_input_tokens: 0,
              cache_read_input_tokens: 0,
            },
          },
        },
      },
      {
        event: 'content_block_start',
        data: {
          type: 'content_block_start',
          index: 0,
          content_block: { type: 'redacted_thinking', data: redactedThinkingData },
        },
      },
      { event: 'ping', data: { type: 'ping' } },
      { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
      {
        event: 'content_block_start',
        data: {
          type: 'content_block_start',
          index: 1,
          content_block: { type: 'thinking', thinking: '', signature: '' },
        },
      },
      ...askWords.map((word) => ({
        event: 'content_block_delta',
        data: { type: 'content_block_delta', index: 1, delta: { type: 'thinking_delta', thinking: word } },
      })),
      {
        event: 'content_block_delta',
        data: {
          type: 'content_block_delta',
          index: 1,
          delta: { type: 'signature_delta', signature: thinkingSignature(ask) },
        },
      },
      { event: 'content_block_stop', data: { type: 'content_block_stop', index: 1 } },
      {
        event: 'content_block_start',
        data: { type: 'content_block_start', index: 2, content_block: { type: 'text', text: '' } },
      },
      ...askWords.map((word) => ({
        event: 'content_block_delta',
        data: { type: 'content_block_delta', index: 2, delta: { type: 'text_delta', text: word } },
      })),
      { event: 'content_block_stop', data: { type: 'content_block_stop', index: 2 } },
      {
        event: 'message_delta',
        data: {
          type: 'message_delta',
          delta: { stop_reason: 'end_turn', stop_sequence: null },
          usage: { output_tokens: output },
        },
      },
      { event: 'message_stop', data: { type: 'message_stop' } },
    ]);

    // The SDK's stream helper assembles the same content.
    const stream = account.sdk.messages.stream(params);
    const final = await stream.finalMessage();
    expect(final.content).toEqual(message.content);
    expect(final.usage).toMatchObject({ input_tokens: input, output_tokens: output });
    const tokens = { input, output };
    await expectBilled(account, sonnet, [
      { requestId: created, tokens },
      { requestId: streamed.requestId, tokens },
      { requestId: stream.request_id!, tokens },
    ]);
  });

  it('OpenAI pool: reasoning_content becomes a thinking block when thinking is on, left out otherwise, counted as output', async () => {
    const account = await liveAccount();
    const ask = `${text} sim:reasoning`;
    const askWords = echoChunks(ask);
    const params = { model: llama, max_tokens: 2048, thinking, messages: [{ role: 'user' as const, content: ask }] };
    const output = askWords.length * 2;

    const { data: message, response } = await account.sdk.messages.create(params).withResponse();
    const created = response.headers.get('request-id')!;
    const upstream = await upstreamRequestOf(simOpenAI, created);
    expect(upstream.body).not.toHaveProperty('thinking');
    const input = estimateChatInputTokens(upstream.body as Record<string, unknown>);
    expect(message).toMatchObject({
      model: llama,
      content: [
        { type: 'thinking', thinking: ask, signature: '' },
        { type: 'text', text: ask },
      ],
      usage: { input_tokens: input, output_tokens: output, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    });

    const streamed = await rawStream(account.key, params);
    const names = streamed.events.map((event) => event.event);
    expect(names).toEqual([
      'message_start',
      'content_block_start',
      'ping',
      ...askWords.map(() => 'content_block_delta'),
      'content_block_stop',
      'content_block_start',
      ...askWords.map(() => 'content_block_delta'),
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(streamed.events[1]!.data).toEqual({
      type: 'content_block_start',
      index: 0,
      content_block: { type: 'thinking', thinking: '', signature: '' },
    });
    expect(streamed.events.slice(3, 3 + askWords.length).map((event) => event.data)).toEqual(
      askWords.map((word) => ({
        type: 'content_block_delta',
        index: 0,
        delta: { type: 'thinking_delta', thinking: word },
      })),
    );
    expect(streamed.events.at(-2)!.data).toEqual({
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { output_tokens: output, input_tokens: input, cache_read_input_tokens: 0 },
    });

    // Without thinking asked for, the reasoning is not shown, but it was generated: still billed.
    const unasked = { model: llama, max_tokens: 2048, messages: params.messages };
    const { data: plain, response: plainResponse } = await account.sdk.messages.create(unasked).withResponse();
    expect(plain.content).toEqual([{ type: 'text', text: ask }]);
    expect(plain.usage.output_tokens).toBe(output);
    await expectBilled(account, llama, [
      { requestId: created, tokens: { input, output } },
      { requestId: streamed.requestId, tokens: { input, output } },
      { requestId: plainResponse.headers.get('request-id')!, tokens: { input, output } },
    ]);
  });

  it.each([
    ['Bedrock', sonnet, ''],
    ['Anthropic', haiku, ''],
    ['OpenAI', llama, ' sim:reasoning'],
  ])(
    'tokenise (%s pool): the upstream sees placeholders; the text comes back restored, thinking as signed, streamed and not',
    async (_pool, model, trigger) => {
      const account = await liveAccount('tokenise');
      const email = 'alice.smith@example.com';
      const phone = '+44 20 7946 0958';
      const ask = `Please call ${phone} or write to ${email} about it${trigger}`;
      const params = { model, max_tokens: 2048, thinking, messages: [{ role: 'user' as const, content: ask }] };
      const { data: created, response } = await account.sdk.messages.create(params).withResponse();
      const streamed = await account.sdk.messages.stream(params).finalMessage();
      // Thinking is relayed as the upstream wrote it (its signature covers the placeholders); the answer is restored.
      const signedThinking = new RegExp(
        `^Please call \\[\\[PII:PHONE:1:\\w+\\]\\] or write to \\[\\[PII:EMAIL:1:\\w+\\]\\] about it${trigger}$`,
      );
      for (const message of [created, streamed]) {
        expect(message.content.map((block) => block.type)).toEqual(['thinking', 'text']);
        expect(message.content[0]).toMatchObject({ type: 'thinking', thinking: expect.stringMatching(signedThinking) });
        expect(message.content[1]).toMatchObject({ type: 'text', text: ask });
      }
      const simUrl = model === llama ? simOpenAI : model === sonnet ? simBedrock : simAnthropic;
      const seen = JSON.stringify((await upstreamRequestOf(simUrl, response.headers.get('request-id')!)).body);
      expect(seen).not.toContain(email);
      expect(seen).not.toContain(phone);
      expect(seen).toContain('[[PII:EMAIL:1:');
    },
  );
});

describe('prompt caching', () => {
  const system = [
    { type: 'text' as const, text: 'A long and stable system prompt.', cache_control: { type: 'ephemeral' as const } },
  ];

  it('Bedrock pool: cache_control passes through; cache counts reach the response, the event, /v1/usage and the allowance', async () => {
    const account = await liveAccount();
    const params = {
      model: sonnet,
      max_tokens: 256,
      system,
      messages: [
        {
          role: 'user' as const,
          content: [
            {
              type: 'text' as const,
              text: 'cached question sim:cache-read=1200 sim:cache-write=300',
              cache_control: { type: 'ephemeral' as const, ttl: '1h' as const },
            },
          ],
        },
      ],
    };
    const input = estimateInputTokens(params);
    const usage = {
      input_tokens: input,
      output_tokens: 4,
      cache_creation_input_tokens: 300,
      cache_read_input_tokens: 1200,
    };

    const { data: message, response } = await account.sdk.messages.create(params).withResponse();
    const created = response.headers.get('request-id')!;
    expect(message.usage).toEqual(usage);
    expect((await upstreamRequestOf(simBedrock, created)).body).toEqual(bedrockBody(params));

    const streamed = await rawStream(account.key, params);
    expect(startOf(streamed.events).message.usage).toEqual({ ...usage, output_tokens: 1 });
    const stream = account.sdk.messages.stream(params);
    const final = await stream.finalMessage();
    expect(final.usage).toEqual(usage);

    const tokens = { input, output: 4, cacheRead: 1200, cacheWrite: 300 };
    // 120 for the reads at 10 %, 375 for the writes at 125 %.
    expect(billableOf(tokens)).toBe(input + 4 + 120 + 375);
    await expectBilled(account, sonnet, [
      { requestId: created, tokens },
      { requestId: streamed.requestId, tokens },
      { requestId: stream.request_id!, tokens },
    ]);
  });

  it('Anthropic pool: a stream that fails mid-thinking bills its cache counts, input and the thinking so far', async () => {
    const account = await liveAccount();
    const params = {
      model: sonnet,
      max_tokens: 2048,
      thinking,
      system,
      messages: [
        {
          role: 'user' as const,
          content: 'one two three four five six sim:cache-read=1000 sim:cache-write=40 sim:stream-error-after=3',
        },
      ],
    };
    const streamed = await rawStream(account.key, params);
    expect(streamed.events.map((event) => event.event)).toEqual([
      'message_start',
      'content_block_start',
      'ping',
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'error',
    ]);
    expect(streamed.events.slice(3, 6).map((event) => event.data)).toEqual(
      ['one', ' two', ' three'].map((word) => ({
        type: 'content_block_delta',
        index: 0,
        delta: { type: 'thinking_delta', thinking: word },
      })),
    );
    const tokens = { input: estimateInputTokens(params), output: 3, cacheRead: 1000, cacheWrite: 40 };
    const row = await waitForUsageRow(h.databaseUrl, streamed.requestId);
    expect({ outcome: row.outcome, error_type: row.error_type }).toEqual({
      outcome: 'upstream_error',
      error_type: 'overloaded_error',
    });
    await expectBilled(account, sonnet, [{ requestId: streamed.requestId, tokens }], 'upstream_error');
  });

  it('OpenAI pool: cached prompt tokens are cache reads, streamed and not; cache_control is not sent', async () => {
    const account = await liveAccount();
    const params = {
      model: llama,
      max_tokens: 256,
      system,
      messages: [{ role: 'user' as const, content: 'cached question sim:cache-read=45' }],
    };
    const { data: message, response } = await account.sdk.messages.create(params).withResponse();
    const created = response.headers.get('request-id')!;
    const upstream = await upstreamRequestOf(simOpenAI, created);
    expect(JSON.stringify(upstream.body)).not.toContain('cache_control');
    const input = estimateChatInputTokens(upstream.body as Record<string, unknown>);
    const usage = {
      input_tokens: input,
      output_tokens: 3,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 45,
    };
    expect(message.usage).toEqual(usage);

    const streamed = await rawStream(account.key, params);
    expect(streamed.events.at(-2)!.data).toMatchObject({
      usage: { output_tokens: 3, input_tokens: input, cache_read_input_tokens: 45 },
    });
    const tokens = { input, output: 3, cacheRead: 45 };
    await expectBilled(account, llama, [
      { requestId: created, tokens },
      { requestId: streamed.requestId, tokens },
    ]);
  });
});

describe('documents and images', () => {
  const phone = '+442079460958';
  const card = '4111111111111111';
  /** Base64-looking data with digit runs a privacy scanner would take for a phone and a card number. */
  const binary = `iVBORw0KGgo/${phone}/${card}/AAAANSUhEUgAA`;
  /** The URL of the second block, its phone number tokenised. */
  const placeholderUrl = /^https:\/\/images\.example\.com\/\[\[PII:PHONE:1:\w+\]\]\.png$/;
  const blocks = [
    { type: 'image' as const, source: { type: 'base64' as const, media_type: 'image/png' as const, data: binary } },
    { type: 'image' as const, source: { type: 'url' as const, url: `https://images.example.com/${phone}.png` } },
    {
      type: 'document' as const,
      title: 'Report',
      source: { type: 'base64' as const, media_type: 'application/pdf' as const, data: binary },
    },
    { type: 'document' as const, source: { type: 'url' as const, url: 'https://docs.example.com/report.pdf' } },
  ];

  it.each<PrivacyMode>(['off', 'redact', 'tokenise'])(
    'Bedrock pool, privacy %s: base64 images and PDFs reach the upstream untouched; text and URLs are scanned',
    async (mode) => {
      const account = await liveAccount(mode);
      const text = `Summarise these. Call me on ${phone}.`;
      const content = [...blocks, { type: 'text' as const, text }];
      const { data: message, response } = await account.sdk.messages
        .create({ model: sonnet, max_tokens: 256, messages: [{ role: 'user', content }] })
        .withResponse();
      const upstream = await upstreamRequestOf(simBedrock, response.headers.get('request-id')!);
      const sent = (upstream.body as { messages: { content: unknown[] }[] }).messages[0]!.content;
      const url: Record<PrivacyMode, string> = {
        off: `https://images.example.com/${phone}.png`,
        flag: `https://images.example.com/${phone}.png`,
        redact: 'https://images.example.com/[PHONE_1].png',
        tokenise: '',
      };
      const expected = blocks.map((block, index) =>
        index !== 1
          ? block
          : {
              ...block,
              source: { type: 'url', url: mode === 'tokenise' ? expect.stringMatching(placeholderUrl) : url[mode] },
            },
      );
      expect(sent.slice(0, blocks.length)).toEqual(expected);
      const upstreamText = (sent[blocks.length] as { text: string }).text;
      if (mode === 'off') expect(upstreamText).toBe(text);
      else expect(upstreamText).not.toContain(phone);
      // tokenise gives the caller its own words back.
      if (mode !== 'redact') expect(message.content).toEqual([{ type: 'text', text }]);
    },
  );

  it('Bedrock pool, tokenise: a 20 MiB PDF crosses every hop byte for byte', async () => {
    const account = await liveAccount('tokenise');
    const data = randomBytes(15 * 1024 * 1024).toString('base64') + phone;
    const { response } = await account.sdk.messages
      .create({
        model: sonnet,
        max_tokens: 16,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data } },
              { type: 'text', text: 'What does it say?' },
            ],
          },
        ],
      })
      .withResponse();
    const upstream = await upstreamRequestOf(simBedrock, response.headers.get('request-id')!);
    const received = (upstream.body as { messages: { content: { source: { data: string } }[] }[] }).messages[0]!
      .content[0]!.source.data;
    expect({ length: received.length, sha256: sha256(received) }).toEqual({
      length: data.length,
      sha256: sha256(data),
    });
  }, 120_000);

  it('OpenAI pool: images become image_url parts (data URL, https URL); privacy leaves base64 alone, scans URLs', async () => {
    const account = await liveAccount('tokenise');
    const text = 'What is in these pictures?';
    const { data: message, response } = await account.sdk.messages
      .create({
        model: llama,
        max_tokens: 64,
        messages: [{ role: 'user', content: [blocks[0]!, blocks[1]!, { type: 'text', text }] }],
      })
      .withResponse();
    expect(message.content).toEqual([{ type: 'text', text }]);
    const upstream = await upstreamRequestOf(simOpenAI, response.headers.get('request-id')!);
    expect((upstream.body as { messages: unknown[] }).messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'image_url', image_url: { url: `data:image/png;base64,${binary}` } },
          { type: 'image_url', image_url: { url: expect.stringMatching(placeholderUrl) } },
          { type: 'text', text },
        ],
      },
    ]);
  });

  it('OpenAI pool: a 20 MiB image reaches the upstream as a data URL byte for byte', async () => {
    // Privacy off: the Anthropic pool's 20 MiB case above already crosses policy's privacy step.
    const account = await liveAccount();
    const data = randomBytes(15 * 1024 * 1024).toString('base64');
    const { response } = await account.sdk.messages
      .create({
        model: llama,
        max_tokens: 16,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data } },
              { type: 'text', text: 'What is this?' },
            ],
          },
        ],
      })
      .withResponse();
    const upstream = await upstreamRequestOf(simOpenAI, response.headers.get('request-id')!);
    const url = (upstream.body as { messages: { content: { image_url?: { url: string } }[] }[] }).messages[0]!
      .content[0]!.image_url!.url;
    const expected = `data:image/jpeg;base64,${data}`;
    expect({ length: url.length, sha256: sha256(url) }).toEqual({ length: expected.length, sha256: sha256(expected) });
  }, 120_000);

  it('OpenAI pool: a PDF is refused with a clear 400 naming the block, and nothing is sent upstream', async () => {
    const account = await liveAccount();
    for (const document of [blocks[2]!, blocks[3]!]) {
      const refused = await account.sdk.messages
        .create({
          model: llama,
          max_tokens: 64,
          messages: [{ role: 'user', content: [{ type: 'text', text: 'Read this' }, document] }],
        })
        .catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(Anthropic.BadRequestError);
      expect((refused as InstanceType<typeof Anthropic.BadRequestError>).error).toMatchObject({
        type: 'error',
        error: {
          type: 'invalid_request_error',
          message:
            'messages.0.content.1: a document other than plain text is not supported by the upstream serving this model.',
        },
      });
    }
    expect(await upstreamRequests(simOpenAI)).toEqual([]);
  });
});

describe('the model alias, message_start and anthropic-beta', () => {
  it.each([
    ['Anthropic', haiku, haikuUpstream, simAnthropic],
    ['OpenAI', llama, llamaUpstream, simOpenAI],
  ])(
    '%s pool: answers name the alias, not the upstream id, streamed and not',
    async (_pool, alias, upstreamId, simUrl) => {
      const account = await liveAccount();
      const params = { model: alias, max_tokens: 64, messages: [{ role: 'user' as const, content: 'which model?' }] };
      const { data: message, response } = await account.sdk.messages.create(params).withResponse();
      expect(message.model).toBe(alias);
      expect((await upstreamRequestOf(simUrl, response.headers.get('request-id')!)).body).toMatchObject({
        model: upstreamId,
      });
      const streamed = await rawStream(account.key, params);
      expect(startOf(streamed.events).message.model).toBe(alias);
      expect(streamed.text).not.toContain(upstreamId);
      expect((await account.sdk.messages.stream(params).finalMessage()).model).toBe(alias);
    },
  );

  it('OpenAI pool: message_start carries the input estimate, message_delta the upstream count that is billed', async () => {
    const account = await liveAccount();
    const params = {
      model: llama,
      max_tokens: 64,
      system: 'Be brief.',
      messages: [{ role: 'user' as const, content: 'count my input tokens please' }],
    };
    const streamed = await rawStream(account.key, params);
    const upstream = await upstreamRequestOf(simOpenAI, streamed.requestId);
    const upstreamInput = estimateChatInputTokens(upstream.body as Record<string, unknown>);
    // The router's estimate is the number count_tokens answers for this model.
    const counted = await account.sdk.messages.countTokens({
      model: llama,
      system: params.system,
      messages: params.messages,
    });
    expect(startOf(streamed.events).message.usage).toEqual({
      input_tokens: counted.input_tokens,
      output_tokens: 0,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    });
    expect(counted.input_tokens).toBe(estimateInputTokens(params));
    expect(streamed.events.at(-2)!.data).toMatchObject({ usage: { input_tokens: upstreamInput, output_tokens: 5 } });
    await expectBilled(account, llama, [
      { requestId: streamed.requestId, tokens: { input: upstreamInput, output: 5 } },
    ]);
  });

  // Every beta reaches the upstream only on the Anthropic API itself: Bedrock and Vertex take the ones they
  // support (regional-providers.test.ts), so this case is served by Claude Haiku, on Anthropic alone.
  it('Anthropic pool: anthropic-beta reaches the upstream; an unknown beta fails as the upstream fails it', async () => {
    const account = await liveAccount();
    const params = { model: haiku, max_tokens: 64, messages: [{ role: 'user' as const, content: 'beta please' }] };
    const betas = ['prompt-caching-2024-07-31', 'pdfs-2024-09-25'];
    const { response } = await account.sdk.beta.messages.create({ ...params, betas }).withResponse();
    const upstream = await upstreamRequestOf(simAnthropic, response.headers.get('request-id')!);
    expect(upstream.headers['anthropic-beta']).toBe(betas.join(','));
    // A query string (Claude Code sends `?beta=true`) reaches the Anthropic API as sent; InvokeModel has none.
    const withQuery = await rawRequest(`${h.baseUrl}/v1/messages?beta=true`, {
      headers: { 'x-api-key': account.key, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify(params),
    });
    expect(withQuery.status).toBe(200);
    expect((await upstreamRequestOf(simAnthropic, String(withQuery.headers['request-id']))).path).toBe(
      '/v1/messages?beta=true',
    );

    const unknown = 'made-up-feature-2099-01-01';
    const message = `Unexpected value(s) \`${unknown}\` for the \`anthropic-beta\` header. Please consult our documentation at docs.anthropic.com or try again without the header.`;
    const refusals = [
      await account.sdk.beta.messages.create({ ...params, betas: [unknown] }).catch((error: unknown) => error),
      await account.sdk.beta.messages
        .create({ ...params, stream: true, betas: ['pdfs-2024-09-25', unknown] })
        .catch((error: unknown) => error),
      await account.sdk.beta.messages
        .countTokens({ model: haiku, messages: params.messages, betas: [unknown] })
        .catch((error: unknown) => error),
    ];
    for (const refused of refusals) {
      expect(refused).toBeInstanceOf(Anthropic.BadRequestError);
      expect((refused as InstanceType<typeof Anthropic.BadRequestError>).error).toMatchObject({
        type: 'error',
        error: { type: 'invalid_request_error', message },
      });
    }
  });

  it('OpenAI pool: anthropic-beta means nothing to chat completions and is not sent', async () => {
    const account = await liveAccount();
    const { response } = await account.sdk.beta.messages
      .create({
        model: llama,
        max_tokens: 16,
        betas: ['made-up-feature-2099-01-01'],
        messages: [{ role: 'user', content: 'hi' }],
      })
      .withResponse();
    const upstream = await upstreamRequestOf(simOpenAI, response.headers.get('request-id')!);
    expect(upstream.headers).not.toHaveProperty('anthropic-beta');
  });
});
