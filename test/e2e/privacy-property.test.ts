import fc from 'fast-check';
import { thinkingSignature } from '@gw/sim-upstream';
import { harness } from './harness';
import { admin, rawRequest } from './http';

/**
 * Property: a personal-data value put at a random place of a random valid request (a string value, an object key or
 * a number, in any role, any block type, known or not, tool definitions, metadata, URLs, stop sequences, unknown
 * fields) gets a 200 through a redact-mode key and never reaches the simulated upstream.
 */

const h = harness();
const model = 'claude-sonnet-5';

/** Values each detected without any context word; the forms that must not reach the upstream beside each. */
const personal = [
  { text: 'alice.smith@example.com', forms: ['alice.smith@example.com'] },
  { text: '4539 1488 0343 6467', forms: ['4539 1488 0343 6467', '4539148803436467'] },
  { text: '+44 20 7946 0958', forms: ['7946 0958', '2079460958'] },
  { text: 'GB82 WEST 1234 5698 7654 32', forms: ['GB82 WEST', 'GB82WEST'] },
  { text: 'AB 12 34 56 C', forms: ['AB 12 34 56 C', 'AB123456C'] },
  { text: '81.2.69.160', forms: ['81.2.69.160'] },
];
/** A card number as a JSON number, for free-form JSON (tool inputs, metadata, unknown fields). */
const cardNumber = 4539148803436467;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const word = fc.constantFrom('alpha', 'bravo', 'charlie', 'delta', 'echo', 'river', 'stone', 'blue', 'seven', 'lamp');
const words = fc.array(word, { minLength: 1, maxLength: 6 }).map((list) => list.join(' '));
const key = fc.constantFrom('note', 'city', 'size', 'colour', 'label', 'extra', 'items', 'flag');

/** Free-form JSON: what tool inputs, schemas, metadata and unknown fields hold. */
const freeJson: fc.Arbitrary<Json> = fc.letrec<{ value: Json }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    words,
    fc.integer({ min: -1000, max: 100000 }),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(key, tie('value'), { maxKeys: 3 }),
  ),
})).value;

const textBlock = words.map((text) => ({ type: 'text', text }));
const userBlock = fc.oneof(
  textBlock,
  fc.record({ type: fc.constant('image'), source: words.map((path) => imageUrl(path)) }),
  fc.record({
    type: fc.constant('document'),
    title: words,
    context: words,
    source: words.map((data) => ({ type: 'text', media_type: 'text/plain', data })),
  }),
  fc.record({
    type: fc.constant('search_result'),
    source: words.map((path) => `https://search.example.com/${path.replaceAll(' ', '/')}`),
    title: words,
    content: fc.array(textBlock, { minLength: 1, maxLength: 2 }),
  }),
  fc.record({ type: fc.constant('future_block_type'), body: freeJson, note: words }),
);

function imageUrl(path: string) {
  return { type: 'url', url: `https://images.example.com/${path.replaceAll(' ', '-')}.png` };
}

/** A conversation: user, then assistant (thinking, a tool call) and the tool's result, then user again. */
const request = fc
  .record({
    system: fc.oneof(words, fc.array(textBlock, { minLength: 1, maxLength: 2 })),
    firstUser: fc.array(userBlock, { minLength: 1, maxLength: 3 }),
    thought: words,
    toolInput: fc.dictionary(key, freeJson, { minKeys: 1, maxKeys: 3 }),
    toolResult: fc.oneof(words, fc.array(textBlock, { minLength: 1, maxLength: 2 })),
    lastUser: fc.array(userBlock, { minLength: 1, maxLength: 2 }),
    description: words,
    schema: fc.dictionary(key, freeJson, { maxKeys: 2 }),
    metadata: fc.dictionary(key, freeJson, { maxKeys: 2 }),
    stop: fc.array(words, { maxLength: 2 }),
    unknown: freeJson,
  })
  .map((parts) => ({
    model,
    max_tokens: 2048,
    thinking: { type: 'enabled', budget_tokens: 1024 },
    system: parts.system,
    metadata: { user_id: 'user-7', ...parts.metadata },
    stop_sequences: parts.stop,
    tools: [
      {
        name: 'lookup',
        description: parts.description,
        input_schema: { type: 'object', properties: parts.schema },
      },
    ],
    unknown_field: parts.unknown,
    messages: [
      { role: 'user', content: parts.firstUser },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: parts.thought, signature: thinkingSignature(parts.thought) },
          { type: 'tool_use', id: 'toolu_01', name: 'lookup', input: parts.toolInput },
        ],
      },
      {
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: 'toolu_01', content: parts.toolResult }, ...parts.lastUser],
      },
    ],
  }));

/** Keys whose values the API types or the gateway routes on: no personal data can stand there in a valid request. */
const fixedValues = new Set(['model', 'type', 'role', 'id', 'tool_use_id', 'signature', 'name', 'media_type']);
/** Objects whose keys are the API's own field names; keys are free elsewhere (inputs, schemas, metadata…). */
const fixedKeyParents = new Set(['', 'messages', 'content', 'source', 'tools', 'thinking', 'system']);

interface Place {
  kind: 'value' | 'key' | 'number';
  holder: Json[] | { [key: string]: Json };
  at: string | number;
}

/** Every place a personal value may go: string values and numbers of free JSON, keys of free objects. */
function placesIn(value: Json, parentKey: string, places: Place[], holder?: Place['holder'], at?: string | number) {
  if (typeof value === 'string' && holder !== undefined && !fixedValues.has(String(at))) {
    // A thinking block's text is signed: the gateway refuses personal data there (tested elsewhere).
    if (at !== 'thinking') places.push({ kind: 'value', holder, at: at! });
  } else if (
    typeof value === 'number' &&
    holder !== undefined &&
    !['max_tokens', 'budget_tokens'].includes(String(at))
  ) {
    places.push({ kind: 'number', holder, at: at! });
  } else if (Array.isArray(value)) {
    value.forEach((item, index) => placesIn(item, parentKey, places, value, index));
  } else if (value !== null && typeof value === 'object') {
    const structural = fixedKeyParents.has(parentKey) || 'type' in value || 'role' in value;
    for (const [name, item] of Object.entries(value)) {
      if (!structural) places.push({ kind: 'key', holder: value, at: name });
      placesIn(item, typeof at === 'number' ? parentKey : name, places, value, name);
    }
  }
}

function place(target: Place, value: string, before: string): void {
  const holder = target.holder as Record<string | number, Json>;
  if (target.kind === 'number') holder[target.at] = cardNumber;
  else if (target.kind === 'value') holder[target.at] = `${before} ${value}`;
  else {
    const item = holder[target.at]!;
    delete holder[target.at];
    holder[`${before} ${value}`] = item;
  }
}

async function redactKey(): Promise<string> {
  const account = await admin<{ id: string }>(h, 'POST', '/accounts', { name: 'privacy property', plan: 'pro' });
  const created = await admin<{ key: string }>(h, 'POST', '/keys', {
    account_id: account.body.id,
    name: 'redact',
    environment: 'live',
    residency: 'eu',
    privacy_mode: 'redact',
  });
  return created.body.key;
}

describe('redact mode, property', () => {
  it('a personal value at a random place of a random valid request gets 200 and never reaches the upstream', async () => {
    const apiKey = await redactKey();
    const placed = { value: 0, key: 0, number: 0 };
    await fc.assert(
      fc.asyncProperty(request, fc.nat(), fc.constantFrom(...personal), words, async (body, pick, entity, before) => {
        const places: Place[] = [];
        placesIn(body as unknown as Json, '', places);
        // The top level's numbers are the API's typed parameters (temperature, top_k, an unknown one alike),
        // which the privacy modes leave as they are (docs/privacy.md): no personal value goes there.
        const candidates = places.filter((place) => !(place.kind === 'number' && place.holder === (body as object)));
        const target = candidates[pick % candidates.length]!;
        place(target, entity.text, before);
        placed[target.kind] += 1;
        // Letters only: a marker of digits can itself read as a personal value (a 13-digit time did, as a
        // national id) and be redacted.
        const marker = `property-${lettersOf(Date.now())}-${lettersOf(pick)}`;
        (body as { metadata: Record<string, Json> }).metadata.marker = marker;
        const response = await rawRequest(`${h.baseUrl}/v1/messages`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
          body: JSON.stringify(body),
        });
        expect({ status: response.status, body: response.status === 200 ? '' : response.body }).toEqual({
          status: 200,
          body: '',
        });
        const received = await upstreamBodyWith(marker);
        const forms = target.kind === 'number' ? [String(cardNumber)] : entity.forms;
        for (const form of forms) expect(received).not.toContain(form);
      }),
      { numRuns: 60 },
    );
    // Every kind of place was tried.
    expect(Object.values(placed).every((count) => count > 0)).toBe(true);
  });
});

/** A whole number written in the letters a to z (base 26), so that no detector reads it as a number. */
function lettersOf(value: number): string {
  let letters = '';
  let rest = value;
  do {
    letters = String.fromCharCode(97 + (rest % 26)) + letters;
    rest = Math.floor(rest / 26);
  } while (rest > 0);
  return letters;
}

/** What the upstream received for the request carrying `marker`, as JSON text. */
async function upstreamBodyWith(marker: string): Promise<string> {
  for (const url of h.simUrls) {
    const recorded = (await (await fetch(`${url}/_sim/requests`)).json()) as { body: unknown }[];
    const found = recorded.find((entry) => JSON.stringify(entry.body).includes(marker));
    if (found !== undefined) return JSON.stringify(found.body);
  }
  throw new Error(`no upstream received the request ${marker}`);
}
