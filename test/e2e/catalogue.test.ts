import Anthropic from '@anthropic-ai/sdk';
import { harness } from './harness';
import { admin, rawRequest } from './http';

const h = harness();

interface Created {
  id: string;
  key?: string;
}

async function keyFor(plan: string, residency: 'uk' | 'eu', extra: Record<string, unknown> = {}): Promise<string> {
  const account = await admin<Created>(h, 'POST', '/accounts', { name: `${plan}-${residency}`, plan });
  const key = await admin<Created>(h, 'POST', '/keys', {
    account_id: account.body.id,
    name: 'catalogue',
    environment: 'live',
    residency,
    privacy_mode: 'off',
    ...extra,
  });
  expect(key.status).toBe(201);
  return key.body.key!;
}

const sdk = (apiKey: string) => new Anthropic({ baseURL: h.baseUrl, apiKey, maxRetries: 0 });
const ask = (model: string) => ({ model, max_tokens: 16, messages: [{ role: 'user' as const, content: 'hi' }] });

describe('model catalogue, residency and validation', () => {
  let proEu: string;
  let proUk: string;
  let starterEu: string;
  let haikuOnly: string;

  beforeAll(async () => {
    [proEu, proUk, starterEu, haikuOnly] = await Promise.all([
      keyFor('pro', 'eu'),
      keyFor('pro', 'uk'),
      keyFor('starter', 'eu'),
      keyFor('pro', 'eu', { allowed_models: ['claude-haiku-4-5'] }),
    ]);
  });

  const valid = { model: 'claude-sonnet-5', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] };
  const deep = '{"model":"claude-sonnet-5","max_tokens":1,"messages":[],"x":' + '['.repeat(500) + ']'.repeat(500) + '}';

  it.each([
    ['malformed JSON', () => ({ body: '{"model":' }), 400, 'invalid_request_error', /not valid JSON/],
    ['a body that is not an object', () => ({ body: '[]' }), 400, 'invalid_request_error', /JSON object/],
    [
      'a wrong content type',
      () => ({ body: JSON.stringify(valid), headers: { 'content-type': 'text/plain' } }),
      400,
      'invalid_request_error',
      /Content-Type/,
    ],
    [
      'a missing model',
      () => ({ body: JSON.stringify({ ...valid, model: undefined }) }),
      400,
      'invalid_request_error',
      /^model: Field required/,
    ],
    [
      'max_tokens -1, which the upstream refuses',
      () => ({ body: JSON.stringify({ ...valid, max_tokens: -1 }) }),
      400,
      'invalid_request_error',
      /^max_tokens: /,
    ],
    [
      'temperature 2, which the upstream refuses',
      () => ({ body: JSON.stringify({ ...valid, temperature: 2 }) }),
      400,
      'invalid_request_error',
      /^temperature: /,
    ],
    [
      'a tool_choice the upstream refuses',
      () => ({ body: JSON.stringify({ ...valid, tool_choice: { type: 'sometimes' } }) }),
      400,
      'invalid_request_error',
      /^tool_choice/,
    ],
    ['JSON nested too deep', () => ({ body: deep }), 400, 'invalid_request_error', /nests deeper/],
    [
      'an unknown model',
      () => ({ body: JSON.stringify({ ...valid, model: 'no-such-model' }) }),
      404,
      'not_found_error',
      /GET \/v1\/models/,
    ],
    [
      'a model of the other jurisdiction only',
      () => ({ body: JSON.stringify({ ...valid, model: 'claude-opus-5' }) }),
      422,
      'residency_unavailable',
      /residency tier \(eu\)/,
    ],
    [
      'a declared length over the limit',
      () => ({ body: JSON.stringify(valid), headers: { 'content-length': String(64 * 1024 * 1024) } }),
      413,
      'request_too_large',
      /larger than the limit/,
    ],
  ])('refuses %s', async (_name, build, status, type, message) => {
    const { body, headers } = build() as { body: string; headers?: Record<string, string> };
    const response = await rawRequest(`${h.baseUrl}/v1/messages`, {
      body,
      headers: { 'x-api-key': proEu, ...headers },
    });
    expect(response.status).toBe(status);
    expect(response.headers['x-should-retry']).toBe('false');
    expect(response.headers['request-id']).toMatch(/^req_/);
    const envelope = JSON.parse(response.body);
    expect(envelope.type).toBe('error');
    expect(envelope.error.type).toBe(type);
    expect(envelope.error.message).toMatch(message);
    expect(envelope.request_id).toBe(response.headers['request-id']);
  });

  it('refuses a body over the plan limit while reading it', async () => {
    const big = JSON.stringify({ ...valid, messages: [{ role: 'user', content: 'x'.repeat(2 * 1024 * 1024) }] });
    // The gateway reads the rest of the upload before it closes, so the client sees the answer, not a reset.
    const response = await rawRequest(`${h.baseUrl}/v1/messages`, {
      body: big,
      headers: { 'x-api-key': starterEu, 'transfer-encoding': 'chunked' },
    });
    expect(response.status).toBe(413);
    expect(JSON.parse(response.body).error.type).toBe('request_too_large');
    const after = await rawRequest(`${h.baseUrl}/v1/messages`, {
      body: JSON.stringify(valid),
      headers: { 'x-api-key': starterEu },
    });
    expect(after.status).toBe(200);
  });

  it('gives each refusal the SDK error class', async () => {
    await expect(sdk(starterEu).messages.create(ask('claude-opus-5'))).rejects.toBeInstanceOf(
      Anthropic.PermissionDeniedError,
    );
    await expect(sdk(haikuOnly).messages.create(ask('claude-sonnet-5'))).rejects.toBeInstanceOf(
      Anthropic.PermissionDeniedError,
    );
    await expect(sdk(proEu).messages.create(ask('gpt-404'))).rejects.toBeInstanceOf(Anthropic.NotFoundError);
    const residency = await sdk(proEu)
      .messages.create(ask('claude-opus-5'))
      .catch((error: unknown) => error);
    expect(residency).toBeInstanceOf(Anthropic.UnprocessableEntityError);
    expect((residency as InstanceType<typeof Anthropic.UnprocessableEntityError>).type).toBe('residency_unavailable');
    await expect(sdk(proEu).messages.create({ ...ask('claude-sonnet-5'), max_tokens: -1 })).rejects.toBeInstanceOf(
      Anthropic.BadRequestError,
    );
    const tooLarge = await sdk(starterEu)
      .messages.create({ ...ask('claude-sonnet-5'), messages: [{ role: 'user', content: 'y'.repeat(1_100_000) }] })
      .catch((error: unknown) => error);
    expect(tooLarge).toBeInstanceOf(Anthropic.APIError);
    expect((tooLarge as InstanceType<typeof Anthropic.APIError>).status).toBe(413);
  });

  it('lists exactly the models each key may use, across every page', async () => {
    const all = async (key: string) => {
      const ids: string[] = [];
      for await (const model of sdk(key).models.list({ limit: 1 })) ids.push(model.id);
      return ids;
    };
    expect(await all(proEu)).toEqual([
      'claude-haiku-4-5',
      'claude-sonnet-5',
      'claude-sonnet-regional',
      'llama-4-maverick',
    ]);
    expect(await all(proUk)).toEqual(['claude-sonnet-5', 'claude-sonnet-regional', 'claude-opus-5']);
    expect(await all(haikuOnly)).toEqual(['claude-haiku-4-5']);
    const page = await sdk(proEu).models.list();
    expect(page.data[0]).toEqual({
      type: 'model',
      id: 'claude-haiku-4-5',
      display_name: 'Claude Haiku 4.5',
      created_at: '2025-10-15T00:00:00Z',
    });
  });

  it('retrieves one model, and 404s a model the key may not use', async () => {
    expect((await sdk(proUk).models.retrieve('claude-opus-5')).display_name).toBe('Claude Opus 5');
    await expect(sdk(proEu).models.retrieve('claude-opus-5')).rejects.toBeInstanceOf(Anthropic.NotFoundError);
  });

  it('serves each key inside its jurisdiction and says where', async () => {
    await Promise.all(h.simUrls.map((url) => fetch(`${url}/_sim/requests`, { method: 'DELETE' })));
    const eu = await sdk(proEu).messages.create(ask('claude-sonnet-5')).withResponse();
    const uk = await sdk(proUk).messages.create(ask('claude-sonnet-5')).withResponse();
    expect(eu.response.headers.get('x-gateway-region')).toBe('eu-west');
    expect(uk.response.headers.get('x-gateway-region')).toBe('uk-south');
    const received = await Promise.all(
      h.simUrls.map(async (url) => ((await (await fetch(`${url}/_sim/requests`)).json()) as unknown[]).length),
    );
    // Listeners: Anthropic EU and UK, OpenAI-compatible, Bedrock London, Bedrock Ireland, Vertex: the
    // model's first pool in each tier is Bedrock's, in London for the UK key and in Ireland for the EU one.
    expect(received).toEqual([0, 0, 0, 1, 1, 0]);
  });

  it('counts tokens with the same checks', async () => {
    const counted = await sdk(proEu).messages.countTokens({
      model: 'claude-sonnet-5',
      messages: [{ role: 'user', content: 'count these words please' }],
    });
    expect(counted.input_tokens).toBeGreaterThan(0);
    const stub = await sdk(h.testKey).messages.countTokens({
      model: 'claude-sonnet-5',
      messages: [{ role: 'user', content: 'count these words please' }],
    });
    expect(stub.input_tokens).toBeGreaterThan(0);
    await expect(
      sdk(proEu).messages.countTokens({ model: 'claude-opus-5', messages: [{ role: 'user', content: 'x' }] }),
    ).rejects.toBeInstanceOf(Anthropic.UnprocessableEntityError);
  });
});
