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

async function upstreamSaw(): Promise<string> {
  const response = await fetch(`${h.simUrls[0]}/_sim/requests`);
  return JSON.stringify(await response.json());
}

const clearUpstream = () => fetch(`${h.simUrls[0]}/_sim/requests`, { method: 'DELETE' });
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
});
