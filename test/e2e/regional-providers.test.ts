import Anthropic from '@anthropic-ai/sdk';
import { estimateInputTokens } from '@gw/sim-upstream';
import type { RecordedRequest } from '@gw/sim-upstream';
import { waitUntil } from '@gw/testing';
import { harness } from './harness';
import { admin } from './http';
import { scrape, total } from './prometheus';
import { waitForUsageRow } from './usage';

/**
 * The regional providers through the whole stack with the official SDK (deploy/local/gateway.yaml):
 * `claude-sonnet-regional` is served by Bedrock in London for the UK tier and by Vertex AI in the
 * Netherlands, then Bedrock in Ireland, for the EU tier; `claude-sonnet-5` by Bedrock in Ireland, then
 * Vertex, then Anthropic for the EU tier. The simulators check SigV4 (with credentials the router got from
 * the simulated STS with a service-account token) and Google bearer tokens, so every answer here also
 * proves the router's credential chains and signing.
 */

const h = harness();
const model = 'claude-sonnet-regional';
/** Bedrock in Ireland first for an EU key, then Vertex, then Anthropic. */
const bedrockFirst = 'claude-sonnet-5';
const [, , , bedrockUk, bedrockEu, vertexEu] = h.simUrls as [string, string, string, string, string, string];

async function keyFor(residency: 'uk' | 'eu', privacyMode: 'off' | 'tokenise' = 'off'): Promise<string> {
  return (await keyWithId(residency, privacyMode)).key;
}

async function keyWithId(
  residency: 'uk' | 'eu',
  privacyMode: 'off' | 'tokenise',
): Promise<{ id: string; key: string }> {
  const account = await admin<{ id: string }>(h, 'POST', '/accounts', { name: `regional-${residency}`, plan: 'pro' });
  const key = await admin<{ id: string; key?: string }>(h, 'POST', '/keys', {
    account_id: account.body.id,
    name: 'regional providers',
    environment: 'live',
    residency,
    privacy_mode: privacyMode,
  });
  expect(key.status).toBe(201);
  return { id: key.body.id, key: key.body.key! };
}

async function recorded(simUrl: string): Promise<RecordedRequest[]> {
  return (await (await fetch(`${simUrl}/_sim/requests`)).json()) as RecordedRequest[];
}

let uk: Anthropic;
let eu: Anthropic;
beforeAll(async () => {
  uk = new Anthropic({ baseURL: h.baseUrl, apiKey: await keyFor('uk'), maxRetries: 0 });
  eu = new Anthropic({ baseURL: h.baseUrl, apiKey: await keyFor('eu'), maxRetries: 0 });
});
beforeEach(() =>
  Promise.all([bedrockUk, bedrockEu, vertexEu].map((url) => fetch(`${url}/_sim/requests`, { method: 'DELETE' }))),
);

const textOf = (message: Anthropic.Message) =>
  message.content.map((block) => (block.type === 'text' ? block.text : '')).join('');

const ask = (text: string) => ({ model, max_tokens: 256, messages: [{ role: 'user' as const, content: text }] });

describe('a UK key served by Bedrock in London', () => {
  it('answers a message, having called InvokeModel with the Bedrock body', async () => {
    const text = 'Hello from the London pool';
    const { data: message, response } = await uk.messages.create(ask(text)).withResponse();
    expect(response.headers.get('x-gateway-region')).toBe('uk-south');
    expect(message).toMatchObject({ model, content: [{ type: 'text', text }], stop_reason: 'end_turn' });
    const [upstream, ...others] = await recorded(bedrockUk);
    expect(others).toEqual([]);
    expect(upstream).toMatchObject({
      path: '/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke',
      outcome: 'completed',
    });
    expect(upstream!.body).toEqual({
      max_tokens: 256,
      messages: [{ role: 'user', content: text }],
      anthropic_version: 'bedrock-2023-05-31',
    });
    expect(await recorded(bedrockEu)).toEqual([]);
  });

  it('streams a message relayed from the event stream, events in the API order', async () => {
    const text = 'Streamed out of London word by word';
    const stream = uk.messages.stream(ask(text));
    const types: string[] = [];
    stream.on('streamEvent', (event) => types.push(event.type));
    const message = await stream.finalMessage();
    expect(message.content).toEqual([{ type: 'text', text }]);
    expect(message.model).toBe(model);
    expect(message.usage.output_tokens).toBe(text.split(' ').length);
    expect(types[0]).toBe('message_start');
    expect(types.slice(-2)).toEqual(['message_delta', 'message_stop']);
    expect((await recorded(bedrockUk))[0]?.path).toMatch(/\/invoke-with-response-stream$/);
  });

  it('calls a tool and thinks, as through the Anthropic API', async () => {
    const tool: Anthropic.Tool = {
      name: 'get_weather',
      description: 'The weather in a city.',
      input_schema: { type: 'object', properties: { echo: { type: 'string' } } },
    };
    const called = await uk.messages.create({ ...ask('Weather in Leeds? sim:tool-call'), tools: [tool] });
    expect(called.stop_reason).toBe('tool_use');
    expect(called.content[0]).toMatchObject({ type: 'tool_use', name: 'get_weather' });
    const thought = await uk.messages
      .stream({ ...ask('Think about Bath'), max_tokens: 2048, thinking: { type: 'enabled', budget_tokens: 1024 } })
      .finalMessage();
    expect(thought.content.map((block) => block.type)).toEqual(['thinking', 'text']);
    expect(thought.content[0]).toMatchObject({ thinking: 'Think about Bath' });
  });

  it('passes the betas Bedrock supports and names the dropped ones in x-gateway-dropped-betas and a metric', async () => {
    const dropped = async () =>
      total(await scrape(h.metricsUrls.router!), 'gateway_upstream_betas_dropped_total', {
        provider: 'bedrock',
        beta: 'claude-code-20250219',
      });
    const before = await dropped();
    const { response } = await uk.messages
      .create(ask('Betas'), {
        headers: { 'anthropic-beta': 'interleaved-thinking-2025-05-14,claude-code-20250219' },
      })
      .withResponse();
    expect(response.headers.get('x-gateway-dropped-betas')).toBe('claude-code-20250219');
    expect(await dropped()).toBe(before + 1);
    expect((await recorded(bedrockUk))[0]?.body).toMatchObject({ anthropic_beta: ['interleaved-thinking-2025-05-14'] });
  });

  it('answers count_tokens with the estimate, Bedrock having no count the gateway uses', async () => {
    const count = await uk.messages.countTokens({ model, messages: [{ role: 'user', content: 'Count me in London' }] });
    expect(count.input_tokens).toBeGreaterThan(0);
    expect(await recorded(bedrockUk)).toEqual([]);
  });

  it('maps a Bedrock refusal before the first byte and an exception frame after it', async () => {
    await expect(uk.messages.create(ask('Refuse this sim:error=400'))).rejects.toMatchObject({
      status: 400,
      error: { error: { type: 'invalid_request_error' } },
    });
    const stream = uk.messages.stream(ask('One two three four sim:stream-error-after=2'));
    await expect(stream.finalMessage()).rejects.toMatchObject({ error: { error: { type: 'overloaded_error' } } });
  });
});

describe('an EU key served by Bedrock in Ireland, then Vertex AI', () => {
  it('answers from Bedrock in Ireland first', async () => {
    const message = await eu.messages.create({ ...ask('Hello from Dublin'), model: bedrockFirst });
    expect(message.content).toEqual([{ type: 'text', text: 'Hello from Dublin' }]);
    expect(await recorded(bedrockEu)).toHaveLength(1);
    expect(await recorded(vertexEu)).toEqual([]);
  });

  it('fails over from a failing Bedrock pool to the Vertex pool in the same tier, whole and streamed', async () => {
    const text = 'Fail over please sim:bedrock-unavailable';
    const message = await eu.messages.create({ ...ask(text), model: bedrockFirst });
    expect(message.content).toEqual([{ type: 'text', text }]);
    const streamed = await eu.messages.stream({ ...ask(text), model: bedrockFirst }).finalMessage();
    expect(streamed.content).toEqual([{ type: 'text', text }]);
    expect((await recorded(bedrockEu)).map((request) => request.outcome)).toEqual(['completed', 'completed']);
    const vertex = await recorded(vertexEu);
    expect(vertex.map((request) => request.path)).toEqual([
      '/v1/projects/demo-project/locations/europe-west4/publishers/anthropic/models/claude-sonnet-5%4020250929:rawPredict',
      '/v1/projects/demo-project/locations/europe-west4/publishers/anthropic/models/claude-sonnet-5%4020250929:streamRawPredict',
    ]);
    expect(vertex[1]!.body).toMatchObject({ anthropic_version: 'vertex-2023-10-16', stream: true });
    expect(vertex[1]!.body).not.toHaveProperty('model');
    expect(await recorded(bedrockUk)).toEqual([]);
  });
});

describe('an EU key served by Vertex AI first', () => {
  it("counts tokens with Vertex's count-tokens method, and answers whole and streamed", async () => {
    const params = { model, messages: [{ role: 'user' as const, content: 'Count me in the Netherlands please' }] };
    const count = await eu.messages.countTokens(params);
    expect(count.input_tokens).toBe(estimateInputTokens(params));
    const [counted, ...others] = await recorded(vertexEu);
    expect(others).toEqual([]);
    expect(counted).toMatchObject({
      path: '/v1/projects/demo-project/locations/europe-west4/publishers/anthropic/models/count-tokens:rawPredict',
      body: { model: 'claude-sonnet-4-5@20250929', anthropic_version: 'vertex-2023-10-16' },
    });
    expect(textOf(await eu.messages.create(ask('Whole from Eemshaven')))).toBe('Whole from Eemshaven');
    expect(textOf(await eu.messages.stream(ask('Streamed from Eemshaven')).finalMessage())).toBe(
      'Streamed from Eemshaven',
    );
    expect(await recorded(bedrockEu)).toEqual([]);
  });
});

describe('content through Vertex AI', () => {
  it('calls a tool, thinks, reports cache counts and passes images and documents as sent', async () => {
    const tool: Anthropic.Tool = {
      name: 'get_weather',
      description: 'The weather in a city.',
      input_schema: { type: 'object', properties: { echo: { type: 'string' } } },
    };
    const called = await eu.messages.create({ ...ask('Weather in Utrecht? sim:tool-call'), tools: [tool] });
    expect(called.stop_reason).toBe('tool_use');
    expect(called.content[0]).toMatchObject({ type: 'tool_use', name: 'get_weather' });

    const thought = await eu.messages
      .stream({ ...ask('Think about Delft'), max_tokens: 2048, thinking: { type: 'enabled', budget_tokens: 1024 } })
      .finalMessage();
    expect(thought.content.map((block) => block.type)).toEqual(['thinking', 'text']);

    const cached = await eu.messages.create(ask('Cached sim:cache-read=120 sim:cache-write=30'));
    expect(cached.usage).toMatchObject({ cache_read_input_tokens: 120, cache_creation_input_tokens: 30 });

    const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
    const content: Anthropic.ContentBlockParam[] = [
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } },
      { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'A short document.' } },
      { type: 'text', text: 'Describe both' },
    ];
    expect(textOf(await eu.messages.create({ model, max_tokens: 64, messages: [{ role: 'user', content }] }))).toBe(
      'Describe both',
    );
    expect((await recorded(vertexEu)).at(-1)?.body).toMatchObject({ messages: [{ role: 'user', content }] });
    expect(await recorded(bedrockEu)).toEqual([]);
  });
});

describe('upstream errors through Vertex AI', () => {
  it('maps a refusal before the first byte and an error event after it', async () => {
    await expect(eu.messages.create(ask('Refuse this sim:error=400'))).rejects.toMatchObject({
      status: 400,
      error: { error: { type: 'invalid_request_error' } },
    });
    const stream = eu.messages.stream(ask('One two three four sim:stream-error-after=2'));
    await expect(stream.finalMessage()).rejects.toMatchObject({ error: { error: { type: 'overloaded_error' } } });
    // Neither went to Bedrock: a refusal is the caller's, and after the first byte there is no failover.
    expect(await recorded(bedrockEu)).toEqual([]);
    expect(await recorded(vertexEu)).toHaveLength(2);
  });
});

describe('revocation mid-stream through the regional providers', () => {
  it.each([
    ['Bedrock in London', 'uk' as const, () => bedrockUk],
    ['Vertex in the Netherlands', 'eu' as const, () => vertexEu],
  ])('ends a %s stream with authentication_error and closes the upstream call', async (_pool, residency, simUrl) => {
    const { id, key } = await keyWithId(residency, 'off');
    const client = new Anthropic({ baseURL: h.baseUrl, apiKey: key, maxRetries: 0 });
    const stream = await client.messages.create({
      ...ask('one two three four five six seven eight sim:pace=300'),
      stream: true,
    });
    const received: string[] = [];
    const read = async () => {
      for await (const event of stream) {
        if (event.type !== 'content_block_delta') continue;
        if (received.length === 0) await admin(h, 'POST', `/keys/${id}/revoke`);
        received.push('delta');
      }
    };
    await expect(read()).rejects.toMatchObject({ error: { error: { type: 'authentication_error' } } });
    expect(received.length).toBeGreaterThan(0);
    expect(received.length).toBeLessThan(8);
    const [upstream] = await waitUntil(
      () => recorded(simUrl()),
      { what: 'the upstream call ended' },
      (requests) => requests.length === 1 && requests[0]!.outcome !== 'in_progress',
    );
    expect(upstream!.outcome).toBe('client_closed');
    await expect(client.messages.create(ask('after'))).rejects.toBeInstanceOf(Anthropic.AuthenticationError);
  });
});

describe('streaming through Bedrock', () => {
  it('relays each frame as it arrives: every event reaches the caller before Bedrock sends its next frame', async () => {
    // The simulator writes each event as its own frame, the opening ones at once, then waits `pace` before
    // each delta: the caller must see message_start before the first delta is sent, and each delta
    // before the next one is.
    const pace = 1000;
    const startedAt = Date.now();
    const stream = uk.messages.stream(ask(`first second third sim:pace=${pace}`));
    let messageStartAt = 0;
    const deltaTimes: number[] = [];
    stream.on('streamEvent', (event) => {
      if (event.type === 'message_start') messageStartAt = Date.now() - startedAt;
    });
    stream.on('text', () => deltaTimes.push(Date.now() - startedAt));
    await stream.finalMessage();
    expect(deltaTimes).toHaveLength(4);
    expect(messageStartAt).toBeLessThan(pace);
    deltaTimes.forEach((at, index) => expect(at).toBeLessThan((index + 2) * pace));
    expect(deltaTimes[1]! - deltaTimes[0]!).toBeGreaterThanOrEqual(pace - 100);
  });
});

describe('content and privacy through the regional providers', () => {
  const email = 'jane.doe@example.co.uk';
  const prompt = `Please repeat: write to ${email} today.`;

  it('tokenise: Bedrock and Vertex see placeholders, the caller gets the originals back, streamed and not', async () => {
    const ukTokenised = new Anthropic({ baseURL: h.baseUrl, apiKey: await keyFor('uk', 'tokenise'), maxRetries: 0 });
    expect(textOf(await ukTokenised.messages.create(ask(prompt)))).toBe(prompt);
    expect(textOf(await ukTokenised.messages.stream(ask(prompt)).finalMessage())).toBe(prompt);
    const bedrockSaw = JSON.stringify(await recorded(bedrockUk));
    expect(bedrockSaw).not.toContain(email);
    expect(bedrockSaw).toContain('write to');

    const euTokenised = new Anthropic({ baseURL: h.baseUrl, apiKey: await keyFor('eu', 'tokenise'), maxRetries: 0 });
    const failingOver = `${prompt} sim:bedrock-unavailable`;
    expect(textOf(await euTokenised.messages.stream({ ...ask(failingOver), model: bedrockFirst }).finalMessage())).toBe(
      failingOver,
    );
    expect(JSON.stringify(await recorded(vertexEu))).not.toContain(email);
  });

  it('passes images and documents to Bedrock as the caller sent them', async () => {
    const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
    const content: Anthropic.ContentBlockParam[] = [
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } },
      { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'A short document.' } },
      { type: 'text', text: 'Describe both' },
    ];
    const message = await uk.messages.create({ model, max_tokens: 64, messages: [{ role: 'user', content }] });
    expect(textOf(message)).toBe('Describe both');
    expect((await recorded(bedrockUk))[0]?.body).toMatchObject({ messages: [{ role: 'user', content }] });
  });
});

describe('billing through Bedrock', () => {
  it('bills input + N when an exception frame ends the stream after N deltas', async () => {
    const params = { ...ask('one two three four five six seven sim:stream-error-after=3'), stream: true as const };
    const { data: stream, response } = await uk.messages.create(params).withResponse();
    const requestId = response.headers.get('request-id')!;
    let deltas = 0;
    const read = async () => {
      for await (const event of stream) if (event.type === 'content_block_delta') deltas += 1;
    };
    await expect(read()).rejects.toMatchObject({ error: { error: { type: 'overloaded_error' } } });
    expect(deltas).toBe(3);
    const row = await waitForUsageRow(h.databaseUrl, requestId);
    expect({
      outcome: row.outcome,
      error_type: row.error_type,
      input_tokens: Number(row.input_tokens),
      output_tokens: Number(row.output_tokens),
    }).toEqual({
      outcome: 'upstream_error',
      error_type: 'overloaded_error',
      input_tokens: estimateInputTokens(params),
      output_tokens: 3,
    });
  });
});
