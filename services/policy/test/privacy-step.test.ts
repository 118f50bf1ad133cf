import { ok } from '@gw/errors';
import { transformBody } from '../src/privacy';
import type { PrivacyMode } from '../src/privacy';
import type { PrivacyPool } from '../src/privacy-pool';
import { inlineMaxBytes, privacyStep } from '../src/privacy-step';

const never = new AbortController().signal;

/** A body of exactly `size` bytes with one e-mail address in it. */
function bodyOf(size: number): Uint8Array {
  const shell = JSON.stringify({ messages: [{ role: 'user', content: 'mail bob@example.com ' }] });
  const padding = ' '.repeat(size - Buffer.byteLength(shell));
  return new Uint8Array(Buffer.from(shell.replace('mail ', `mail ${padding}`)));
}

describe('privacyStep', () => {
  const sentToPool: Array<[string, PrivacyMode, number]> = [];
  const pool: Pick<PrivacyPool, 'run'> = {
    run: async (account, mode, body) => {
      sentToPool.push([account, mode, body.byteLength]);
      return ok({ flags: {}, placeholders: {}, nonce: 'from-pool' });
    },
  };
  const step = privacyStep(pool);

  beforeEach(() => (sentToPool.length = 0));

  it('runs bodies up to the inline bound on the calling thread, larger ones on the pool for their account', async () => {
    const small = bodyOf(inlineMaxBytes);
    expect(await step('acct_a', 'redact', small, never)).toEqual(ok(transformBody('redact', small)));
    expect(sentToPool).toEqual([]);
    expect(await step('acct_a', 'redact', bodyOf(inlineMaxBytes + 1), never)).toEqual(
      ok({ flags: {}, placeholders: {}, nonce: 'from-pool' }),
    );
    expect(sentToPool).toEqual([['acct_a', 'redact', inlineMaxBytes + 1]]);
  });

  it('leaves mode off alone, whatever the size', async () => {
    expect(await step('acct_a', 'off', bodyOf(inlineMaxBytes * 4), never)).toEqual(
      ok({ flags: {}, placeholders: {}, nonce: '' }),
    );
    expect(sentToPool).toEqual([]);
  });

  it('refuses with invalid_request_error a body whose thinking block holds personal data, inline or on the pool', async () => {
    const thinking = { type: 'thinking', thinking: 'mail bob@example.com', signature: 'sig' };
    const body = new Uint8Array(
      Buffer.from(JSON.stringify({ messages: [{ role: 'assistant', content: [thinking] }] })),
    );
    const refused = { ok: false, error: expect.objectContaining({ type: 'invalid_request_error' }) };
    expect(await step('acct_a', 'redact', body, never)).toEqual(refused);
    const refusingPool = privacyStep({ run: async () => ok({ ...transformBody('tokenise', body) }) });
    expect(await refusingPool('acct_a', 'tokenise', bodyOf(inlineMaxBytes + 1), never)).toEqual(refused);
  });

  it('fails closed inline too: a body it cannot read is an api_error', async () => {
    expect(await step('acct_a', 'tokenise', new Uint8Array(Buffer.from('[')), never)).toEqual({
      ok: false,
      error: expect.objectContaining({ type: 'api_error' }),
    });
  });
});

describe('transformBody', () => {
  const bytes = (value: unknown) => new Uint8Array(Buffer.from(JSON.stringify(value)));

  it('forwards the body as it came when redact or tokenise finds nothing', () => {
    const body = bytes({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA/+442079460958/AAAA' } },
            { type: 'text', text: 'What is in the picture?' },
          ],
        },
      ],
    });
    for (const mode of ['redact', 'tokenise'] as const) {
      expect(transformBody(mode, body)).toEqual({ flags: {}, placeholders: {}, nonce: '' });
    }
  });

  it('forwards a new body when it finds something, the image data unchanged', () => {
    const image = {
      type: 'image',
      source: { type: 'base64', media_type: 'image/png', data: 'AAAA/+442079460958/AAAA' },
    };
    const body = bytes({
      messages: [{ role: 'user', content: [image, { type: 'text', text: 'Call +442079460958' }] }],
    });
    const outcome = transformBody('redact', body);
    expect(JSON.parse(Buffer.from(outcome.body!).toString())).toEqual({
      messages: [{ role: 'user', content: [image, { type: 'text', text: 'Call [PHONE_1]' }] }],
    });
  });
});
