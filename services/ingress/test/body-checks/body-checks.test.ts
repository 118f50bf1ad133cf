import { join } from 'node:path';
import {
  BodyChecks,
  layoutOf,
  maxLayoutKeyChars,
  maxLayoutMembers,
  summariseBody,
} from '../../src/body-checks/body-checks';
import type { BodyKind } from '../../src/body-checks/body-checks';

/** The thread as tsc builds it (`pnpm exec tsc -b`): worker threads load JavaScript. */
const builtThread = join(__dirname, '../../dist/body-checks/body-check-thread.js');

const bytesOf = (value: unknown) => new Uint8Array(Buffer.from(JSON.stringify(value)));
const large = 'x'.repeat(64 * 1024);

describe('BodyChecks', () => {
  let checks: BodyChecks;
  beforeAll(async () => {
    checks = await BodyChecks.start({
      inlineMaxBytes: 16 * 1024,
      threads: 1,
      queuedPerAccount: 2,
      queuedTotal: 4,
      script: builtThread,
      onThreadFailure: () => undefined,
    });
  });
  afterAll(() => checks.close());

  const cases: [string, BodyKind, Uint8Array][] = [
    [
      'a streamed Messages body',
      'messages',
      bytesOf({ model: 'claude-sonnet-5', max_tokens: 5, stream: true, messages: [{ role: 'user', content: large }] }),
    ],
    [
      'a count_tokens body',
      'count_tokens',
      bytesOf({ model: 'claude-haiku-5', messages: [{ role: 'user', content: large }] }),
    ],
    ['a body missing max_tokens', 'messages', bytesOf({ model: 'm', messages: [{ role: 'user', content: large }] })],
    ['a body that is not JSON', 'messages', new Uint8Array(Buffer.from(`{"model": "m", "messages": [${large}`))],
    ['a body nested too deep', 'messages', new Uint8Array(Buffer.from(`${'['.repeat(200)}${large}`))],
  ];

  it.each(cases)('answers %s on a thread exactly as inline', async (_name, kind, body) => {
    expect(body.byteLength).toBeGreaterThan(16 * 1024);
    const inline = summariseBody({ kind, body });
    expect(await checks.check(kind, body, 'account-a')).toEqual(inline);
  });

  it('leaves the caller its bytes whole, since they go on upstream', async () => {
    const body = cases[0]![2];
    const before = Buffer.from(body).toString('base64');
    await checks.check('messages', body, 'account-a');
    expect(Buffer.from(body).toString('base64')).toBe(before);
  });

  it('says what a valid body asks for: the model, whether it streams, its max_tokens, where its top-level members are', async () => {
    expect(await checks.check('messages', cases[0]![2], 'account-a')).toEqual({
      ok: true,
      value: {
        model: 'claude-sonnet-5',
        stream: true,
        inputEstimate: expect.any(Number),
        maxTokens: 5,
        layout: {
          members: expect.arrayContaining([expect.objectContaining({ key: 'model' })]),
          close: expect.any(Number),
        },
      },
    });
    expect(await checks.check('count_tokens', cases[1]![2], 'account-a')).toEqual({
      ok: true,
      value: {
        model: 'claude-haiku-5',
        stream: false,
        inputEstimate: 0,
        maxTokens: 0,
        layout: {
          members: expect.arrayContaining([expect.objectContaining({ key: 'model' })]),
          close: expect.any(Number),
        },
      },
    });
  });
});

describe('layoutOf', () => {
  it('names the body’s top-level members by their offsets, a name past the bound left empty', () => {
    const long = 'k'.repeat(maxLayoutKeyChars + 1);
    const raw = Buffer.from(`{"model":"m","${long}":1,"messages":[]}`);
    const layout = layoutOf(raw)!;
    expect(layout.members.map((member) => member.key)).toEqual(['model', '', 'messages']);
    const model = layout.members[0]!;
    expect(raw.subarray(model.valueStart, model.valueEnd).toString()).toBe('"m"');
  });

  it('sends no layout for a body of more top-level members than the bound: the router reads that one itself', () => {
    const members = Array.from({ length: maxLayoutMembers + 1 }, (_, index) => `"m${index}":0`);
    expect(layoutOf(Buffer.from(`{${members.join(',')}}`))).toBeUndefined();
    expect(layoutOf(Buffer.from(`{${members.slice(1).join(',')}}`))?.members).toHaveLength(maxLayoutMembers);
  });
});
