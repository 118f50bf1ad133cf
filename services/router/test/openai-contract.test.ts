import { ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import { echoChunks, estimateChatInputTokens, startSimUpstream } from '../../../bench/sim-upstream/src';
import type { RecordedRequest, RunningSimUpstream } from '../../../bench/sim-upstream/src';
import type { AdapterCall, UpstreamAdapter } from '../src/adapters';
import { createOpenAIAdapter, openAIAdapterConfig } from '../src/adapters/openai';
import type { CompletionEvent, JsonObject } from '../src/completion';
import { estimateInputTokens } from '@gw/usage';
import { errorOfFailures, failureOfStatus } from '../src/upstream-errors';
import type { UpstreamBody, UpstreamHttpRequest } from '../src/upstream-http';

/**
 * The openai adapter's contract with the simulated OpenAI-compatible upstream, round trip: the
 * caller's Messages body → the adapter's request → the simulator (which checks it like the OpenAI
 * API) → the adapter's translation back. Loopback only, the simulator in-process.
 */

const upstreamKey = 'sim-openai-contract-key';
let sim: RunningSimUpstream;
const adapter = createOpenAIAdapter();

beforeAll(async () => {
  sim = await startSimUpstream({ host: '127.0.0.1', port: 0, apiKey: upstreamKey });
});
afterAll(() => sim.close());
beforeEach(() => fetch(`${sim.url}/_sim/requests`, { method: 'DELETE' }));

async function lastRecorded(): Promise<RecordedRequest> {
  const log = (await (await fetch(`${sim.url}/_sim/requests`)).json()) as RecordedRequest[];
  return log.at(-1)!;
}

async function* bodyOf(response: Response): UpstreamBody {
  for await (const chunk of response.body! as AsyncIterable<Uint8Array>) yield ok(chunk);
}

async function send(request: UpstreamHttpRequest): Promise<Response> {
  return fetch(request.url, { method: 'POST', headers: request.headers, body: request.body });
}

function callOf(body: JsonObject, stream: boolean): AdapterCall {
  const full = { model: 'llama-4-maverick', max_tokens: 256, ...body, ...(stream ? { stream: true } : {}) };
  return {
    endpointUrl: sim.url,
    upstreamModel: 'meta-llama/Llama-4-Maverick',
    body: full,
    rawBody: Buffer.from(JSON.stringify(full)),
    stream,
    headers: {},
    query: '',
    credential: upstreamKey,
    requestId: 'req_contract',
  };
}

/** One whole round trip; the relayed items, readable. */
async function roundTrip(body: JsonObject, stream: boolean, via: UpstreamAdapter = adapter) {
  const response = await send(via.buildRequest(callOf(body, stream)));
  expect(response.status).toBe(200);
  expect(via.acceptsContentType(response.headers.get('content-type') ?? undefined, stream)).toBe(true);
  const items: Result<CompletionEvent>[] = [];
  const call = callOf(body, stream);
  for await (const item of via.relay(bodyOf(response), { stream, model: 'llama-4-maverick', body: call.body })) {
    items.push(item);
  }
  return items;
}

/* eslint-disable @typescript-eslint/no-explicit-any -- Anthropic wire JSON read field by field */
function messageOf(items: Result<CompletionEvent>[]): any {
  const first = items[0];
  if (!first?.ok || first.value.kind !== 'message') throw new Error(`no message: ${JSON.stringify(items)}`);
  return JSON.parse(Buffer.from(first.value.json).toString());
}

function eventsOf(items: Result<CompletionEvent>[]): { event: string; data: any }[] {
  return items.flatMap((item) =>
    item.ok && item.value.kind === 'sse'
      ? [{ event: item.value.event, data: JSON.parse(Buffer.from(item.value.data).toString()) }]
      : [],
  );
}

function finished(items: Result<CompletionEvent>[]) {
  const last = items.at(-1);
  if (!last?.ok || last.value.kind !== 'finished') throw new Error(`no finished: ${JSON.stringify(last)}`);
  return last.value.usage;
}

/** What the SDKs' stream helpers build from the events: the content blocks and the final delta. */
function accumulate(events: { event: string; data: any }[]) {
  const content: any[] = [];
  const json: string[] = [];
  for (const { event, data } of events) {
    if (event === 'content_block_start') {
      expect(data.index).toBe(content.length);
      content.push({ ...data.content_block });
      json.push('');
    }
    if (event === 'content_block_delta' && data.delta.type === 'text_delta')
      content[data.index].text += data.delta.text;
    if (event === 'content_block_delta' && data.delta.type === 'input_json_delta') {
      json[data.index] += data.delta.partial_json;
    }
  }
  content.forEach((block, index) => {
    if (block.type === 'tool_use' && json[index] !== '') block.input = JSON.parse(json[index]!);
  });
  return { content, final: events.find((item) => item.event === 'message_delta')?.data };
}

const lookup = {
  name: 'lookup',
  description: 'Looks a thing up.',
  input_schema: { type: 'object', properties: { echo: { type: 'string' } } },
};

describe('openai adapter against the simulated upstream', () => {
  it('round-trips text and system, not streamed', async () => {
    const text = 'Hello there, simulated Llama!';
    const items = await roundTrip(
      { system: [{ type: 'text', text: 'Be brief.' }], messages: [{ role: 'user', content: text }] },
      false,
    );
    const upstream = await lastRecorded();
    expect(upstream).toMatchObject({ path: '/v1/chat/completions', outcome: 'completed' });
    expect(upstream.body).toEqual({
      model: 'meta-llama/Llama-4-Maverick',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: text },
      ],
      max_tokens: 256,
    });
    expect(messageOf(items)).toEqual({
      id: expect.stringMatching(/^msg_[0-9A-Za-z]{24}$/),
      type: 'message',
      role: 'assistant',
      model: 'llama-4-maverick',
      content: [{ type: 'text', text }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: expect.any(Object),
    });
    const inputTokens = estimateChatInputTokens(upstream.body as JsonObject);
    expect(finished(items)).toEqual({
      inputTokens,
      outputTokens: echoChunks(text).length,
      cacheReadInputTokens: 0,
      cacheCreationInputTokens: 0,
    });
  });

  it('round-trips text, streamed, in the Anthropic event order with the usage from the final chunk', async () => {
    const text = 'One two three four five';
    const items = await roundTrip({ system: 'Be brief.', messages: [{ role: 'user', content: text }] }, true);
    const upstream = await lastRecorded();
    expect(upstream.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    const events = eventsOf(items);
    expect(events.map((item) => item.event)).toEqual([
      'message_start',
      'content_block_start',
      'ping',
      ...Array<string>(echoChunks(text).length).fill('content_block_delta'),
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    const { content, final } = accumulate(events);
    expect(content).toEqual([{ type: 'text', text }]);
    const inputTokens = estimateChatInputTokens(upstream.body as JsonObject);
    expect(final).toEqual({
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { output_tokens: echoChunks(text).length, input_tokens: inputTokens, cache_read_input_tokens: 0 },
    });
    expect(finished(items)).toMatchObject({ inputTokens, outputTokens: echoChunks(text).length });
  });

  it('estimates the output from the chunks, and the input, when the upstream is not asked for usage', async () => {
    const quiet = createOpenAIAdapter({ ...openAIAdapterConfig, streamUsage: false });
    const text = 'a b c d';
    const body = { messages: [{ role: 'user', content: text }] };
    const items = await roundTrip(body, true, quiet);
    expect((await lastRecorded()).body).not.toHaveProperty('stream_options');
    expect(accumulate(eventsOf(items)).final.usage).toEqual({ output_tokens: 4 });
    // The router's estimate of the caller's body: ("user" + "a b c d") / 4, rounded up.
    expect(finished(items)).toMatchObject({ inputTokens: estimateInputTokens(body), outputTokens: 4 });
    expect(estimateInputTokens(body)).toBe(3);
  });

  it('maps max_tokens and stop sequences both ways', async () => {
    const cut = messageOf(await roundTrip({ max_tokens: 2, messages: [{ role: 'user', content: 'a b c d' }] }, false));
    expect(cut).toMatchObject({ content: [{ type: 'text', text: 'a b' }], stop_reason: 'max_tokens' });
    const body = { stop_sequences: ['STOP'], messages: [{ role: 'user', content: 'go on STOP here' }] };
    expect(messageOf(await roundTrip(body, false))).toMatchObject({
      content: [{ type: 'text', text: 'go on ' }],
      stop_reason: 'stop_sequence',
      stop_sequence: 'STOP',
    });
    expect((await lastRecorded()).body).toMatchObject({ stop: ['STOP'] });
    const streamed = accumulate(eventsOf(await roundTrip(body, true)));
    expect(streamed.final.delta).toEqual({ stop_reason: 'stop_sequence', stop_sequence: 'STOP' });
  });

  it('round-trips a tool call and its result, not streamed and streamed', async () => {
    const question = 'Find the weather sim:tool-call';
    const ask = {
      tools: [lookup],
      tool_choice: { type: 'auto' },
      messages: [{ role: 'user', content: question }],
    };
    const called = messageOf(await roundTrip(ask, false));
    expect((await lastRecorded()).body).toMatchObject({
      tools: [
        {
          type: 'function',
          function: { name: 'lookup', description: 'Looks a thing up.', parameters: lookup.input_schema },
        },
      ],
      tool_choice: 'auto',
    });
    expect(called.stop_reason).toBe('tool_use');
    expect(called.content).toEqual([
      { type: 'tool_use', id: expect.stringMatching(/^toolu_call_/), name: 'lookup', input: { echo: question } },
    ]);

    const streamed = accumulate(eventsOf(await roundTrip(ask, true)));
    expect(streamed.final.delta.stop_reason).toBe('tool_use');
    expect(streamed.content).toEqual([
      { type: 'tool_use', id: expect.stringMatching(/^toolu_call_/), name: 'lookup', input: { echo: question } },
    ]);

    // The result goes back: the simulator checks every tool call is answered, then echoes the result.
    const toolUse = called.content[0];
    const answer = {
      tools: [lookup],
      messages: [
        { role: 'user', content: question },
        { role: 'assistant', content: called.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUse.id, content: 'Sunny, 21 degrees' }] },
      ],
    };
    const replied = messageOf(await roundTrip(answer, false));
    expect(replied).toMatchObject({ content: [{ type: 'text', text: 'Sunny, 21 degrees' }], stop_reason: 'end_turn' });
    expect(((await lastRecorded()).body as { messages: unknown[] }).messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: toolUse.id,
            type: 'function',
            function: { name: 'lookup', arguments: JSON.stringify({ echo: question }) },
          },
        ],
      },
      { role: 'tool', tool_call_id: toolUse.id, content: 'Sunny, 21 degrees' },
    ]);
    const streamedReply = accumulate(eventsOf(await roundTrip(answer, true)));
    expect(streamedReply.content).toEqual([{ type: 'text', text: 'Sunny, 21 degrees' }]);
  });

  it('carries the upstream message of a 400 into invalid_request_error, by the router’s own rules', async () => {
    const response = await send(
      adapter.buildRequest(callOf({ messages: [{ role: 'user', content: 'sim:error=400' }] }, false)),
    );
    expect(response.status).toBe(400);
    const reported = adapter.parseErrorBody(await response.text());
    const error = errorOfFailures([failureOfStatus(400, {}, reported.message)]);
    expect(error).toMatchObject({ type: 'invalid_request_error', message: 'sim: error status 400 on request' });

    const busy = await send(
      adapter.buildRequest(callOf({ messages: [{ role: 'user', content: 'sim:error=503 sim:retry-after=2' }] }, false)),
    );
    expect(
      errorOfFailures([failureOfStatus(503, { 'retry-after': busy.headers.get('retry-after')! }, undefined)]),
    ).toMatchObject({
      type: 'overloaded_error',
      retryAfterMs: 2000,
    });
  });

  it('turns a mid-stream error into overloaded_error after the events sent so far', async () => {
    const items = await roundTrip(
      { messages: [{ role: 'user', content: 'one two three sim:stream-error-after=2' }] },
      true,
    );
    expect(eventsOf(items).map((item) => item.event)).toEqual([
      'message_start',
      'content_block_start',
      'ping',
      'content_block_delta',
      'content_block_delta',
    ]);
    expect(items.at(-1)).toEqual({ ok: false, error: expect.objectContaining({ type: 'overloaded_error' }) });
  });

  it('is refused by the upstream without its credential, and accepted with Azure’s api-key header', async () => {
    const anonymous = await send(
      adapter.buildRequest({ ...callOf({ messages: [{ role: 'user', content: 'x' }] }, false), credential: undefined }),
    );
    expect(anonymous.status).toBe(401);
    const azure = createOpenAIAdapter({ ...openAIAdapterConfig, credentialStyle: 'api-key', apiVersion: '2024-10-21' });
    const items = await roundTrip({ messages: [{ role: 'user', content: 'via Azure style' }] }, false, azure);
    expect(messageOf(items).content).toEqual([{ type: 'text', text: 'via Azure style' }]);
    expect((await lastRecorded()).path).toBe('/v1/chat/completions?api-version=2024-10-21');
  });
});
