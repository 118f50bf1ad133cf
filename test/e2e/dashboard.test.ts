import { mkdir, readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { Client } from 'pg';
import { chromium } from 'playwright-core';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { repoRoot } from '@gw/local-stack';
import { waitUntil } from '@gw/testing';
import { harness } from './harness';
import { admin } from './http';

/**
 * The account-admin dashboard in a real browser: Playwright drives Debian's headless Chromium (installed by
 * `deploy/local/infra.sh tools`; playwright-core downloads no browser) against the e2e stack. The browser runs
 * in India's time zone so that the page's local times differ from UTC.
 */
const h = harness();
const model = 'claude-sonnet-5';
const screenshots = join(repoRoot, '.local', 'test-results', 'dashboard');
const desktop = { width: 1280, height: 800 };
const phone = { width: 390, height: 844 };
const timezoneId = 'Asia/Kolkata';
/** India is UTC+5:30 all year. */
const kolkataOffsetMs = 330 * 60 * 1000;
const hostile = '<img src=x onerror=alert(1)>';
const axeSource = readFile(require.resolve('axe-core/axe.min.js'), 'utf8');

interface Limits {
  monthly_tokens: number | null;
}

interface UsageReport {
  tokens: { used: number; remaining: number };
}

const sdk = (key: string) => new Anthropic({ baseURL: h.baseUrl, apiKey: key, maxRetries: 0 });

/** The gateway's weighting of a response's usage (input + output + a tenth of cache reads + 125 % of writes). */
const billableOf = (usage: Anthropic.Usage) =>
  usage.input_tokens +
  usage.output_tokens +
  Math.ceil((usage.cache_read_input_tokens ?? 0) / 10) +
  Math.ceil(((usage.cache_creation_input_tokens ?? 0) * 5) / 4);

/** What a rejected call threw, by class, or `ok`. */
const outcomeOf = (call: Promise<unknown>) =>
  call.then(
    () => 'ok',
    (error: Error) => error.constructor.name,
  );

const publicUsage = async (key: string) =>
  (await (await fetch(`${h.baseUrl}/v1/usage`, { headers: { 'x-api-key': key } })).json()) as UsageReport;

const formatTokens = (value: number) => value.toLocaleString('en-GB');

/** "2026-11-24 17:16:08 GMT+5:30" and "2026-11-24 11:46:08 UTC" for an instant, as the page shows them. */
const kolkataText = (iso: string) =>
  `${new Date(Date.parse(iso) + kolkataOffsetMs).toISOString().slice(0, 19).replace('T', ' ')} GMT+5:30`;
const utcText = (iso: string) => `${new Date(iso).toISOString().slice(0, 19).replace('T', ' ')} UTC`;

/**
 * Reads a value in the page by evaluating an expression there: the tests are compiled without the DOM's
 * types, so nothing in them names a browser type.
 */
const inPage = async (page: Page, expression: string) => String(await page.evaluate(expression));

const textOf = async (page: Page, selector: string) => (await page.locator(selector).first().textContent()) ?? '';

const countOf = (page: Page, selector: string) => page.locator(selector).count();

/** Clicks the button of this accessible name inside `scope` (a CSS selector), once it is there and enabled. */
const clickButton = (page: Page, name: string, scope = 'body') =>
  page.locator(scope).getByRole('button', { name, exact: true }).first().click();

/** The refusal shown beside a field: inside the field's own label. */
const besideField = (input: string, field: string) => `label:has(input[name="${input}"]) [data-field-error=${field}]`;

async function signIn(page: Page, credential: string): Promise<void> {
  await page.locator('#credential').fill(credential);
  await clickButton(page, 'Sign in');
  await page.waitForSelector('[data-testid=principal]');
}

/** Presses Tab until the focus is on `selector`; fails if it never gets there. */
async function tabTo(page: Page, selector: string): Promise<void> {
  for (let presses = 0; presses < 80; presses += 1) {
    await page.keyboard.press('Tab');
    if ((await inPage(page, `document.activeElement.matches(${JSON.stringify(selector)})`)) === 'true') return;
  }
  throw new Error(`Tab never reached ${selector}`);
}

/** axe-core's serious and critical findings on the page as it is now. */
async function accessibilityViolations(page: Page): Promise<string[]> {
  if ((await inPage(page, 'typeof axe')) === 'undefined') await page.evaluate(await axeSource);
  return (await page.evaluate(
    `axe.run(document, { resultTypes: ['violations'] }).then((result) => result.violations
      .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
      .map((violation) => violation.id + ': ' + violation.nodes.map((node) => node.target.join(' ')).join(', ')))`,
  )) as string[];
}

/**
 * Checks the page as it is at 1280×800 and on a phone: no serious accessibility finding, nothing wider than
 * the phone's screen (wide tables scroll inside their own region), and a screenshot of each.
 */
async function checkPage(page: Page, name: string): Promise<void> {
  expect(await accessibilityViolations(page)).toEqual([]);
  await page.screenshot({ path: join(screenshots, `${name}.png`), fullPage: true });
  await page.setViewportSize(phone);
  try {
    await waitUntil(
      () => inPage(page, 'document.documentElement.scrollWidth <= window.innerWidth'),
      { what: `the ${name} page to fit a phone's width` },
      (fits) => fits === 'true',
    );
    expect(await accessibilityViolations(page)).toEqual([]);
    await page.screenshot({ path: join(screenshots, `${name}-phone.png`), fullPage: true });
  } finally {
    await page.setViewportSize(desktop);
  }
}

describe('dashboard', () => {
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const requestedUrls: string[] = [];
  const consoleLines: string[] = [];
  const dialogs: string[] = [];
  const pageErrors: string[] = [];
  /** Every body the admin port sent to the browser, and any answer missing its security headers. */
  const bodies: Promise<{ url: string; body: Buffer }>[] = [];
  const headerProblems: Promise<string | undefined>[] = [];
  const accountName = `Dashboard ${Date.now()}`;
  let accountId: string;
  let firstKey: string;
  let rotatedKey: string;
  let adminKey: string;
  let calledTokens = 0;

  /** A call through the official SDK; its billable tokens are what the usage page must show. */
  const call = async (key: string) => {
    const answer = await sdk(key).messages.create({
      model,
      max_tokens: 32,
      messages: [{ role: 'user', content: 'dashboard tokens' }],
    });
    calledTokens += billableOf(answer.usage);
  };

  const keysOfAccount = async () =>
    (await admin<{ data: { id: string }[] }>(h, 'GET', `/keys?account_id=${accountId}`)).body.data;

  function watch(watched: BrowserContext): void {
    watched.on('request', (request) => requestedUrls.push(request.url()));
    watched.on('console', (message) => consoleLines.push(message.text()));
    watched.on('weberror', (error) => pageErrors.push(String(error.error())));
    watched.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    watched.on('response', (response) => {
      const url = response.url();
      if (!url.startsWith(h.adminUrl)) return;
      bodies.push(response.body().then((body) => ({ url, body })));
      headerProblems.push(
        response.allHeaders().then((headers) => {
          const policy = headers['content-security-policy'] ?? '';
          const framed = headers['x-frame-options'] === 'DENY' && policy.includes("frame-ancestors 'none'");
          const strict = policy.includes("default-src 'self'") && !policy.includes('unsafe-inline');
          return framed && strict ? undefined : `${url}: ${JSON.stringify(headers)}`;
        }),
      );
    });
  }

  beforeAll(async () => {
    await mkdir(screenshots, { recursive: true });
    browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      headless: true,
      // Root in a container has no user namespace for Chromium's sandbox.
      args: ['--no-sandbox'],
    });
    context = await browser.newContext({ viewport: desktop, timezoneId, locale: 'en-GB' });
    // Fail a step within seconds rather than Playwright's 30: every wait here is for the local stack.
    context.setDefaultTimeout(15_000);
    watch(context);
    page = await context.newPage();
  });

  afterAll(async () => {
    await browser?.close();
  });

  it('is served with a strict Content-Security-Policy, no inline script, and an accessible sign-in', async () => {
    const response = await page.goto(`${h.adminUrl}/`);
    const headers = await response!.allHeaders();
    expect(response!.status()).toBe(200);
    expect(headers['content-security-policy']).toContain("default-src 'self'");
    expect(headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(headers['content-security-policy']).not.toContain('unsafe-inline');
    expect(headers['x-frame-options']).toBe('DENY');
    expect(headers['x-content-type-options']).toBe('nosniff');
    await page.waitForSelector('#credential');
    expect(await countOf(page, 'script:not([src])')).toBe(0);
    expect(await countOf(page, '[style]')).toBe(0);
    expect(await page.getByLabel('Operator token or account admin key').count()).toBe(1);
    await checkPage(page, 'sign-in');
  });

  it("signs in with the operator token; a refused account shows the API's message beside its field", async () => {
    await signIn(page, h.adminToken);
    expect(await textOf(page, '[data-testid=principal]')).toContain('Operator');
    // Accounts named as this test's: the stack holds other suites' accounts, more than one page of them.
    const accountCount = async () =>
      (await admin<{ data: unknown[] }>(h, 'GET', `/accounts?limit=200&q=${encodeURIComponent(accountName)}`)).body.data
        .length;
    const before = await accountCount();

    await page.locator('input[name=account-name]').fill('n'.repeat(201));
    await page.locator('input[name=account-plan]').fill('starter');
    await clickButton(page, 'Create account');
    expect(await textOf(page, besideField('account-name', 'name'))).toBe('Name: expected at most 200 characters.');
    await page.locator('input[name=account-name]').fill(accountName);
    await page.locator('input[name=account-plan]').fill('no-such-plan');
    await clickButton(page, 'Create account');
    expect(await textOf(page, besideField('account-plan', 'plan'))).toMatch(/^Plan: unknown plan "no-such-plan"/);
    expect(await countOf(page, '[data-field-error]')).toBe(1);
    expect(await accountCount()).toBe(before);

    await page.locator('input[name=account-plan]').fill('starter');
    await clickButton(page, 'Create account');
    const row = page.locator('tr[data-account-id]', { has: page.locator('a', { hasText: accountName }) });
    accountId = (await row.getAttribute('data-account-id')) ?? '';
    expect(accountId).toMatch(/^acct_/);
    expect(await countOf(page, '[data-field-error]')).toBe(0);
    expect(await accountCount()).toBe(before + 1);
  });

  it('renders an account named like markup as text', async () => {
    await page.locator('input[name=account-name]').fill(hostile);
    await page.locator('input[name=account-plan]').fill('starter');
    await clickButton(page, 'Create account');
    await page.locator('tr[data-account-id] a', { hasText: hostile }).first().waitFor();
    expect(await page.getByText(hostile, { exact: true }).first().isVisible()).toBe(true);
    expect(await countOf(page, 'img')).toBe(0);
    await checkPage(page, 'accounts');
    expect(dialogs).toEqual([]);
  });

  it('shows each refusal of a new key beside its field, and creates nothing', async () => {
    await page.locator(`tr[data-account-id="${accountId}"] a`).click();
    await page.waitForSelector('[data-testid=create-key]');
    const refusals = [
      {
        input: 'allowed_ips',
        value: '010.0.0.1',
        message: /^Allowed addresses, entry 1: "010\.0\.0\.1" is not an IPv4 address/,
      },
      {
        input: 'allowed_models',
        value: 'no-such-model',
        message: /^Allowed models, entry 1: unknown model "no-such-model"/,
      },
      { input: 'expires_at', value: '2020-01-01T00:00', message: /^Expiry: expected a time in the future\.$/ },
      { input: 'name', value: 'n'.repeat(201), message: /^Name: expected at most 200 characters\.$/ },
    ];
    for (const refusal of refusals) {
      await page.locator('input[name=name]').fill('refused');
      await page.locator(`input[name=${refusal.input}]`).fill(refusal.value);
      await clickButton(page, 'Create key', '[data-testid=create-key]');
      const beside = besideField(refusal.input, refusal.input);
      await page.waitForSelector(beside);
      expect(await textOf(page, beside)).toMatch(refusal.message);
      expect(await countOf(page, '[data-field-error]')).toBe(1);
      await page.locator(`input[name=${refusal.input}]`).fill('');
    }
    expect(await countOf(page, '[data-testid=shown-once]')).toBe(0);
    expect(await keysOfAccount()).toEqual([]);
  });

  it('creates a live key with the keyboard only; its value is shown once and gone after a reload', async () => {
    await page.locator('input[name=name]').fill('');
    await page.evaluate('document.activeElement.blur()');
    await tabTo(page, 'input[name=name]');
    await page.keyboard.type('browser');
    await tabTo(page, 'input[name=allowed_ips]');
    await page.keyboard.type('127.0.0.0/8');
    await tabTo(page, '[data-testid=create-key] button[type=submit]');
    await page.keyboard.press('Enter');
    await page.waitForSelector('[data-testid=secret-value]');
    firstKey = await textOf(page, '[data-testid=secret-value]');
    expect(firstKey).toMatch(/^gw_live_/);
    expect(await textOf(page, '[data-testid=shown-once]')).toContain('cannot be shown again');
    expect(await page.getByRole('button', { name: 'Copy' }).count()).toBe(1);
    await page.waitForSelector('[data-testid=keys] tbody tr');
    expect(await textOf(page, '[data-testid=keys] tbody tr')).toContain('127.0.0.0/8');
    await checkPage(page, 'key-created');

    await page.reload();
    await signIn(page, h.adminToken);
    expect(await page.content()).not.toContain(firstKey);
  });

  it("shows the key's last use once the SDK has called with it, in the viewer's zone with UTC on hover", async () => {
    await call(firstKey);
    await page.locator(`tr[data-account-id="${accountId}"] a`).click();
    expect(await page.content()).not.toContain(firstKey);
    await page.waitForSelector('[data-testid=keys] tbody tr');
    const lastUsed = '[data-testid=keys] tbody tr [data-testid=last-used]';
    await waitUntil(
      async () => {
        await clickButton(page, 'Refresh');
        return textOf(page, lastUsed);
      },
      { what: 'the key to show a last use', timeoutMs: 20_000, intervalMs: 250 },
      (text) => text !== '' && !text.includes('never'),
    );
    expect(await textOf(page, lastUsed)).toMatch(/ago|now/);
    const iso = (await page.locator(`${lastUsed} time`).getAttribute('datetime')) ?? '';
    expect(Math.abs(Date.parse(iso) - Date.now())).toBeLessThan(5 * 60 * 1000);
    expect(await textOf(page, `${lastUsed} time`)).toBe(kolkataText(iso));
    expect(await page.locator(`${lastUsed} .timestamp`).getAttribute('title')).toBe(utcText(iso));
    await checkPage(page, 'keys');
  });

  it('rotates a key: both work until the old one is revoked, after which the SDK gets AuthenticationError', async () => {
    const oldKeyId = (await page.locator('[data-testid=keys] tbody tr').first().getAttribute('data-key-id')) ?? '';
    const oldRow = `tr[data-key-id="${oldKeyId}"]`;
    await clickButton(page, 'Rotate', oldRow);
    await page.waitForSelector('[data-testid=secret-value]');
    rotatedKey = await textOf(page, '[data-testid=secret-value]');
    expect(rotatedKey).toMatch(/^gw_live_/);
    expect(rotatedKey).not.toBe(firstKey);
    expect(await textOf(page, '[data-testid=shown-once]')).toContain('Both keys work until you revoke the old one');
    await clickButton(page, 'I have copied it');
    expect(await countOf(page, '[data-testid=shown-once]')).toBe(0);
    await call(firstKey);
    await call(rotatedKey);

    await clickButton(page, 'Revoke', oldRow);
    await page.waitForSelector('[data-testid=confirm]');
    expect(await textOf(page, '[data-testid=confirm]')).toContain(`"browser" (${firstKey.slice(0, 12)}…)`);
    await clickButton(page, 'Revoke', '[data-testid=confirm]');
    await waitUntil(
      () => textOf(page, `${oldRow} [data-testid=key-status]`),
      { what: 'the old key to show as revoked' },
      (status) => status.startsWith('revoked'),
    );
    await waitUntil(
      () =>
        outcomeOf(sdk(firstKey).messages.create({ model, max_tokens: 8, messages: [{ role: 'user', content: 'x' }] })),
      { what: 'the SDK to get AuthenticationError with the revoked key' },
      (outcome) => outcome === 'AuthenticationError',
    );
    await call(rotatedKey);

    await page.locator('select[name=status-filter]').selectOption('active');
    await waitUntil(
      () => countOf(page, '[data-testid=keys] tbody tr'),
      { what: 'only the active key' },
      (n) => n === 1,
    );
    expect(await textOf(page, '[data-testid=keys] tbody tr [data-testid=key-status]')).toBe('active');
    await page.locator('select[name=status-filter]').selectOption('all');
  });

  it('renders a key named like markup as text', async () => {
    await page.locator('input[name=name]').fill(hostile);
    await page.locator('select[name=environment]').selectOption('test');
    await clickButton(page, 'Create key', '[data-testid=create-key]');
    // The rotated key's value was dismissed: what is shown now is the new key's.
    await page.locator('[data-testid=shown-once] h3', { hasText: hostile }).waitFor();
    await page.locator('[data-testid=keys] tbody tr', { hasText: hostile }).waitFor();
    expect(await page.getByRole('cell', { name: hostile, exact: true }).isVisible()).toBe(true);
    expect(await countOf(page, 'img')).toBe(0);
    expect(dialogs).toEqual([]);
    await clickButton(page, 'I have copied it');
  });

  it('shows the tokens of those calls as the usage of the month, and the tokens per day', async () => {
    expect(calledTokens).toBeGreaterThan(0);
    await page.getByRole('tab', { name: 'Usage', exact: true }).click();
    await waitUntil(
      async () => {
        await clickButton(page, 'Refresh', '[data-testid=usage]');
        return textOf(page, '[data-testid=tokens-used]');
      },
      { what: 'the dashboard to show the tokens of the calls', timeoutMs: 30_000, intervalMs: 250 },
      (text) => text === formatTokens(calledTokens),
    );
    expect((await publicUsage(rotatedKey)).tokens.used).toBe(calledTokens);
    const report = await publicUsage(rotatedKey);
    expect(await textOf(page, '[data-testid=tokens-remaining]')).toBe(formatTokens(report.tokens.remaining));
    expect(await textOf(page, '[data-testid=by-model]')).toContain(model);
    await page.waitForSelector('[data-testid=daily-chart] canvas');
    expect(await page.locator('[data-testid=daily-chart]').getAttribute('aria-label')).toContain(
      `${formatTokens(calledTokens)} billable tokens this month`,
    );
    expect(await inPage(page, `document.querySelector('.bar-used').style.width`)).not.toBe('0%');
    await checkPage(page, 'usage');
  });

  it('suspends and resumes an account after confirmation, and sets and clears a limit override', async () => {
    await clickButton(page, '← All accounts');
    const row = `tr[data-account-id="${accountId}"]`;
    const status = () => textOf(page, `${row} .status`);
    await clickButton(page, 'Suspend', row);
    expect(await textOf(page, '[data-testid=confirm]')).toContain(`Suspend ${accountName}?`);
    // The keyboard is in the dialog, on Cancel; Escape leaves it and changes nothing.
    await waitUntil(
      () => inPage(page, 'document.activeElement.textContent'),
      { what: 'the focus to move to Cancel' },
      (focused) => focused === 'Cancel',
    );
    await page.keyboard.press('Escape');
    await page.locator('[data-testid=confirm]').waitFor({ state: 'detached' });
    expect(await status()).toBe('active');
    await clickButton(page, 'Suspend', row);
    await clickButton(page, 'Suspend', '[data-testid=confirm]');
    await waitUntil(status, { what: 'the account to show as suspended' }, (text) => text === 'suspended');
    await waitUntil(
      () =>
        outcomeOf(
          sdk(rotatedKey).messages.create({ model, max_tokens: 8, messages: [{ role: 'user', content: 'x' }] }),
        ),
      { what: "the account's key to be refused" },
      (outcome) => outcome === 'PermissionDeniedError',
    );
    await clickButton(page, 'Resume', row);
    await clickButton(page, 'Resume', '[data-testid=confirm]');
    await waitUntil(status, { what: 'the account to show as active' }, (text) => text === 'active');

    const limits = async () => (await admin<{ limits: Limits }>(h, 'GET', `/accounts/${accountId}`)).body.limits;
    await clickButton(page, 'Limits', row);
    await page.locator('input[name=monthly_tokens]').fill('5000');
    await clickButton(page, 'Save limits');
    await waitUntil(limits, { what: 'the override to be saved' }, (saved) => saved.monthly_tokens === 5000);
    await clickButton(page, 'Limits', row);
    expect(await page.locator('input[name=monthly_tokens]').inputValue()).toBe('5000');
    await page.locator('input[name=monthly_tokens]').fill('');
    await clickButton(page, 'Save limits');
    await waitUntil(limits, { what: 'the override to be cleared' }, (saved) => saved.monthly_tokens === null);
  });

  it('creates an account admin key and ends the session on sign-out', async () => {
    await clickButton(page, 'Admin key', `tr[data-account-id="${accountId}"]`);
    await page.locator('input[name=admin-key-name]').fill('dashboard');
    await clickButton(page, 'Create admin key');
    await page.locator('[data-testid=secret-value]', { hasText: 'gw_admin_' }).waitFor();
    adminKey = await textOf(page, '[data-testid=secret-value]');
    expect(adminKey).toMatch(/^gw_admin_/);

    await clickButton(page, 'Sign out');
    await page.waitForSelector('#credential');
    expect(await countOf(page, '[data-testid=accounts]')).toBe(0);
    expect(await page.locator('#credential').inputValue()).toBe('');
    expect(await page.content()).not.toContain(adminKey);
  });

  it('lets an account admin key see its own account and no other', async () => {
    await signIn(page, adminKey);
    expect(await textOf(page, '[data-testid=principal]')).toContain(`Account admin: ${accountName}`);
    expect(await textOf(page, '[data-testid=account-name]')).toContain(accountName);
    expect(await countOf(page, '[data-testid=accounts]')).toBe(0);
    expect(await countOf(page, 'button:text-is("← All accounts")')).toBe(0);
    await page.waitForSelector('[data-testid=keys] tbody tr');
    expect(await countOf(page, '[data-testid=keys] tbody tr')).toBe((await keysOfAccount()).length);
    expect(await page.content()).not.toContain(h.accountId);
    // What the page's client would get for another account, whatever the page chose to show.
    const asAdminKey = (path: string) =>
      fetch(`${h.adminUrl}/admin/v1${path}`, { headers: { authorization: `Bearer ${adminKey}` } });
    expect((await asAdminKey(`/accounts/${h.accountId}`)).status).toBe(404);
    expect((await asAdminKey(`/keys?account_id=${h.accountId}`)).status).toBe(404);
    const own = (await (await asAdminKey('/accounts')).json()) as { data: { id: string }[] };
    expect(own.data.map((account) => account.id)).toEqual([accountId]);
  });

  it('keeps credentials out of URLs, storage and every log, key hashes out of every answer, and breaks no policy', async () => {
    const credentials = [h.adminToken, adminKey, firstKey, rotatedKey];
    const stored = await inPage(page, 'JSON.stringify([{ ...localStorage }, { ...sessionStorage }, document.cookie])');
    expect(stored).toBe('[{},{},""]');
    expect(await context.cookies()).toEqual([]);
    const logFiles = await readdir(h.logsDir);
    expect(logFiles).toEqual(expect.arrayContaining(['ingress.log', 'auth.log']));
    const logs = await Promise.all(logFiles.map((file) => readFile(join(h.logsDir, file), 'utf8')));
    for (const credential of credentials) {
      expect(requestedUrls.filter((url) => url.includes(credential))).toEqual([]);
      expect(logFiles.filter((_file, index) => logs[index]!.includes(credential))).toEqual([]);
    }
    // Nothing from elsewhere; data: URLs are Chromium's own (the date field's calendar icon).
    expect(requestedUrls.filter((url) => !url.startsWith(h.adminUrl) && !url.startsWith('data:'))).toEqual([]);
    expect(requestedUrls.filter((url) => url.startsWith(`${h.adminUrl}/x`))).toEqual([]);

    const database = new Client({ connectionString: h.databaseUrl });
    await database.connect();
    const hashes = await database
      .query<{ account_id: string; key_hash: Buffer }>(
        'SELECT account_id, key_hash FROM api_keys UNION ALL SELECT account_id, key_hash FROM admin_keys',
      )
      .finally(() => database.end());
    // The account's three keys and its admin key, with every other key of the stack.
    expect(hashes.rows.filter((row) => row.account_id === accountId)).toHaveLength(4);
    const answers = await Promise.all(bodies);
    // The sweep reads real answers: the keys' listing went through it.
    expect(answers.some(({ body }) => body.includes(firstKey.slice(0, 12)))).toBe(true);
    const leaks = answers.flatMap(({ url, body }) => {
      const text = body.toString('latin1');
      return hashes.rows
        .filter(
          ({ key_hash: hash }) =>
            [hash.toString('hex'), hash.toString('base64'), hash.toString('base64url')].some(
              (form) => text.includes(form) || text.includes(form.toUpperCase()),
            ) || body.includes(hash),
        )
        .map(() => url);
    });
    expect(leaks).toEqual([]);

    expect((await Promise.all(headerProblems)).filter((problem) => problem !== undefined)).toEqual([]);
    expect(headerProblems.length).toBeGreaterThan(10);
    expect(consoleLines.filter((line) => /Content Security Policy/i.test(line))).toEqual([]);
    expect(pageErrors).toEqual([]);
    expect(dialogs).toEqual([]);
  });

  it('ends the session after 15 minutes without activity', async () => {
    // Playwright's clock runs the page's idle timer forward instead of the test waiting 15 minutes.
    const idle = await browser.newContext({ viewport: desktop });
    try {
      await idle.clock.install();
      const idlePage = await idle.newPage();
      await idlePage.goto(`${h.adminUrl}/`);
      await signIn(idlePage, adminKey);
      await idlePage.waitForSelector('[data-testid=keys] tbody tr');
      await idlePage.clock.fastForward('14:00');
      expect(await countOf(idlePage, '[data-testid=principal]')).toBe(1);
      await idlePage.clock.fastForward('01:30');
      await idlePage.waitForSelector('#credential');
      expect(await textOf(idlePage, '.sign-in')).toContain('Signed out after 15 minutes without activity.');
      expect(await idlePage.content()).not.toContain(adminKey);
    } finally {
      await idle.close();
    }
  });
});
