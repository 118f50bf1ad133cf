import { harness } from './harness';
import { admin, rawRequest } from './http';
import { ENTITY_TYPES, evasionsFor, nearMissCases, personalCases } from './fixtures/privacy-corpus';
import type { CorpusCase, Placement } from './fixtures/privacy-corpus';

/**
 * The adversarial corpus (fixtures/privacy-corpus.ts) through real flag, redact and tokenise keys, each case one
 * request, checked against what the simulated upstream received. A personal value is recalled when redact and
 * tokenise let none of its letters and digits through (in order, whatever stands between them) and flag counts
 * it; entities flag counts beyond it lower the cell's precision. A near miss is kept when redact and tokenise forward its request unchanged and flag counts nothing.
 * Recall and precision are printed per type × evasion cell.
 */

const h = harness();
/** Served first by Bedrock in Ireland for these EU keys (deploy/local/gateway.yaml). */
const model = 'claude-sonnet-5';

/** The body InvokeModel gets for a request: the same without `model`, with Bedrock's `anthropic_version` last. */
function asInvokeModelBody(body: Record<string, Json>): Record<string, Json> {
  const { model: _model, ...rest } = body;
  return { ...rest, anthropic_version: 'bedrock-2023-05-31' };
}
const SEED = 24;
const modes = ['flag', 'redact', 'tokenise'] as const;
type Mode = (typeof modes)[number];

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A request with the case's text at its placement; the last user message always ends with plain words. */
function requestFor(corpusCase: CorpusCase): Record<string, Json> {
  const [text] = corpusCase.parts as [string];
  const plain = { type: 'text', text: 'Please answer briefly.' };
  const body: Record<string, Json> = { model, max_tokens: 64 };
  const user: Json[] = [];
  const history: Json[] = [];
  const at: Record<Placement, () => void> = {
    'user-text': () => user.push(...corpusCase.parts.map((part) => ({ type: 'text', text: part }))),
    system: () => (body.system = [{ type: 'text', text }]),
    'assistant-text': () => history.push({ role: 'assistant', content: [{ type: 'text', text }] }),
    'tool-result': () =>
      history.push(
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'lookup', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: text }] },
        { role: 'assistant', content: 'Noted.' },
      ),
    'tool-input-value': () =>
      history.push({
        role: 'assistant',
        content: [{ type: 'tool_use', id: 'toolu_1', name: 'lookup', input: { q: text } }],
      }),
    'tool-input-key': () =>
      history.push({
        role: 'assistant',
        content: [{ type: 'tool_use', id: 'toolu_1', name: 'lookup', input: { [text]: true } }],
      }),
    'tool-description': () => (body.tools = [{ name: 'lookup', description: text, input_schema: { type: 'object' } }]),
    'tool-schema': () =>
      (body.tools = [
        { name: 'lookup', input_schema: { type: 'object', properties: { q: { type: 'string', default: text } } } },
      ]),
    metadata: () => (body.metadata = { user_id: text }),
    'stop-sequence': () => (body.stop_sequences = [text]),
    'document-title': () =>
      user.push({ type: 'document', title: text, source: { type: 'text', media_type: 'text/plain', data: 'x' } }),
    'search-result': () =>
      user.push({
        type: 'search_result',
        source: 'https://example.org',
        title: 'r',
        content: [{ type: 'text', text }],
      }),
    'image-url': () =>
      user.push({ type: 'image', source: { type: 'url', url: `https://img.example.org/${text}.png` } }),
    'unknown-block': () => user.push({ type: 'future_block', payload: { nested: [text] } }),
  };
  at[corpusCase.placement]();
  const first = history.length > 0 ? [{ role: 'user', content: 'Hello.' }] : [];
  body.messages = [...first, ...history, { role: 'user', content: [...user, plain] }];
  return body;
}

async function keyFor(mode: Mode): Promise<string> {
  const account = await admin<{ id: string }>(h, 'POST', '/accounts', { name: `corpus ${mode}`, plan: 'pro' });
  const created = await admin<{ key: string }>(h, 'POST', '/keys', {
    account_id: account.body.id,
    name: mode,
    environment: 'live',
    residency: 'eu',
    privacy_mode: mode,
  });
  // Thousands of requests a minute: beyond any plan's limits, which are not what this test is about.
  const limits = await admin(h, 'PATCH', `/accounts/${account.body.id}/limits`, {
    requests_per_minute: 100_000,
    concurrency: 100,
  });
  expect(limits.status).toBe(200);
  return created.body.key;
}

interface Outcome {
  status: number;
  flags: Record<string, number>;
  requestId: string;
  answer: string;
  sent: string;
}

async function send(key: string, body: Record<string, Json>): Promise<Outcome> {
  const sent = JSON.stringify(body);
  const response = await rawRequest(`${h.baseUrl}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': key },
    body: sent,
  });
  const header = String(response.headers['x-privacy-flags'] ?? 'none');
  const flags =
    header === 'none'
      ? {}
      : Object.fromEntries(header.split(',').map((entry) => [entry.split('=')[0], Number(entry.split('=')[1])]));
  const answer =
    response.status === 200
      ? (JSON.parse(response.body) as { content: { text?: string }[] }).content.map((block) => block.text).join('')
      : response.body;
  return { status: response.status, flags, requestId: String(response.headers['request-id']), answer, sent };
}

/** Every string (keys too) of a JSON value, in order, joined: what the upstream could read. */
function textsOf(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return String(value);
  if (Array.isArray(value)) return value.map(textsOf).join('');
  if (value !== null && typeof value === 'object') {
    return Object.entries(value)
      .map(([key, item]) => key + textsOf(item))
      .join('');
  }
  return '';
}

const alphanumerics = (text: string) => text.replace(/[^A-Za-z0-9]/g, '');

/** The last user text of a request, as the simulated upstream echoes it (its text blocks joined). */
function lastUserText(body: Record<string, Json>): string {
  const messages = body.messages as { role: string; content: { type: string; text?: string }[] }[];
  return messages
    .at(-1)!
    .content.filter((block) => block.type === 'text')
    .map((block) => block.text)
    .join('');
}

interface Checked {
  corpusCase: CorpusCase;
  recalled: boolean;
  /** Entities reported beyond the case's own (flag mode): false positives. */
  extra: number;
  roundTrip: boolean;
  failures: string[];
}

async function runCase(keys: Record<Mode, string>, corpusCase: CorpusCase): Promise<Checked> {
  const body = requestFor(corpusCase);
  const outcomes = await Promise.all(modes.map((mode) => send(keys[mode], body)));
  const received = await upstreamBodies(outcomes.map((outcome) => outcome.requestId));
  const failures: string[] = [];
  const byMode = Object.fromEntries(modes.map((mode, index) => [mode, outcomes[index]!])) as Record<Mode, Outcome>;
  for (const mode of modes) {
    if (byMode[mode].status !== 200)
      failures.push(`${mode}: ${byMode[mode].status} ${byMode[mode].answer.slice(0, 200)}`);
  }
  const near = corpusCase.type === 'NEAR_MISS';
  const reached = (mode: Mode) => received.get(byMode[mode].requestId);
  const leaked = (mode: Mode) => alphanumerics(textsOf(reached(mode))).includes(corpusCase.core);
  const flagged = Object.values(byMode.flag.flags).reduce((sum, count) => sum + count, 0);
  // Found under another type (a 9-digit passport number that also passes the BSN check) is found all the same.
  const ownFlags = near ? 0 : Math.min(flagged, 1);
  const forwarded = JSON.stringify(asInvokeModelBody(body));
  const recalled = near
    ? JSON.stringify(reached('redact')) === forwarded && JSON.stringify(reached('tokenise')) === forwarded
    : !leaked('redact') && !leaked('tokenise') && ownFlags >= 1;
  const roundTrip = byMode.tokenise.answer === lastUserText(body);
  return { corpusCase, recalled, extra: flagged - ownFlags, roundTrip, failures };
}

/** The bodies the simulated upstream received for these request ids (the router sends the id as x-request-id). */
async function upstreamBodies(requestIds: string[]): Promise<Map<string, unknown>> {
  const found = new Map<string, unknown>();
  for (const url of h.simUrls) {
    const recorded = (await (await fetch(`${url}/_sim/requests`)).json()) as {
      headers: Record<string, string>;
      body: unknown;
    }[];
    for (const entry of recorded) {
      if (requestIds.includes(entry.headers['x-request-id']!)) found.set(entry.headers['x-request-id']!, entry.body);
    }
  }
  return found;
}

async function runAll(keys: Record<Mode, string>, cases: CorpusCase[]): Promise<Checked[]> {
  const results: Checked[] = [];
  // A few cases at a time: the upstream's log keeps the last 100 requests.
  for (let start = 0; start < cases.length; start += 8) {
    results.push(...(await Promise.all(cases.slice(start, start + 8).map((item) => runCase(keys, item)))));
  }
  return results;
}

function report(personal: Checked[], near: Checked[]): { cell: string; recall: number; precision: number }[] {
  const rows: { cell: string; recall: number; precision: number }[] = [];
  const lines = ['type × evasion                   cases  recall  precision'];
  for (const type of ENTITY_TYPES) {
    for (const evasion of evasionsFor(type)) {
      const cell = personal.filter((item) => item.corpusCase.type === type && item.corpusCase.evasion === evasion);
      const found = cell.filter((item) => item.recalled).length;
      const extra = cell.reduce((sum, item) => sum + item.extra, 0);
      const recall = found / cell.length;
      const precision = found === 0 ? 0 : found / (found + extra);
      rows.push({ cell: `${type} × ${evasion}`, recall, precision });
      lines.push(
        `${`${type} × ${evasion}`.padEnd(32)} ${String(cell.length).padStart(5)}  ${recall.toFixed(3)}   ${precision.toFixed(3)}`,
      );
    }
  }
  const kept = near.filter((item) => item.recalled).length;
  lines.push(`near misses: ${near.length}, untouched ${kept}, precision ${(kept / near.length).toFixed(3)}`);
  process.stdout.write(`${lines.join('\n')}\n`);
  return rows;
}

describe('the adversarial privacy corpus through flag, redact and tokenise keys', () => {
  it('recalls every type × evasion cell at 0.97 or more, keeps near misses, and tokenise gives back every text', async () => {
    // A keep-alive connection the global setup left may have been closed by the admin port meanwhile: a first
    // read takes it out of the pool, so that creating the accounts below does not run into it.
    await admin(h, 'GET', '/accounts').catch(() => undefined);
    const keys = { flag: await keyFor('flag'), redact: await keyFor('redact'), tokenise: await keyFor('tokenise') };
    const personal = await runAll(keys, personalCases(SEED, 1100));
    const near = await runAll(keys, nearMissCases(SEED + 1, 1000));
    const rows = report(personal, near);
    expect([...personal, ...near].flatMap((item) => item.failures).slice(0, 5)).toEqual([]);
    expect(rows.filter((row) => row.recall < 0.97)).toEqual([]);
    expect(near.filter((item) => item.recalled).length / near.length).toBeGreaterThanOrEqual(0.97);
    expect([...personal, ...near].filter((item) => !item.roundTrip).map((item) => item.corpusCase.parts)).toEqual([]);
  }, 900_000);
});
