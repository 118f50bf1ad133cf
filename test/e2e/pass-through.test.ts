import fc from 'fast-check';
import { parse, stringify } from 'lossless-json';
import type { RecordedRequest } from '@gw/sim-upstream';
import { harness } from './harness';
import { admin } from './http';

/**
 * The gateway passes on what it does not act on: random valid requests carrying fields, block types and values
 * it has never seen, at any depth (integers beyond 2^53, `1.0`, escaped strings included), answer 200 and reach
 * the simulated upstream equal in meaning. Checked on the bytes the simulator received, read with a lossless
 * JSON parser, so that a number rounded by a parse and serialise on the way would fail. Privacy off. The
 * model's first EU pool is Bedrock in Ireland, whose InvokeModel body is the caller's with two top-level
 * members changed: `model` dropped (it is in the path) and Bedrock's `anthropic_version` appended.
 */

const h = harness();
const euSim = h.simUrls[4]!;

/** JSON text of a number `JSON.parse` would change, or of an ordinary one. */
const numberText = fc.oneof(
  fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }).map(String),
  fc.constantFrom(
    '9007199254740993',
    '-9007199254740993',
    '1.0',
    '2.50',
    '1E+2',
    '0.1e-5',
    '-0.0',
    '123456789.123456789012345',
  ),
  fc.integer().map(String),
);

/** JSON text of a string, sometimes written with escapes a serialiser would write otherwise. */
const stringText = fc.oneof(
  fc.string({ maxLength: 20 }).map((text) => JSON.stringify(text)),
  fc.constantFrom('"\\u00e9t\\u00e9"', '"a\\/b"', '"tab\\there"', '"\\ud83d\\ude00"', '"quote \\" and \\\\"'),
);

/** Keys the gateway and the upstream have no meaning for. */
const unknownKey = fc.stringMatching(/^x_[a-z0-9_]{1,12}$/);

/** Object text from member texts, keys unique. */
const objectText = (members: [string, string][]) =>
  `{${members.map(([key, value]) => `${JSON.stringify(key)}:${value}`).join(',')}}`;

const { value: valueText } = fc.letrec<{ value: string }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    numberText,
    stringText,
    fc.constantFrom('true', 'false', 'null'),
    fc.array(tie('value'), { maxLength: 3 }).map((items) => `[${items.join(',')}]`),
    fc.uniqueArray(fc.tuple(unknownKey, tie('value')), { maxLength: 3, selector: ([key]) => key }).map(objectText),
  ),
}));

const extraMembers = fc.uniqueArray(fc.tuple(unknownKey, valueText), { maxLength: 3, selector: ([key]) => key });

/** A text block, or a block of a type not yet known, each with unknown members. */
const blockText = fc.oneof(
  fc.tuple(stringText, extraMembers).map(([text, extra]) => objectText([['type', '"text"'], ['text', text], ...extra])),
  fc
    .tuple(fc.stringMatching(/^x_[a-z]{1,8}$/), extraMembers)
    .map(([type, extra]) => objectText([['type', JSON.stringify(type)], ...extra])),
);

const messageText = fc
  .tuple(
    fc.constantFrom('user', 'assistant', 'system'),
    fc.oneof(
      stringText,
      fc.array(blockText, { minLength: 1, maxLength: 3 }).map((blocks) => `[${blocks.join(',')}]`),
    ),
    extraMembers,
  )
  .map(([role, content, extra]) => objectText([['role', JSON.stringify(role)], ['content', content], ...extra]));

/** A whole request body as text: the fields the gateway reads, then unknown ones. */
const requestText = fc
  .tuple(fc.integer({ min: 1, max: 64 }), fc.array(messageText, { minLength: 1, maxLength: 4 }), extraMembers)
  .map(([maxTokens, messages, extra]) =>
    objectText([
      ['model', '"claude-sonnet-5"'],
      ['max_tokens', String(maxTokens)],
      ['messages', `[${messages.join(',')}]`],
      ...extra,
    ]),
  );

let key: string;

beforeAll(async () => {
  const account = await admin<{ id: string }>(h, 'POST', '/accounts', { name: 'pass-through', plan: 'pro' });
  const created = await admin<{ key: string }>(h, 'POST', '/keys', {
    account_id: account.body.id,
    name: 'pass-through',
    environment: 'live',
    residency: 'eu',
    privacy_mode: 'off',
  });
  expect(created.status).toBe(201);
  key = created.body.key;
});

/** The same JSON, with every number's text kept: equal in meaning and in every digit. */
const lossless = (text: string) => stringify(parse(text));

/** What Bedrock must receive for a request text: the same, without `model`, with its `anthropic_version` last. */
function asInvokeModelBody(text: string): string | undefined {
  const { model: _model, ...rest } = parse(text) as Record<string, unknown>;
  return stringify({ ...rest, anthropic_version: 'bedrock-2023-05-31' });
}

describe('what the gateway does not act on', () => {
  it('reaches the upstream equal in meaning, on random requests', async () => {
    await fc.assert(
      fc.asyncProperty(requestText, async (body) => {
        await fetch(`${euSim}/_sim/requests`, { method: 'DELETE' });
        const response = await fetch(`${h.baseUrl}/v1/messages`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': key, 'anthropic-version': '2023-06-01' },
          body,
        });
        const answer = await response.text();
        if (response.status !== 200) throw new Error(`${response.status} ${answer}`);
        const received = (await (await fetch(`${euSim}/_sim/requests`)).json()) as RecordedRequest[];
        expect(received).toHaveLength(1);
        expect(lossless(received[0]!.rawBody!)).toBe(asInvokeModelBody(body));
      }),
      { numRuns: 150, seed: Number(process.env.PASS_THROUGH_SEED ?? Date.now() % 2 ** 31) },
    );
  }, 120_000);
});
