import { join } from 'node:path';
import type { CompletionRequest } from '../src/completion';
import { StubPlans } from '../src/stub-plans';
import { planStubAnswer } from '../src/test-stub';

/** The thread as tsc builds it (`pnpm exec tsc -b`): worker threads load JavaScript. */
const builtThread = join(__dirname, '../dist/stub-plan-thread.js');
const padding = ' and more words'.repeat(5_000);

function request(text: string, extra: Record<string, unknown> = {}): CompletionRequest {
  const body = { model: 'claude-sonnet-5', max_tokens: 12, messages: [{ role: 'user', content: text }], ...extra };
  return {
    requestId: 'req_plan',
    accountId: 'account-1',
    environment: 'test',
    residency: 'eu',
    model: 'claude-sonnet-5',
    candidates: [],
    body: Buffer.from(JSON.stringify(body)),
    stream: false,
    headers: {},
  };
}

describe('StubPlans', () => {
  let plans: StubPlans;
  beforeAll(async () => {
    plans = await StubPlans.start({
      inlineMaxBytes: 16 * 1024,
      threads: 1,
      queuedPerAccount: 2,
      queuedTotal: 4,
      script: builtThread,
      onThreadFailure: () => undefined,
    });
  });
  afterAll(() => plans.close());
  const never = new AbortController().signal;

  it.each([
    ['a text answer cut at max_tokens', request(`hello${padding}`, { max_tokens: 3 })],
    ['a tool call', request(`gw-test:tool-use${padding}`, { tools: [{ name: 'lookup', input_schema: {} }] })],
    ['a requested error', request(`gw-test:error:rate_limit_error${padding}`)],
    ['a stream that fails', request(`gw-test:stream-error${padding}`)],
  ])('plans %s of a large body on a thread exactly as inline', async (_name, call) => {
    expect(call.body.byteLength).toBeGreaterThan(16 * 1024);
    const inline = planStubAnswer(call.body, call.model);
    expect(await plans.plan(call, never)).toEqual(inline);
    // The body goes on being the caller's: the thread had a copy.
    expect(JSON.parse(Buffer.from(call.body).toString('utf8'))).toHaveProperty('model', 'claude-sonnet-5');
  });

  it('refuses a body that is not a JSON object, as the stub does inline', async () => {
    const call = { ...request('x'), body: Buffer.from(`[${'1,'.repeat(20_000)}1]`) };
    expect(await plans.plan(call, never)).toEqual({
      kind: 'refused',
      error: { type: 'invalid_request_error', message: 'The request body must be a JSON object.' },
    });
  });
});
