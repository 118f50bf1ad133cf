import Anthropic from '@anthropic-ai/sdk';
import { harness } from './harness';
import { waitForUsageRow } from './usage';

const h = harness();
const model = 'claude-sonnet-5';

/** Response headers of the last call, seen through the SDK's own fetch. */
let lastHeaders: Headers | undefined;
const recordingFetch: typeof fetch = async (input, init) => {
  const response = await fetch(input, init);
  lastHeaders = response.headers;
  return response;
};

function client(options: { apiKey?: string; authToken?: string } = {}) {
  return new Anthropic({
    baseURL: h.baseUrl,
    maxRetries: 0,
    apiKey: null,
    authToken: null,
    fetch: recordingFetch,
    ...options,
  });
}

describe('POST /v1/messages with the official SDK', () => {
  it('returns a Message for a live key, echoed by the simulated upstream', async () => {
    const message = await client({ apiKey: h.liveKey }).messages.create({
      model,
      max_tokens: 256,
      messages: [{ role: 'user', content: 'Hello from the gateway test' }],
    });
    expect(message.type).toBe('message');
    expect(message.role).toBe('assistant');
    expect(message.content).toEqual([expect.objectContaining({ type: 'text', text: 'Hello from the gateway test' })]);
    expect(message.usage.output_tokens).toBeGreaterThan(0);
    expect(message._request_id).toMatch(/^req_[A-Za-z0-9]{24}$/);
    expect(message._request_id).toBe(lastHeaders?.get('x-request-id'));
    expect(lastHeaders?.get('request-id')).toBe(message._request_id);
    expect(lastHeaders?.get('content-type')).toMatch(/^application\/json/);
  });

  it('streams the same text that a non-streamed request returns', async () => {
    const sdk = client({ apiKey: h.liveKey });
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
    expect(streamed.stop_reason).toBe('end_turn');
    expect(streamed.usage.output_tokens).toBeGreaterThan(0);
    expect(events[0]).toBe('message_start');
    expect(events[1]).toBe('content_block_start');
    expect(events.slice(-3)).toEqual(['content_block_stop', 'message_delta', 'message_stop']);
  });

  it('answers a test key with the deterministic stub, streamed and not', async () => {
    const sdk = client({ apiKey: h.testKey });
    const params = { model, max_tokens: 64, messages: [{ role: 'user' as const, content: 'stub please' }] };
    const first = await sdk.messages.create(params);
    const second = await sdk.messages.create(params);
    expect(first.content).toEqual(second.content);
    expect(first.content[0]).toEqual(expect.objectContaining({ type: 'text' }));
    const streamed = await sdk.messages.stream(params).finalMessage();
    expect(streamed.content).toEqual(first.content);
  });

  it('accepts the key as a bearer token as well as x-api-key', async () => {
    const message = await client({ authToken: h.liveKey }).messages.create({
      model,
      max_tokens: 32,
      messages: [{ role: 'user', content: 'bearer works' }],
    });
    expect(message.content).toEqual([expect.objectContaining({ text: 'bearer works' })]);
  });

  it('raises AuthenticationError for a bad key, with the envelope and request id', async () => {
    const error = await client({ apiKey: 'gw_live_notARealKeynotARealKeynotARealKey' })
      .messages.create({ model, max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Anthropic.AuthenticationError);
    const apiError = error as InstanceType<typeof Anthropic.AuthenticationError>;
    expect(apiError.status).toBe(401);
    expect(apiError.error).toEqual({
      type: 'error',
      error: { type: 'authentication_error', message: expect.stringMatching(/Bearer.*x-api-key/s) },
      request_id: apiError.requestID,
    });
    expect(apiError.headers?.get('x-should-retry')).toBe('false');
  });

  it('raises NotFoundError for an unknown model', async () => {
    const error = await client({ apiKey: h.liveKey })
      .messages.create({ model: 'no-such-model', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Anthropic.NotFoundError);
    expect((error as InstanceType<typeof Anthropic.NotFoundError>).error).toEqual(
      expect.objectContaining({ error: expect.objectContaining({ type: 'not_found_error' }) }),
    );
  });

  it('writes the usage of a request to Postgres through Kafka', async () => {
    const message = await client({ apiKey: h.liveKey }).messages.create({
      model,
      max_tokens: 64,
      messages: [{ role: 'user', content: 'count my tokens' }],
    });
    const row = await waitForUsageRow(h.databaseUrl, message._request_id!);
    expect(row).toEqual(
      expect.objectContaining({
        account_id: h.accountId,
        model,
        environment: 'live',
        output_tokens: String(message.usage.output_tokens),
        input_tokens: String(message.usage.input_tokens),
        billable_tokens: String(message.usage.input_tokens + message.usage.output_tokens),
      }),
    );
  });
});
