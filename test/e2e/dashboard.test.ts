import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import puppeteer from 'puppeteer-core';
import type { Browser, HTTPRequest, Page } from 'puppeteer-core';
import { repoRoot } from '@gw/local-stack';
import { waitUntil } from '@gw/testing';
import { harness } from './harness';
import { admin } from './http';

/**
 * The account-admin dashboard in a real browser (Debian's headless Chromium, installed by
 * `deploy/local/infra.sh tools`) against the e2e stack.
 */
const h = harness();
const model = 'claude-sonnet-5';

interface Limits {
  monthly_tokens: number | null;
}

interface UsageReport {
  tokens: { used: number; remaining: number };
  by_model: { model: string; billable_tokens: number }[];
}

const messages = (key: string) =>
  fetch(`${h.baseUrl}/v1/messages`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({ model, max_tokens: 32, messages: [{ role: 'user', content: 'dashboard tokens' }] }),
  });

const publicUsage = async (key: string) =>
  (await (await fetch(`${h.baseUrl}/v1/usage`, { headers: { 'x-api-key': key } })).json()) as UsageReport;

/**
 * Reads a value in the page by evaluating an expression there: the tests are compiled without the DOM's
 * types, so nothing in them names a browser type.
 */
const inPage = async (page: Page, expression: string) => String(await page.evaluate(expression));

const textOf = (page: Page, selector: string) =>
  inPage(page, `document.querySelector(${JSON.stringify(selector)})?.textContent ?? ''`);

const countOf = async (page: Page, selector: string) =>
  Number(await inPage(page, `document.querySelectorAll(${JSON.stringify(selector)}).length`));

/** Clicks the button showing this text, inside `scope` (a CSS selector), once it is there and enabled. */
const clickButton = (page: Page, text: string, scope = 'body') =>
  page.locator(`${scope} button::-p-text(${JSON.stringify(text)})`).click();

/** Replaces a field's text as a user would: select it all, delete, type. */
async function fill(page: Page, selector: string, value: string): Promise<void> {
  await page.waitForSelector(selector);
  await page.click(selector, { count: 3 });
  await page.keyboard.press('Backspace');
  if (value !== '') await page.type(selector, value);
}

async function signIn(page: Page, credential: string): Promise<void> {
  await page.waitForSelector('#credential');
  await page.type('#credential', credential);
  await clickButton(page, 'Sign in');
  await page.waitForSelector('[data-testid=principal]');
}

describe('dashboard', () => {
  let browser: Browser;
  let page: Page;
  const requestedUrls: string[] = [];
  const policyViolations: string[] = [];
  const accountName = `Dashboard ${Date.now()}`;
  let accountId: string;
  let firstKey: string;
  let rotatedKey: string;
  let adminKey: string;

  beforeAll(async () => {
    browser = await puppeteer.launch({
      executablePath: '/usr/bin/chromium',
      headless: true,
      // Root in a container has no user namespace for Chromium's sandbox.
      args: ['--no-sandbox'],
    });
    page = await browser.newPage();
    await page.setViewport({ width: 1400, height: 1000 });
    page.on('request', (request: HTTPRequest) => requestedUrls.push(request.url()));
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) policyViolations.push(message.text());
    });
  });

  afterAll(async () => {
    await browser?.close();
  });

  it('is served with a strict Content-Security-Policy and no inline script', async () => {
    const response = await page.goto(`${h.adminUrl}/`);
    const headers = response!.headers();
    expect(response!.status()).toBe(200);
    expect(headers['content-security-policy']).toContain("default-src 'self'");
    expect(headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(headers['content-security-policy']).not.toContain('unsafe-inline');
    expect(headers['x-frame-options']).toBe('DENY');
    expect(headers['x-content-type-options']).toBe('nosniff');
    expect(await countOf(page, 'script:not([src])')).toBe(0);
    expect(await countOf(page, '[style]')).toBe(0);
  });

  it('signs in with the operator token and creates an account', async () => {
    await signIn(page, h.adminToken);
    expect(await textOf(page, '[data-testid=principal]')).toContain('Operator');
    await page.type('input[name=account-name]', accountName);
    await page.type('input[name=account-plan]', 'starter');
    await clickButton(page, 'Create account');
    await page.waitForSelector(`::-p-xpath(//tr[td/a[text()="${accountName}"]])`);
    accountId = await inPage(
      page,
      `[...document.querySelectorAll('tr[data-account-id]')].find((row) => row.textContent.includes(${JSON.stringify(accountName)})).dataset.accountId`,
    );
    expect(accountId).toMatch(/^acct_/);
    // A locator waits until the row is there (the list renders after sign-in).
    await page.locator(`tr[data-account-id="${accountId}"] a`).click();
    await page.waitForSelector('[data-testid=create-key]');
  });

  it("shows the admin API's refusal beside the field concerned", async () => {
    await page.type('input[name=name]', 'refused');
    await page.type('input[name=allowed_ips]', '010.0.0.1');
    await clickButton(page, 'Create key', '[data-testid=create-key]');
    const beside = 'label:has(input[name=allowed_ips]) [data-field-error=allowed_ips]';
    await page.waitForSelector(beside);
    expect(await textOf(page, beside)).toMatch(/^allowed_ips\.0: "010\.0\.0\.1"/);

    await fill(page, 'input[name=allowed_ips]', '');
    await page.type('input[name=allowed_models]', 'no-such-model');
    await clickButton(page, 'Create key', '[data-testid=create-key]');
    const besideModels = 'label:has(input[name=allowed_models]) [data-field-error=allowed_models]';
    await page.waitForSelector(besideModels);
    expect(await textOf(page, besideModels)).toMatch(/^allowed_models\.0: unknown model "no-such-model"/);
    expect(await countOf(page, '[data-field-error]')).toBe(1);
    await fill(page, 'input[name=allowed_models]', '');
    expect(await page.$('[data-testid=shown-once]')).toBeNull();
  });

  it('creates a key whose value is shown once, and gone after a reload', async () => {
    await fill(page, 'input[name=allowed_ips]', '127.0.0.0/8');
    await fill(page, 'input[name=name]', 'browser');
    await clickButton(page, 'Create key', '[data-testid=create-key]');
    await page.waitForSelector('[data-testid=secret-value]');
    firstKey = await textOf(page, '[data-testid=secret-value]');
    expect(firstKey).toMatch(/^gw_live_/);
    expect(await textOf(page, '[data-testid=shown-once]')).toContain('cannot be shown again');
    await page.waitForSelector('[data-testid=keys] tbody tr');
    expect(await textOf(page, '[data-testid=keys] tbody tr')).toContain('127.0.0.0/8');

    await page.reload();
    await signIn(page, h.adminToken);
    expect(await page.content()).not.toContain(firstKey);
  });

  it('shows last used once the key has made a request', async () => {
    expect((await messages(firstKey)).status).toBe(200);
    // A locator waits until the row is there (the list renders after sign-in).
    await page.locator(`tr[data-account-id="${accountId}"] a`).click();
    await page.waitForSelector('[data-testid=keys] tbody tr');
    const lastUsed = await waitUntil(
      async () => {
        await clickButton(page, 'Refresh');
        return textOf(page, '[data-testid=keys] tbody tr [data-testid=last-used]');
      },
      { what: 'the key to show a last use', timeoutMs: 20_000, intervalMs: 250 },
      (text) => text !== '' && !text.includes('never'),
    );
    expect(lastUsed).toMatch(/ago|now/);
    expect(lastUsed).toMatch(/\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC/);
  });

  it('rotates a key: both work until the old one is revoked, which then gets 401', async () => {
    const oldRow = '[data-testid=keys] tbody tr';
    const oldKeyId = await inPage(page, `document.querySelector(${JSON.stringify(oldRow)}).dataset.keyId`);
    await clickButton(page, 'Rotate', `tr[data-key-id="${oldKeyId}"]`);
    await page.waitForSelector('[data-testid=secret-value]');
    rotatedKey = await textOf(page, '[data-testid=secret-value]');
    expect(rotatedKey).toMatch(/^gw_live_/);
    expect(rotatedKey).not.toBe(firstKey);
    expect(await textOf(page, '[data-testid=shown-once]')).toContain('Both keys work until you revoke the old one');
    expect((await messages(firstKey)).status).toBe(200);
    expect((await messages(rotatedKey)).status).toBe(200);

    await clickButton(page, 'Revoke', `tr[data-key-id="${oldKeyId}"]`);
    await page.waitForSelector('[data-testid=confirm]');
    expect(await textOf(page, '[data-testid=confirm]')).toContain(`"browser" (${firstKey.slice(0, 12)}…)`);
    await clickButton(page, 'Revoke', '[data-testid=confirm]');
    await waitUntil(
      () => textOf(page, `tr[data-key-id="${oldKeyId}"] [data-testid=key-status]`),
      { what: 'the old key to show as revoked' },
      (status) => status.startsWith('revoked'),
    );
    await waitUntil(
      async () => (await messages(firstKey)).status,
      { what: 'the revoked key to get 401' },
      (status) => status === 401,
    );
    expect((await messages(rotatedKey)).status).toBe(200);
  });

  it("shows the month's usage as GET /v1/usage reports it, and the tokens per day", async () => {
    // Four requests were answered; metering records them asynchronously through Kafka.
    const report = await waitUntil(
      () => publicUsage(rotatedKey),
      { what: 'four requests metered', timeoutMs: 30_000 },
      (usage) =>
        usage.by_model.some((line) => line.model === model && line.billable_tokens > 0) && usage.tokens.used > 0,
    );
    const settled = await waitUntil(
      () => publicUsage(rotatedKey),
      { what: 'usage to stop changing' },
      (again) => again.tokens.used === report.tokens.used,
    );
    await clickButton(page, 'Usage');
    await waitUntil(
      async () => {
        await clickButton(page, 'Refresh', '[data-testid=usage]');
        return textOf(page, '[data-testid=tokens-used]');
      },
      { what: 'the dashboard to show the metered tokens', timeoutMs: 30_000, intervalMs: 250 },
      (text) => text === settled.tokens.used.toLocaleString('en-GB'),
    );
    expect(await textOf(page, '[data-testid=tokens-remaining]')).toBe(settled.tokens.remaining.toLocaleString('en-GB'));
    expect(await textOf(page, '[data-testid=by-model]')).toContain(model);
    const chart = await page.waitForSelector('[data-testid=daily-chart] canvas');
    expect(chart).not.toBeNull();
    expect(await inPage(page, `document.querySelector('[data-testid=daily-chart]').ariaLabel`)).toContain(
      `${settled.tokens.used.toLocaleString('en-GB')} billable tokens this month`,
    );
    expect(await inPage(page, `document.querySelector('.bar-used').style.width`)).not.toBe('0%');

    await mkdir(join(repoRoot, '.local'), { recursive: true });
    await page.screenshot({ path: join(repoRoot, '.local', 'dashboard.png'), fullPage: true });
  });

  it('suspends and resumes an account after confirmation, and sets and clears a limit override', async () => {
    await clickButton(page, '← All accounts');
    const row = `tr[data-account-id="${accountId}"]`;
    const status = () => textOf(page, `${row} .status`);
    await clickButton(page, 'Suspend', row);
    expect(await textOf(page, '[data-testid=confirm]')).toContain(`Suspend ${accountName}?`);
    await clickButton(page, 'Suspend', '[data-testid=confirm]');
    await waitUntil(status, { what: 'the account to show as suspended' }, (text) => text === 'suspended');
    await waitUntil(
      async () => (await messages(rotatedKey)).status,
      { what: "the account's key to get 403" },
      (code) => code === 403,
    );
    await clickButton(page, 'Resume', row);
    await clickButton(page, 'Resume', '[data-testid=confirm]');
    await waitUntil(status, { what: 'the account to show as active' }, (text) => text === 'active');

    const limits = async () => (await admin<{ limits: Limits }>(h, 'GET', `/accounts/${accountId}`)).body.limits;
    await clickButton(page, 'Limits', row);
    await fill(page, 'input[name=monthly_tokens]', '5000');
    await clickButton(page, 'Save limits');
    await waitUntil(limits, { what: 'the override to be saved' }, (saved) => saved.monthly_tokens === 5000);
    await clickButton(page, 'Limits', row);
    expect(await inPage(page, `document.querySelector('input[name=monthly_tokens]').value`)).toBe('5000');
    await fill(page, 'input[name=monthly_tokens]', '');
    await clickButton(page, 'Save limits');
    await waitUntil(limits, { what: 'the override to be cleared' }, (saved) => saved.monthly_tokens === null);
  });

  it('ends the session on sign-out', async () => {
    await clickButton(page, 'Admin key', `tr[data-account-id="${accountId}"]`);
    await page.type('input[name=admin-key-name]', 'dashboard');
    await clickButton(page, 'Create admin key');
    await page.waitForSelector('[data-testid=secret-value]');
    adminKey = await textOf(page, '[data-testid=secret-value]');
    expect(adminKey).toMatch(/^gw_admin_/);

    await clickButton(page, 'Sign out');
    await page.waitForSelector('#credential');
    expect(await page.$('[data-testid=accounts]')).toBeNull();
    expect(await inPage(page, `document.querySelector('#credential').value`)).toBe('');
    expect(await page.content()).not.toContain(adminKey);
  });

  it('lets an account admin key see only its own account', async () => {
    await signIn(page, adminKey);
    expect(await textOf(page, '[data-testid=principal]')).toContain(`Account admin: ${accountName}`);
    expect(await textOf(page, '[data-testid=account-name]')).toContain(accountName);
    expect(await page.$('[data-testid=accounts]')).toBeNull();
    await page.waitForSelector('[data-testid=keys] tbody tr');
    const listed = await admin<{ data: unknown[] }>(h, 'GET', `/keys?account_id=${accountId}`);
    expect(await countOf(page, '[data-testid=keys] tbody tr')).toBe(listed.body.data.length);
    expect(await page.content()).not.toContain(h.accountId);
  });

  it('keeps the credentials out of storage, URLs and the ingress log, and breaks no policy', async () => {
    const stored = await inPage(page, 'JSON.stringify([{ ...localStorage }, { ...sessionStorage }, document.cookie])');
    const ingressLog = await readFile(join(h.logsDir, 'ingress.log'), 'utf8');
    for (const credential of [h.adminToken, adminKey]) {
      expect(stored).not.toContain(credential);
      expect(page.url()).not.toContain(credential);
      expect(requestedUrls.filter((url) => url.includes(credential))).toEqual([]);
      expect(ingressLog).not.toContain(credential);
    }
    expect(stored).toBe('[{},{},""]');
    // Nothing from elsewhere; data: URLs are Chromium's own (the date field's calendar icon).
    expect(requestedUrls.filter((url) => !url.startsWith(h.adminUrl) && !url.startsWith('data:'))).toEqual([]);
    expect(policyViolations).toEqual([]);
  });

  it('ends the session after 15 minutes without activity', async () => {
    expect(await countOf(page, '[data-testid=principal]')).toBe(1);
    // Chromium's virtual time runs the page's idle timer at once instead of the test waiting 15 minutes.
    const devtools = await page.createCDPSession();
    await devtools.send('Emulation.setVirtualTimePolicy', { policy: 'advance', budget: 16 * 60 * 1000 });
    await page.waitForSelector('#credential');
    expect(await textOf(page, '.sign-in')).toContain('Signed out after 15 minutes without activity.');
    expect(await page.content()).not.toContain(adminKey);
  });
});
