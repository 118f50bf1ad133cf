import Anthropic from '@anthropic-ai/sdk';
import { harness } from './harness';
import { admin } from './http';

const h = harness();
const model = 'claude-sonnet-5';
const values = {
  email: 'alice.smith@example.com',
  phone: '+44 20 7946 0958',
  card: '4111 1111 1111 1111',
  iban: 'GB82 WEST 1234 5698 7654 32',
};
const prompt = `Please repeat: my email is ${values.email}, phone ${values.phone}, card ${values.card}, IBAN ${values.iban}.`;

async function keyWithMode(privacyMode: 'flag' | 'redact' | 'tokenise'): Promise<string> {
  const account = await admin<{ id: string }>(h, 'POST', '/accounts', { name: `privacy-${privacyMode}`, plan: 'pro' });
  const key = await admin<{ key: string }>(h, 'POST', '/keys', {
    account_id: account.body.id,
    name: privacyMode,
    environment: 'live',
    residency: 'eu',
    privacy_mode: privacyMode,
  });
  return key.body.key;
}

/** Bedrock in Ireland, the model's first pool for an EU key (deploy/local/gateway.yaml). */
const upstreamUrl = h.simUrls[4]!;

async function upstreamSaw(): Promise<string> {
  const response = await fetch(`${upstreamUrl}/_sim/requests`);
  return JSON.stringify(await response.json());
}

const clearUpstream = () => fetch(`${upstreamUrl}/_sim/requests`, { method: 'DELETE' });
const textOf = (message: Anthropic.Message) =>
  message.content.map((block) => (block.type === 'text' ? block.text : '')).join('');

describe('privacy modes end to end', () => {
  it('redact: the upstream sees placeholders, never the values', async () => {
    const sdk = new Anthropic({ baseURL: h.baseUrl, apiKey: await keyWithMode('redact'), maxRetries: 0 });
    await clearUpstream();
    const message = await sdk.messages.create({
      model,
      max_tokens: 256,
      messages: [{ role: 'user', content: prompt }],
    });
    const seen = await upstreamSaw();
    for (const value of Object.values(values)) {
      expect(seen).not.toContain(value);
      expect(textOf(message)).not.toContain(value);
    }
    expect(textOf(message)).toContain('[EMAIL_1]');
  });

  it('tokenise: the upstream sees placeholders, the client gets the originals back, streamed and not', async () => {
    const sdk = new Anthropic({ baseURL: h.baseUrl, apiKey: await keyWithMode('tokenise'), maxRetries: 0 });
    await clearUpstream();
    const params = { model, max_tokens: 256, messages: [{ role: 'user' as const, content: prompt }] };
    const created = await sdk.messages.create(params);
    const streamed = await sdk.messages.stream(params).finalMessage();
    const seen = await upstreamSaw();
    for (const value of Object.values(values)) expect(seen).not.toContain(value);
    expect(textOf(created)).toBe(prompt);
    expect(textOf(streamed)).toBe(prompt);
  });

  it('flag: the upstream sees the text unchanged and the header counts by type', async () => {
    const sdk = new Anthropic({ baseURL: h.baseUrl, apiKey: await keyWithMode('flag'), maxRetries: 0 });
    await clearUpstream();
    const { data, response } = await sdk.messages
      .create({ model, max_tokens: 256, messages: [{ role: 'user', content: prompt }] })
      .withResponse();
    expect(textOf(data)).toBe(prompt);
    expect(await upstreamSaw()).toContain(values.email);
    const flags = Object.fromEntries(
      (response.headers.get('x-privacy-flags') ?? '').split(',').map((entry) => entry.split('=')),
    );
    expect(flags).toEqual(expect.objectContaining({ EMAIL: '1', PHONE: '1', CARD: '1', IBAN: '1' }));
  });

  it.each([false, true])(
    'tokenise: thinking and tools over three turns (streamed %s); thinking keeps its placeholders and passes the signature check',
    async (stream) => {
      const sdk = new Anthropic({ baseURL: h.baseUrl, apiKey: await keyWithMode('tokenise'), maxRetries: 0 });
      await clearUpstream();
      const ask = async (messages: Anthropic.MessageParam[]): Promise<Anthropic.Message> => {
        const params = { model, max_tokens: 2048, thinking, tools, messages };
        return stream ? sdk.messages.stream(params).finalMessage() : sdk.messages.create(params);
      };
      const first = `sim:tool-call Find the customer ${values.email}, card ${values.card}.`;
      const history: Anthropic.MessageParam[] = [{ role: 'user', content: first }];

      // Turn 1: the model thinks (about placeholders) and calls a tool (with the originals back).
      const call = await ask(history);
      const [signed, toolUse] = [blockOf(call, 'thinking'), blockOf(call, 'tool_use')];
      expect(signed.thinking).toMatch(
        /^sim:tool-call Find the customer \[\[PII:EMAIL:1:\w+\]\], card \[\[PII:CARD:1:\w+\]\]\.$/,
      );
      expect(toolUse.input).toEqual({ echo: first });

      // Turn 2: the whole assistant turn goes back as it came, with a tool result holding more personal data.
      const result = `Found: phone ${values.phone}, IBAN ${values.iban}.`;
      history.push({ role: 'assistant', content: call.content as Anthropic.ContentBlockParam[] });
      history.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUse.id, content: result }] });
      const answer = await ask(history);
      expect(textOf(answer)).toBe(result);
      expect(blockOf(answer, 'thinking').thinking).toMatch(
        /^Found: phone \[\[PII:PHONE:1:\w+\]\], IBAN \[\[PII:IBAN:1:\w+\]\]\.$/,
      );

      // Turn 3: both earlier thinking blocks go back too, and the upstream still accepts their signatures.
      history.push({ role: 'assistant', content: answer.content as Anthropic.ContentBlockParam[] });
      history.push({ role: 'user', content: `Thanks, and write to ${values.email} again.` });
      expect(textOf(await ask(history))).toBe(`Thanks, and write to ${values.email} again.`);

      const seen = await upstreamSaw();
      for (const value of Object.values(values)) expect(seen).not.toContain(value);
    },
  );

  it('redact and tokenise refuse a thinking block sent back with personal data in its text, naming it', async () => {
    for (const mode of ['redact', 'tokenise'] as const) {
      const sdk = new Anthropic({ baseURL: h.baseUrl, apiKey: await keyWithMode(mode), maxRetries: 0 });
      await clearUpstream();
      const refused = await sdk.messages
        .create({
          model,
          max_tokens: 2048,
          thinking,
          messages: [
            { role: 'user', content: 'Hello' },
            {
              role: 'assistant',
              content: [{ type: 'thinking', thinking: `The user is ${values.email}`, signature: 'c2ln' }],
            },
            { role: 'user', content: 'Go on' },
          ],
        })
        .catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(Anthropic.BadRequestError);
      const error = (refused as InstanceType<typeof Anthropic.BadRequestError>).error as {
        error: { type: string; message: string };
      };
      expect(error.error.type).toBe('invalid_request_error');
      expect(error.error.message).toMatch(/^messages\.1\.content\.0\.thinking: .*personal data \(EMAIL\)/);
      expect(error.error.message).not.toContain(values.email);
      expect(await upstreamSaw()).toBe('[]');
    }
  });
});

const thinking = { type: 'enabled' as const, budget_tokens: 1024 };
const tools: Anthropic.Tool[] = [
  {
    name: 'find_customer',
    description: 'Finds a customer by e-mail address or card.',
    input_schema: { type: 'object', properties: { echo: { type: 'string' } } },
  },
];

function blockOf<T extends Anthropic.ContentBlock['type']>(
  message: Anthropic.Message,
  type: T,
): Extract<Anthropic.ContentBlock, { type: T }> {
  const found = message.content.find((block) => block.type === type);
  if (found === undefined) throw new Error(`no ${type} block in the answer`);
  return found as Extract<Anthropic.ContentBlock, { type: T }>;
}
