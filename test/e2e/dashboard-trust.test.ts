import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { repoRoot } from '@gw/local-stack';
import { waitUntil } from '@gw/testing';
import { harness } from './harness';
import { admin } from './http';

/**
 * The dashboard's admin-access pages and its fixed bugs, in Debian's headless Chromium at desktop and phone
 * width: secrets shown once, the confirm dialog, admin keys, the audit log, the limits page, search and pages.
 */
const h = harness();
const screenshots = join(repoRoot, '.local', 'test-results', 'dashboard-trust');
const axeSource = readFile(require.resolve('axe-core/axe.min.js'), 'utf8');
const viewports = [
  ['desktop', { width: 1280, height: 800 }],
  ['phone', { width: 390, height: 844 }],
] as const;

interface Account {
  id: string;
  limits: { monthly_tokens: number | null };
}

interface KeyRow {
  id: string;
  name: string;
  status: string;
  replaces_key_id: string | null;
}

const inPage = async (page: Page, expression: string) => String(await page.evaluate(expression));
const countOf = (page: Page, selector: string) => page.locator(selector).count();
const clickButton = (page: Page, name: string, scope = 'body') =>
  page.locator(scope).getByRole('button', { name, exact: true }).first().click();
const tab = (page: Page, name: string) => page.getByRole('tab', { name, exact: true });
const focusInside = (page: Page, selector: string) =>
  inPage(page, `Boolean(document.activeElement && document.activeElement.closest(${JSON.stringify(selector)}))`);
/** Whether the element's box lies within the window, wholly across and at least partly down. */
const onScreen = (page: Page, selector: string) =>
  inPage(
    page,
    `(() => { const box = document.querySelector(${JSON.stringify(selector)}).getBoundingClientRect();
      return box.left >= 0 && box.right <= window.innerWidth && box.top >= 0 && box.top < window.innerHeight; })()`,
  );

async function accessibilityViolations(page: Page): Promise<string[]> {
  if ((await inPage(page, 'typeof axe')) === 'undefined') await page.evaluate(await axeSource);
  return (await page.evaluate(
    `axe.run(document, { resultTypes: ['violations'] }).then((result) => result.violations
      .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
      .map((violation) => violation.id + ': ' + violation.nodes.map((node) => node.target.join(' ')).join(', ')))`,
  )) as string[];
}

/** No serious accessibility finding, nothing wider than the window, and a screenshot. */
async function checkPage(page: Page, name: string): Promise<void> {
  expect(await accessibilityViolations(page)).toEqual([]);
  expect(await inPage(page, 'document.documentElement.scrollWidth <= window.innerWidth')).toBe('true');
  await page.screenshot({ path: join(screenshots, `${name}.png`), fullPage: true });
}

async function signIn(page: Page, credential: string): Promise<void> {
  await page.goto(`${h.adminUrl}/`);
  await page.locator('#credential').fill(credential);
  await clickButton(page, 'Sign in');
  await page.waitForSelector('[data-testid=principal]');
}

/** From the operator's account list to the account's page, found with the search box. */
async function openAccount(page: Page, accountId: string): Promise<void> {
  await page.locator('input[name=account-search]').fill(accountId);
  await clickButton(page, 'Search');
  await page.locator(`tr[data-account-id="${accountId}"] a`).click();
  await page.waitForSelector('[data-testid=account-name]');
}

const newKey = (accountId: string, name: string) => ({
  account_id: accountId,
  name,
  environment: 'test',
  residency: 'eu',
  privacy_mode: 'off',
});

describe.each(viewports)('dashboard admin access (%s)', (width, viewport) => {
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let account: Account;
  let adminKey: { id: string; key: string };
  const dialogs: string[] = [];
  const pageErrors: string[] = [];
  const shot = (name: string) => `${name}-${width}`;
  /** The keys table narrowed by the search box to names containing `text`. */
  const searchKeys = async (text: string) => {
    await page.locator('input[name=key-search]').fill(text);
    await clickButton(page, 'Search');
    await waitUntil(
      () => page.locator('[data-testid=keys] tbody tr[data-key-id] td.name').allTextContents(),
      { what: `the keys matching ${text}` },
      (names) => names.length > 0 && names.every((name) => name.includes(text)),
    );
  };
  const keysOfAccount = async (query = '') =>
    (await admin<{ data: KeyRow[] }>(h, 'GET', `/keys?account_id=${account.id}&limit=200${query}`)).body.data;

  beforeAll(async () => {
    await mkdir(screenshots, { recursive: true });
    account = (await admin<Account>(h, 'POST', '/accounts', { name: `Trust ${width} ${Date.now()}`, plan: 'starter' }))
      .body;
    adminKey = (await admin<typeof adminKey>(h, 'POST', `/accounts/${account.id}/admin-keys`, { name: 'second tab' }))
      .body;
    // More keys than a page holds, and more rows than the window shows.
    for (let index = 0; index < 55; index += 1) {
      expect((await admin(h, 'POST', '/keys', newKey(account.id, `seed-${index}`))).status).toBe(201);
    }
    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: ['--no-sandbox'] });
    context = await browser.newContext({ viewport, locale: 'en-GB' });
    context.setDefaultTimeout(15_000);
    context.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    context.on('weberror', (error) => pageErrors.push(String(error.error())));
    page = await context.newPage();
    await signIn(page, h.adminToken);
    await openAccount(page, account.id);
  });

  afterAll(async () => {
    await browser?.close();
    expect(dialogs).toEqual([]);
    expect(pageErrors).toEqual([]);
  });

  it('says which tab is selected, moves between tabs with the arrow keys, and offers only the plan’s residency', async () => {
    expect(await tab(page, 'Keys').getAttribute('aria-selected')).toBe('true');
    expect(await tab(page, 'Usage').getAttribute('aria-selected')).toBe('false');
    await tab(page, 'Keys').focus();
    await page.keyboard.press('ArrowRight');
    expect(await tab(page, 'Usage').getAttribute('aria-selected')).toBe('true');
    expect(await inPage(page, 'document.activeElement.id')).toBe('tab-usage');
    await page.keyboard.press('ArrowLeft');
    expect(await tab(page, 'Keys').getAttribute('aria-selected')).toBe('true');
    await page.waitForSelector('[data-testid=keys] tbody tr');
    // The starter plan has the EU tier only.
    await waitUntil(
      () => page.locator('[data-testid=create-key] select[name=residency] option').allTextContents(),
      { what: 'the residency menu to hold the plan’s tiers' },
      (options) => options.join() === 'eu',
    );
  });

  it('pages, searches and filters keys through the API', async () => {
    await waitUntil(
      () => countOf(page, '[data-testid=keys] tbody tr[data-key-id]'),
      { what: 'a page of keys' },
      (rows) => rows === 50,
    );
    await clickButton(page, 'Load more');
    await waitUntil(
      () => countOf(page, '[data-testid=keys] tbody tr[data-key-id]'),
      { what: 'the next page' },
      (rows) => rows === 55,
    );
    await page.locator('input[name=key-search]').fill('seed-5');
    await clickButton(page, 'Search');
    await waitUntil(
      () => page.locator('[data-testid=keys] tbody tr[data-key-id] td.name').allTextContents(),
      { what: 'the keys named seed-5…' },
      (names) => [...names].sort().join() === ['seed-5', 'seed-50', 'seed-51', 'seed-52', 'seed-53', 'seed-54'].join(),
    );
    await page.locator('select[name=status-filter]').selectOption('revoked');
    await waitUntil(
      () => page.locator('text=No keys match.').count(),
      { what: 'no revoked seed-5 keys' },
      (n) => n === 1,
    );
    await page.locator('select[name=status-filter]').selectOption('all');
    await page.locator('input[name=key-search]').fill('');
    await clickButton(page, 'Search');
    await waitUntil(
      () => countOf(page, '[data-testid=keys] tbody tr[data-key-id]'),
      { what: 'every key again' },
      (rows) => rows === 50,
    );
  });

  it('scrolls a new key’s secret into view and focuses it; leaving its tab asks first', async () => {
    await page.locator('input[name=name]').fill('shown-once');
    await clickButton(page, 'Create key', '[data-testid=create-key]');
    await page.waitForSelector('[data-testid=shown-once]');
    await waitUntil(
      () => onScreen(page, '[data-testid=shown-once]'),
      { what: 'the secret in view' },
      (seen) => seen === 'true',
    );
    expect(await focusInside(page, '[data-testid=shown-once]')).toBe('true');
    await page.screenshot({ path: join(screenshots, `${shot('secret')}.png`) });

    await tab(page, 'Usage').click();
    await page.waitForSelector('[data-testid=confirm]');
    expect(await page.locator('[data-testid=confirm]').textContent()).toContain('cannot be shown again');
    await page.keyboard.press('Escape');
    expect(await countOf(page, '[data-testid=confirm]')).toBe(0);
    expect(await tab(page, 'Keys').getAttribute('aria-selected')).toBe('true');
    expect(await countOf(page, '[data-testid=shown-once]')).toBe(1);
    await clickButton(page, 'I have copied it');
    await tab(page, 'Usage').click();
    expect(await countOf(page, '[data-testid=confirm]')).toBe(0);
    expect(await tab(page, 'Usage').getAttribute('aria-selected')).toBe('true');
    await tab(page, 'Keys').click();
    await page.waitForSelector('[data-testid=keys] tbody tr[data-key-id]');
  });

  it('keeps the focus inside the confirm dialog: Tab and Enter never reach the page behind it', async () => {
    const target = (await keysOfAccount('&q=seed-0'))[0]!;
    await searchKeys('seed-0');
    await page.locator(`tr[data-key-id="${target.id}"]`).getByRole('button', { name: 'Revoke' }).click();
    await page.waitForSelector('[data-testid=confirm]');
    expect(await focusInside(page, '[data-testid=confirm]')).toBe('true');
    for (const key of ['Tab', 'Tab', 'Tab', 'Shift+Tab', 'Shift+Tab', 'Shift+Tab', 'Shift+Tab', 'Tab']) {
      await page.keyboard.press(key);
      expect(await focusInside(page, '[data-testid=confirm]')).toBe('true');
    }
    // Focus moved behind the dialog by a script comes straight back.
    await page.evaluate("document.querySelector('input[name=key-search]').focus()");
    expect(await focusInside(page, '[data-testid=confirm]')).toBe('true');
    await page.locator('[data-testid=confirm]').getByRole('button', { name: 'Cancel' }).focus();
    await page.keyboard.press('Enter');
    expect(await countOf(page, '[data-testid=confirm]')).toBe(0);
    expect((await keysOfAccount('&q=seed-0'))[0]!.status).toBe('active');
  });

  it('keeps Edit, Rotate and Revoke on screen beside a 200-character name without spaces, and edits a key', async () => {
    const longName = 'W'.repeat(200);
    const created = (await admin<{ id: string }>(h, 'POST', '/keys', newKey(account.id, longName))).body;
    await searchKeys('WWWW');
    const row = page.locator(`tr[data-key-id="${created.id}"]`);
    await row.waitFor();
    // The table as it first shows: scrolled to its left edge, the row brought into view vertically only.
    await page.evaluate("document.querySelector('[aria-label=keys]').scrollLeft = 0");
    await row.evaluate('(element) => window.scrollTo(0, element.getBoundingClientRect().top + window.scrollY - 100)');
    for (const name of ['Edit', 'Rotate', 'Revoke']) {
      const box = (await row.getByRole('button', { name, exact: true }).boundingBox())!;
      expect(box.x).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width).toBeLessThanOrEqual(viewport.width);
    }
    expect(await inPage(page, 'document.documentElement.scrollWidth <= window.innerWidth')).toBe('true');
    // The name wraps within its column instead of widening the table by 200 characters.
    expect((await row.locator('td.name').boundingBox())!.width).toBeLessThanOrEqual(400);
    await row.getByRole('button', { name: 'Edit', exact: true }).click();
    await page.locator('input[name=edit-name]').fill('short again');
    await page.locator('input[name=edit-allowed-ips]').fill('010.0.0.1');
    await clickButton(page, 'Save', '[data-testid=edit-key]');
    // The refusal names the field in words, not the API's path.
    expect(await page.locator('[data-testid=edit-key] [data-field-error=allowed_ips]').textContent()).toMatch(
      /^Allowed addresses, entry 1: "010\.0\.0\.1"/,
    );
    await page.locator('input[name=edit-allowed-ips]').fill('192.0.2.0/24');
    await clickButton(page, 'Save', '[data-testid=edit-key]');
    await page.locator('[data-testid=edit-key]').waitFor({ state: 'detached' });
    await searchKeys('short again');
    expect(await row.locator('td.name').textContent()).toBe('short again');
    expect(await row.locator('td.list').nth(1).textContent()).toBe('192.0.2.0/24');
  });

  it('shows a rotated key with the key it replaced, and the rotation in the audit log with before and after', async () => {
    const old = (await keysOfAccount('&q=seed-1&status=active')).find((key) => key.name === 'seed-1')!;
    await searchKeys('seed-1');
    await page.locator(`tr[data-key-id="${old.id}"]`).getByRole('button', { name: 'Rotate', exact: true }).click();
    await page.waitForSelector('[data-testid=shown-once]');
    await clickButton(page, 'I have copied it');
    const rotated = (await keysOfAccount()).find((key) => key.replaces_key_id === old.id)!;
    const row = page.locator(`tr[data-key-id="${rotated.id}"]`);
    await row.waitFor();
    expect(await row.locator('[data-testid=replaces]').textContent()).toMatch(/^replaces gw_test_/);

    await tab(page, 'Audit log').click();
    await page.locator('select[name=audit-action]').selectOption('key.rotate');
    const entry = page.locator('tr[data-action="key.rotate"]').first();
    await entry.waitFor();
    const change = entry.locator('[data-testid=audit-change]');
    expect(await change.textContent()).toContain(`"${old.id}"`);
    expect(await change.textContent()).toContain(`"${rotated.id}"`);
    expect(
      await change.locator('div', { hasText: 'replaces_key_id' }).locator('[data-testid=after]').textContent(),
    ).toBe(`"${old.id}"`);
    expect(await entry.textContent()).toContain('operator');
    await checkPage(page, shot('audit'));
  });

  it('reads 50k as 50,000 in the limits form, refuses abc beside the field, and never clears the limit', async () => {
    await tab(page, 'Limits').click();
    await page.waitForSelector('[data-testid=limits-table]');
    // Requests per minute and concurrency are shown too: the starter plan's 60 and 5.
    expect(await page.locator('[data-testid=limit-value]').allTextContents()).toEqual([
      '60',
      '5',
      '1,000,000',
      'not allowed',
      '2,000,000',
    ]);
    const monthly = page.locator('[data-testid=limits-form] input[name=monthly_tokens]');
    await monthly.fill('abc');
    await clickButton(page, 'Save limits');
    expect(await page.locator('[data-testid=limits-form] [data-field-error=monthly_tokens]').textContent()).toMatch(
      /whole number/,
    );
    expect(await focusInside(page, 'label:has(input[name=monthly_tokens])')).toBe('true');
    expect((await admin<Account>(h, 'GET', `/accounts/${account.id}`)).body.limits.monthly_tokens).toBeNull();
    await monthly.fill('50k');
    expect(await page.locator('[data-reading=monthly_tokens]').textContent()).toBe('= 50,000');
    await clickButton(page, 'Save limits');
    await waitUntil(
      async () => (await admin<Account>(h, 'GET', `/accounts/${account.id}`)).body.limits.monthly_tokens,
      { what: 'the saved limit' },
      (value) => value === 50_000,
    );
    await waitUntil(
      () => page.locator('[data-testid=limit-value]').nth(2).textContent(),
      { what: 'the limit in force' },
      (text) => text === '50,000',
    );
    await checkPage(page, shot('limits'));
  });

  it('marks usage figures stale after a failed refresh, and never says "No keys match." beside a failure', async () => {
    await tab(page, 'Usage').click();
    await page.waitForSelector('[data-testid=tokens-used]');
    await page.route('**/admin/v1/accounts/*/usage**', (route) => route.abort());
    await clickButton(page, 'Refresh');
    await page.waitForSelector('[data-testid=stale]');
    expect(await page.locator('[data-stale=true] [data-testid=tokens-used]').count()).toBe(1);
    await page.unroute('**/admin/v1/accounts/*/usage**');

    await tab(page, 'Keys').click();
    await page.waitForSelector('[data-testid=keys] tbody tr[data-key-id]');
    await page.route('**/admin/v1/keys?**', (route) => route.abort());
    await page.locator('input[name=key-search]').fill('nothing-like-this');
    await clickButton(page, 'Search');
    await page.waitForSelector('.error[role=alert]');
    expect(await page.locator('text=No keys match.').count()).toBe(0);
    await page.unroute('**/admin/v1/keys?**');
    await page.locator('input[name=key-search]').fill('');
    await clickButton(page, 'Search');
    await page.waitForSelector('[data-testid=keys] tbody tr[data-key-id]');
  });

  it("shows the operator every account's audit log", async () => {
    await clickButton(page, '← All accounts');
    await clickButton(page, 'Audit log of every account');
    await page.locator('select[name=audit-action]').selectOption('account.');
    await waitUntil(
      () => page.locator('[data-testid=audit-table] tr[data-action="account.limits"] td code').allTextContents(),
      { what: 'this account’s limits change among every account’s entries' },
      (accounts) => accounts.includes(account.id),
    );
    await checkPage(page, shot('audit-all'));
    await clickButton(page, 'Audit log of every account');
    await openAccount(page, account.id);
  });

  it('refuses an admin key revoked in another tab at its next action', async () => {
    const second = await context.newPage();
    await signIn(second, adminKey.key);
    await second.waitForSelector('[data-testid=keys] tbody tr[data-key-id]');
    await tab(second, 'Limits').click();
    await second.waitForSelector('[data-testid=limits-table]');
    expect(await countOf(second, '[data-testid=limits-form]')).toBe(0);
    await checkPage(second, shot('limits-admin'));

    await tab(page, 'Admin keys').click();
    const row = page.locator(`tr[data-admin-key-id="${adminKey.id}"]`);
    await row.getByRole('button', { name: 'Revoke', exact: true }).click();
    await clickButton(page, 'Revoke', '[data-testid=confirm]');
    await waitUntil(
      () => row.locator('[data-testid=admin-key-status]').textContent(),
      { what: 'revoked' },
      (s) => s === 'revoked',
    );
    await checkPage(page, shot('admin-keys'));

    await tab(second, 'Keys').click();
    await second.waitForSelector('#credential');
    expect(await second.locator('.note').first().textContent()).toMatch(/no longer accepted/);
    await second.close();
  });
});
