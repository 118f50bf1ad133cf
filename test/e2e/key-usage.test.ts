import Anthropic from '@anthropic-ai/sdk';
import { Client } from 'pg';
import { waitUntil } from '@gw/testing';
import { harness } from './harness';
import { admin, rawRequest } from './http';
import { waitForUsageRow } from './usage';

const h = harness();
const model = 'claude-sonnet-5';

interface KeyLine {
  key_id: string;
  name: string | null;
  display_prefix: string | null;
  requests: number;
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
  billable_tokens: number;
  cost_gbp: number;
  cost_gbp_exact: string;
  refusals: Record<string, number>;
}

interface AccountUsage {
  tokens: { used: number };
  by_model: { model: string; requests: number; billable_tokens: number; cost_gbp: number }[];
}

/** Exact decimal GBP (ten places at most) as an integer of 10⁻¹⁰ GBP, so that sums are exact. */
const tenthsOfNano = (decimal: string) => {
  const [whole = '0', fraction = ''] = decimal.split('.');
  return BigInt(whole + fraction.padEnd(10, '0').slice(0, 10));
};

async function newKey(accountId: string, name: string, extra: Record<string, unknown> = {}) {
  const created = await admin<{ id: string; key: string }>(h, 'POST', '/keys', {
    account_id: accountId,
    name,
    environment: 'live',
    residency: 'eu',
    privacy_mode: 'off',
    ...extra,
  });
  expect(created.status).toBe(201);
  return created.body;
}

const post = (key: string, body: unknown) =>
  rawRequest(`${h.baseUrl}/v1/messages`, { headers: { 'x-api-key': key }, body: JSON.stringify(body) });

const requestIdOf = (response: { headers: Record<string, unknown> }) => String(response.headers['request-id']);

describe('usage per key', () => {
  const db = new Client({ connectionString: h.databaseUrl });
  beforeAll(() => db.connect());
  afterAll(() => db.end());

  it('adds up exactly to the account usage across plain, streamed, partial and refused requests', async () => {
    const account = await admin<{ id: string }>(h, 'POST', '/accounts', { name: 'usage per key', plan: 'pro' });
    const accountId = account.body.id;
    const plain = await newKey(accountId, 'plain and streamed');
    const partial = await newKey(accountId, '=partial, "quoted"');
    const refusedOnly = await newKey(accountId, 'refused', { allowed_models: ['claude-haiku-4-5'] });

    const requestIds: string[] = [];
    // Through the official SDK: a plain answer with cache tokens, and a whole stream.
    const sdk = new Anthropic({ baseURL: h.baseUrl, apiKey: plain.key, maxRetries: 0 });
    const created = await sdk.messages
      .create({
        model,
        max_tokens: 64,
        messages: [{ role: 'user', content: 'sim:cache-write=7 sim:cache-read=11 per key usage' }],
      })
      .withResponse();
    requestIds.push(created.response.headers.get('request-id')!);
    const stream = sdk.messages.stream({
      model,
      max_tokens: 64,
      messages: [{ role: 'user', content: 'a streamed answer for one key' }],
    });
    await stream.finalMessage();
    requestIds.push((await stream.withResponse()).response.headers.get('request-id')!);

    // Partial: streams the upstream breaks off after a few deltas (billed for what was sent).
    for (const directive of ['sim:stream-error-after=3', 'sim:drop-after=2']) {
      const broken = await post(partial.key, {
        model,
        max_tokens: 64,
        stream: true,
        messages: [{ role: 'user', content: `${directive} alpha bravo charlie delta echo foxtrot` }],
      });
      expect(broken.status).toBe(200);
      expect(broken.body).toContain('event: error');
      requestIds.push(requestIdOf(broken));
    }

    // Refused after the key was verified: a model the key may not use, a body the gateway cannot act on.
    const notAllowed = await post(refusedOnly.key, {
      model,
      max_tokens: 16,
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(notAllowed.status).toBe(403);
    const invalid = await post(partial.key, { model, messages: [{ role: 'user', content: 'x' }] });
    expect(invalid.status).toBe(400);

    for (const requestId of requestIds) await waitForUsageRow(h.databaseUrl, requestId);

    const partialRefusals = (data: KeyLine[]) => data.find((line) => line.key_id === partial.id)?.refusals ?? {};
    const [accountUsage, byKey, daily, events] = await Promise.all([
      admin<AccountUsage>(h, 'GET', `/accounts/${accountId}/usage`),
      // Refusals reach metering at the next flush of ingress's counts.
      waitUntil(
        () => admin<{ data: KeyLine[]; period: { start: string } }>(h, 'GET', `/accounts/${accountId}/usage/keys`),
        { what: 'the refusals flushed' },
        (answer) => answer.body.data.length === 3 && Object.keys(partialRefusals(answer.body.data)).length > 0,
      ),
      admin<{ data: (KeyLine & { day: string })[] }>(h, 'GET', `/accounts/${accountId}/usage/keys/daily`),
      db.query<Record<string, string>>(
        `SELECT key_id, COUNT(*)::text AS requests, SUM(input_tokens)::text AS input_tokens,
                SUM(output_tokens)::text AS output_tokens, SUM(cache_read_input_tokens)::text AS cache_read,
                SUM(cache_creation_input_tokens)::text AS cache_creation, SUM(billable_tokens)::text AS billable,
                SUM(cost_gbp)::text AS cost
           FROM usage_events WHERE account_id = $1 GROUP BY key_id`,
        [accountId],
      ),
    ]);
    expect(byKey.status).toBe(200);
    const lines = byKey.body.data;
    // Every key with usage or refusals, each named; the refused one with zeros and its refusal.
    expect(lines.map((line) => line.key_id).sort()).toEqual([plain.id, partial.id, refusedOnly.id].sort());
    expect(lines.find((line) => line.key_id === refusedOnly.id)).toMatchObject({
      requests: 0,
      billable_tokens: 0,
      cost_gbp_exact: '0',
      refusals: { permission_error: 1 },
    });
    expect(partialRefusals(lines)).toEqual({ invalid_request_error: 1 });
    expect(lines.find((line) => line.key_id === plain.id)!.refusals).toEqual({});
    expect(lines.find((line) => line.key_id === partial.id)!.name).toBe('=partial, "quoted"');

    // Each key's line is exactly its events.
    for (const row of events.rows) {
      const line = lines.find((candidate) => candidate.key_id === row.key_id)!;
      expect(line).toMatchObject({
        requests: Number(row.requests),
        input_tokens: Number(row.input_tokens),
        output_tokens: Number(row.output_tokens),
        cache_read_input_tokens: Number(row.cache_read),
        cache_creation_input_tokens: Number(row.cache_creation),
        billable_tokens: Number(row.billable),
      });
      expect(tenthsOfNano(line.cost_gbp_exact)).toBe(tenthsOfNano(row.cost!));
    }
    expect(lines.find((line) => line.key_id === plain.id)!.cache_read_input_tokens).toBe(11);
    expect(lines.find((line) => line.key_id === partial.id)!.requests).toBe(2);

    // The keys add up to the account, as /v1/usage and the account's admin usage report it.
    const sum = (pick: (line: KeyLine) => number) => lines.reduce((total, line) => total + pick(line), 0);
    const v1 = await rawRequest(`${h.baseUrl}/v1/usage`, { method: 'GET', headers: { 'x-api-key': plain.key } });
    expect(sum((line) => line.billable_tokens)).toBe((JSON.parse(v1.body) as AccountUsage).tokens.used);
    expect(sum((line) => line.billable_tokens)).toBe(accountUsage.body.tokens.used);
    expect(sum((line) => line.requests)).toBe(accountUsage.body.by_model.reduce((t, m) => t + m.requests, 0));
    expect(sum((line) => line.requests)).toBe(requestIds.length);
    const keysCost = lines.reduce((total, line) => total + tenthsOfNano(line.cost_gbp_exact), 0n);
    const { rows } = await db.query<{ cost: string }>(
      'SELECT SUM(cost_gbp)::text AS cost FROM usage_aggregates WHERE account_id = $1',
      [accountId],
    );
    expect(keysCost).toBe(tenthsOfNano(rows[0]!.cost));
    expect(keysCost).toBeGreaterThan(0n);

    // The days of each key add up to its month.
    for (const line of lines) {
      const days = daily.body.data.filter((day) => day.key_id === line.key_id);
      expect(days.reduce((t, day) => t + day.billable_tokens, 0)).toBe(line.billable_tokens);
      expect(days.reduce((t, day) => t + day.requests, 0)).toBe(line.requests);
    }

    // CSV: the same lines, a formula-looking name made inert and quoted.
    const csv = await fetch(`${h.adminUrl}/admin/v1/accounts/${accountId}/usage/keys?format=csv`, {
      headers: { authorization: `Bearer ${h.adminToken}` },
    });
    expect(csv.headers.get('content-type')).toMatch(/^text\/csv/);
    expect(csv.headers.get('content-disposition')).toMatch(
      /^attachment; filename="usage-by-key-acct_\w+-\d{4}-\d\d\.csv"$/,
    );
    const csvLines = (await csv.text()).trimEnd().split('\r\n');
    expect(csvLines[0]).toBe(
      'key_id,name,display_prefix,requests,input_tokens,output_tokens,cache_read_input_tokens,cache_creation_input_tokens,billable_tokens,cost_gbp,refusals',
    );
    expect(csvLines).toHaveLength(lines.length + 1);
    const partialRow = csvLines.find((line) => line.startsWith(partial.id))!;
    expect(partialRow).toContain(`"'=partial, ""quoted"""`);
    const partialLine = lines.find((line) => line.key_id === partial.id)!;
    expect(partialRow).toContain(`,${partialLine.billable_tokens},${partialLine.cost_gbp_exact},`);
  });

  it('counts refusals per key by reason, in memory: a flood of them is a few writes, not one each', async () => {
    const account = await admin<{ id: string }>(h, 'POST', '/accounts', { name: 'refusals per key', plan: 'pro' });
    const accountId = account.body.id;
    const flooding = await newKey(accountId, 'flooding');
    const narrow = await newKey(accountId, 'narrow', { allowed_models: ['claude-haiku-4-5'] });
    const recordCalls = async () => {
      const text = await (await fetch(h.metricsUrls.metering!)).text();
      return text
        .split('\n')
        .filter(
          (line) =>
            line.startsWith('gateway_grpc_server_handled_total{') && line.includes('grpc_method="RecordRefusals"'),
        )
        .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
    };
    const callsBefore = await recordCalls();
    const flood = 200;
    for (let sent = 0; sent < flood; sent += 20) {
      await Promise.all(
        Array.from({ length: 20 }, () => post(flooding.key, { model, messages: [{ role: 'user', content: 'x' }] })),
      );
    }
    const notAllowed = await post(narrow.key, { model, max_tokens: 8, messages: [{ role: 'user', content: 'x' }] });
    expect(notAllowed.status).toBe(403);
    // Without a key that verifies (401): counted nowhere.
    expect((await post('gw_live_not_a_key', { model, max_tokens: 8, messages: [] })).status).toBe(401);

    const lines = await waitUntil(
      async () => (await admin<{ data: KeyLine[] }>(h, 'GET', `/accounts/${accountId}/usage/keys`)).body.data,
      { what: 'the refusals flushed to metering', timeoutMs: 15_000 },
      (data) =>
        data.find((line) => line.key_id === flooding.id)?.refusals.invalid_request_error === flood &&
        data.some((line) => line.key_id === narrow.id),
    );
    expect(lines.find((line) => line.key_id === flooding.id)).toMatchObject({
      requests: 0,
      billable_tokens: 0,
      refusals: { invalid_request_error: flood },
    });
    const narrowLine = lines.find((line) => line.key_id === narrow.id)!;
    expect(Object.entries(narrowLine.refusals)).toEqual([[expect.stringMatching(/^permission_error/), 1]]);
    // Stored as one row per key, day and reason, from a handful of flushes across the whole stack.
    const { rows } = await db.query('SELECT key_id, refusals FROM key_refusals WHERE account_id = $1 ORDER BY key_id', [
      accountId,
    ]);
    expect(rows).toHaveLength(2);
    expect((await recordCalls()) - callsBefore).toBeLessThan(40);
    const daily = await admin<{ data: (KeyLine & { day: string })[] }>(
      h,
      'GET',
      `/accounts/${accountId}/usage/keys/daily`,
    );
    expect(daily.body.data.find((line) => line.key_id === flooding.id)).toMatchObject({
      day: new Date().toISOString().slice(0, 10),
      refusals: { invalid_request_error: flood },
    });
  });

  it('refuses a bad period, environment or format by name, and another account to an admin key', async () => {
    const account = await admin<{ id: string }>(h, 'POST', '/accounts', { name: 'usage per key 2', plan: 'pro' });
    for (const [query, field] of [
      ['period=2026-13', 'period'],
      ['environment=prod', 'environment'],
      ['format=xml', 'format'],
    ]) {
      const answer = await admin<{ error: { type: string; message: string } }>(
        h,
        'GET',
        `/accounts/${account.body.id}/usage/keys?${query}`,
      );
      expect(answer.status).toBe(400);
      expect(answer.body.error.message).toMatch(new RegExp(`^${field}:`));
    }
    const lastYear = await admin<{ data: unknown[]; period: { start: string } }>(
      h,
      'GET',
      `/accounts/${account.body.id}/usage/keys/daily?period=2025-02`,
    );
    expect(lastYear.status).toBe(200);
    expect(lastYear.body).toMatchObject({ period: { start: '2025-02-01T00:00:00.000Z' }, data: [] });

    for (const path of ['/accounts/acct_unknown/usage/keys', '/accounts/acct_unknown/usage/keys/daily']) {
      expect((await admin(h, 'GET', path)).status).toBe(404);
    }
    const other = await admin<{ id: string }>(h, 'POST', '/accounts', { name: 'other', plan: 'pro' });
    const adminKey = await admin<{ key: string }>(h, 'POST', `/accounts/${other.body.id}/admin-keys`, { name: 'a' });
    const hidden = await fetch(`${h.adminUrl}/admin/v1/accounts/${account.body.id}/usage/keys`, {
      headers: { authorization: `Bearer ${adminKey.body.key}` },
    });
    expect(hidden.status).toBe(404);
  });
});
