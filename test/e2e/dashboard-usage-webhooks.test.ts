import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { chromium } from 'playwright-core';
import type { Browser, Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { repoRoot } from '@gw/local-stack';
import { waitUntil } from '@gw/testing';
import { harness } from './harness';
import { admin, rawRequest } from './http';
import { startWebhookReceiver } from './webhook-receiver';

/**
 * The dashboard's usage-by-key and webhook views in a real browser (Debian's Chromium driven by
 * playwright-core, as in dashboard.test.ts), at desktop and phone width.
 */
const h = harness();
const model = 'claude-sonnet-5';
const screenshots = join(repoRoot, '.local', 'test-results', 'dashboard');
const desktop = { width: 1280, height: 800 };
const phone = { width: 390, height: 844 };
const axeSource = readFile(require.resolve('axe-core/axe.min.js'), 'utf8');

const inPage = async (page: Page, expression: string) => String(await page.evaluate(expression));
const textOf = async (page: Page, selector: string) => (await page.locator(selector).first().textContent()) ?? '';
const clickButton = (page: Page, name: string, scope = 'body') =>
  page.locator(scope).getByRole('button', { name, exact: true }).first().click();

async function accessibilityViolations(page: Page): Promise<string[]> {
  if ((await inPage(page, 'typeof axe')) === 'undefined') await page.evaluate(await axeSource);
  return (await page.evaluate(
    `axe.run(document, { resultTypes: ['violations'] }).then((result) => result.violations
      .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
      .map((violation) => violation.id + ': ' + violation.nodes.map((node) => node.target.join(' ')).join(', ')))`,
  )) as string[];
}

/** No serious accessibility finding and nothing wider than the screen, at desktop and phone width; a screenshot of each. */
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

/** Clicks `button` (in `scope`) until `selector`'s text passes `done`: the page reads the API again each time. */
async function refreshUntil(page: Page, button: string, selector: string, done: (text: string) => boolean) {
  return waitUntil(
    async () => {
      await clickButton(page, button);
      return (await page.locator(selector).count()) > 0 ? textOf(page, selector) : '';
    },
    { what: `${selector} to show the expected text`, timeoutMs: 20_000, intervalMs: 250 },
    done,
  );
}

const formatTokens = (value: number) => value.toLocaleString('en-GB');

describe('dashboard: usage by key and webhooks', () => {
  let browser: Browser;
  let page: Page;
  const receiver = startWebhookReceiver(h);
  const pageErrors: string[] = [];
  let accountId: string;
  const keys: { id: string; key: string; name: string }[] = [];

  beforeAll(async () => {
    await Promise.all([mkdir(screenshots, { recursive: true }), receiver.listen()]);
    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: ['--no-sandbox'] });
    const context = await browser.newContext({ viewport: desktop, locale: 'en-GB', acceptDownloads: true });
    context.setDefaultTimeout(15_000);
    context.on('weberror', (error) => pageErrors.push(String(error.error())));
    page = await context.newPage();

    const account = await admin<{ id: string }>(h, 'POST', '/accounts', { name: 'Per-key usage', plan: 'pro' });
    accountId = account.body.id;
    for (const name of ['ci', 'batch jobs']) {
      const created = await admin<{ id: string; key: string }>(h, 'POST', '/keys', {
        account_id: accountId,
        name,
        environment: 'live',
        residency: 'eu',
        privacy_mode: 'off',
      });
      keys.push({ id: created.body.id, key: created.body.key, name });
    }
    for (const [index, { key }] of keys.entries()) {
      const sdk = new Anthropic({ baseURL: h.baseUrl, apiKey: key, maxRetries: 0 });
      for (let call = 0; call <= index; call += 1) {
        await sdk.messages.create({ model, max_tokens: 32, messages: [{ role: 'user', content: `key ${index}` }] });
      }
    }
    // One refusal of the second key: a body without max_tokens.
    const refused = await rawRequest(`${h.baseUrl}/v1/messages`, {
      headers: { 'x-api-key': keys[1]!.key },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'x' }] }),
    });
    expect(refused.status).toBe(400);
  });

  afterAll(async () => {
    await Promise.all([browser?.close(), receiver.close()]);
  });

  it('shows the month per key, adding up to the account, with refusals, per day, and as CSV', async () => {
    await page.goto(`${h.adminUrl}/`);
    await page.locator('#credential').fill(h.adminToken);
    await clickButton(page, 'Sign in');
    await page.locator(`tr[data-account-id="${accountId}"] a`).click();
    await page.getByRole('tab', { name: 'Usage by key', exact: true }).click();

    const used = await waitUntil(
      async () =>
        (await admin<{ tokens: { used: number } }>(h, 'GET', `/accounts/${accountId}/usage`)).body.tokens.used,
      { what: 'the usage metered' },
      (tokens) => tokens > 0,
    );
    const refusalCell = `tr[data-key-id="${keys[1]!.id}"] td:last-child`;
    await refreshUntil(page, 'Refresh', refusalCell, (text) => text.includes('invalid_request_error: 1'));
    // The requests may still be on their way to metering: read until both keys are there in full.
    const expected = (
      await admin<{ data: { key_id: string; billable_tokens: number }[] }>(
        h,
        'GET',
        `/accounts/${accountId}/usage/keys`,
      )
    ).body.data;
    await refreshUntil(page, 'Refresh', '[data-testid=keys-billable-total]', (text) => text === formatTokens(used));
    for (const line of expected) {
      expect(await textOf(page, `tr[data-key-id="${line.key_id}"] [data-testid=key-billable]`)).toBe(
        formatTokens(line.billable_tokens),
      );
    }
    expect(await textOf(page, `tr[data-key-id="${keys[0]!.id}"]`)).toContain('ci (gw_live_');
    expect(await page.locator('[data-testid=key-daily-usage] tbody tr').count()).toBe(2);
    expect(await textOf(page, `tr[data-key-id="${keys[0]!.id}"] td:last-child`)).toBe('none');
    await checkPage(page, 'usage-by-key');

    const [download] = await Promise.all([page.waitForEvent('download'), clickButton(page, 'Download CSV')]);
    expect(download.suggestedFilename()).toMatch(new RegExp(`^usage-by-key-${accountId}-\\d{4}-\\d\\d\\.csv$`));
    const csv = await readFile((await download.path())!, 'utf8');
    const fromApi = await fetch(`${h.adminUrl}/admin/v1/accounts/${accountId}/usage/keys?format=csv`, {
      headers: { authorization: `Bearer ${h.adminToken}` },
    });
    expect(csv).toBe(await fromApi.text());
    expect(csv.split('\r\n')[0]).toMatch(/^key_id,name,/);
  });

  it("registers an endpoint, shows each delivery's attempts in its log, and resends", async () => {
    await page.getByRole('tab', { name: 'Webhooks', exact: true }).click();
    // A private address is refused beside the URL field.
    await page.locator('input[name=url]').fill(`https://localhost:${h.webhookReceiver.port + 1}/x`);
    await clickButton(page, 'Add endpoint');
    await page.waitForSelector('[data-field-error=url]');
    expect(await textOf(page, '[data-field-error=url]')).toMatch(/^url: .*private, loopback or link-local/);

    await page.locator('input[name=url]').fill(receiver.url);
    await page.locator('input[value="key.revoked"]').check();
    await clickButton(page, 'Add endpoint');
    await page.waitForSelector('[data-testid=secret-value]');
    const secret = await textOf(page, '[data-testid=secret-value]');
    expect(secret).toMatch(/^whsec_/);
    await clickButton(page, 'I have copied it');
    const endpointId = (await page.locator('[data-endpoint-id]').first().getAttribute('data-endpoint-id')) ?? '';
    expect(endpointId).toMatch(/^whep_/);

    // A revoked key raises an event; the receiver answers 500 first, then takes the retry.
    receiver.answers.push(500);
    expect((await admin(h, 'POST', `/keys/${keys[1]!.id}/revoke`)).status).toBe(200);
    await clickButton(page, 'Delivery log', `[data-endpoint-id="${endpointId}"]`);
    await refreshUntil(page, 'Refresh log', '[data-testid=delivery-status]', (text) => text === 'delivered');
    expect(await textOf(page, '[data-testid=delivery-attempts]')).toBe('500 → 200');
    const messageId = (await page.locator('[data-message-id]').first().getAttribute('data-message-id')) ?? '';
    await checkPage(page, 'webhooks');

    await clickButton(page, 'Resend', `[data-message-id="${messageId}"]`);
    await refreshUntil(page, 'Refresh log', '[data-testid=delivery-attempts]', (text) => text === '500 → 200 → 200');
    const deliveries = receiver.received.filter((delivery) => delivery.headers['webhook-id'] === messageId);
    expect(deliveries.map((delivery) => delivery.answered)).toEqual([500, 200, 200]);
    for (const delivery of deliveries) {
      expect(new Webhook(secret).verify(delivery.body, delivery.headers as Record<string, string>)).toMatchObject({
        type: 'key.revoked',
        data: { account_id: accountId, key_id: keys[1]!.id },
      });
    }
    expect(pageErrors).toEqual([]);
  });
});
