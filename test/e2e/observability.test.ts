import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '@gw/local-stack';
import { waitUntil } from '@gw/testing';
import { parse } from 'yaml';
import { harness } from './harness';
import { admin, rawRequest } from './http';
import { exportedNames } from './prometheus';

const h = harness();
const observability = join(repoRoot, 'deploy/observability');

/** An alert, or a recording rule (`record`) of the service-level objectives. */
interface AlertRule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

interface DashboardTarget {
  expr: string;
}

interface Dashboard {
  panels: { type: string; title: string; targets?: DashboardTarget[] }[];
  templating: { list: { name: string; query?: string | { query: string } }[] };
}

const allRules = (
  parse(readFileSync(join(observability, 'alerts.yaml'), 'utf8')) as { groups: { rules: AlertRule[] }[] }
).groups.flatMap((group) => group.rules);
const rules = allRules.filter((rule) => rule.alert !== undefined);
/** Series the recording rules make: read by the alerts, exported by no process. */
const recorded = new Set(allRules.flatMap((rule) => (rule.record === undefined ? [] : [rule.record])));
const dashboard = JSON.parse(readFileSync(join(observability, 'grafana-dashboard.json'), 'utf8')) as Dashboard;

/** The PromQL of the dashboard's panels. */
const panelExpressions = dashboard.panels.flatMap((panel) => (panel.targets ?? []).map((target) => target.expr));
/** The series selectors of the template variables: Grafana's `label_values(<selector>, <label>)`. */
const variableSelectors = dashboard.templating.list.flatMap((variable) => {
  const query = typeof variable.query === 'object' ? variable.query.query : '';
  const selector = /^label_values\((.*),\s*\w+\)$/.exec(query)?.[1];
  return selector === undefined ? [] : [selector];
});

/** PromQL words that are not metric names (functions are recognised by the parenthesis after them). */
const keywords = new Set([
  'and',
  'or',
  'unless',
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'offset',
]);

/**
 * The metric names an expression reads: what is left once strings, label matchers, grouping lists,
 * Grafana variables, function names and keywords are taken out.
 */
function metricNames(expression: string): string[] {
  const bare = expression
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, '')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '')
    .replace(/\$\{?\w+\}?/g, '')
    .replace(/\[[^\]]*\]/g, '');
  return [...bare.matchAll(/\b[a-zA-Z_:][a-zA-Z0-9_:]*\b(?!\s*\()/g)]
    .map((match) => match[0])
    .filter((word) => !keywords.has(word) && !/^\d/.test(word));
}

/** Prometheus makes `up` for every target it scrapes; no process exports it. */
const madeByPrometheus = new Set(['up']);
/**
 * Series the rules read from kube-state-metrics, which a cluster runs beside the gateway (the parked-usage
 * alert watches the spool drain Jobs): no process of the gateway exports them.
 */
const madeByKubeStateMetrics = new Set(['kube_job_status_failed', 'kube_job_status_succeeded']);

/** Installed by `make test` (test/run.sh); cached, so this only finds it. */
const promtool = (() => {
  const found = spawnSync('bash', [join(observability, 'promtool.sh'), 'install'], { encoding: 'utf8' });
  if (found.status !== 0) throw new Error(`promtool could not be installed: ${found.stderr.slice(0, 500)}`);
  return found.stdout.trim();
})();

describe('the dashboard and the alert rules', () => {
  it('read only metrics the running stack exports', async () => {
    // Traffic that brings every labelled series into being: a live and a test answer, streamed and
    // not, a refusal, and a usage event through Kafka to metering.
    const created = await admin<{ id: string }>(h, 'POST', '/accounts', { name: 'observability', plan: 'pro' });
    const ask = async (key: string, stream: boolean) =>
      (
        await rawRequest(`${h.baseUrl}/v1/messages`, {
          headers: { 'x-api-key': key },
          body: JSON.stringify({
            model: 'claude-sonnet-5',
            max_tokens: 8,
            stream,
            messages: [{ role: 'user', content: 'hi' }],
          }),
        })
      ).status;
    for (const environment of ['live', 'test']) {
      const key = await admin<{ key: string }>(h, 'POST', '/keys', {
        account_id: created.body.id,
        name: 'observability',
        environment,
        residency: 'eu',
        privacy_mode: 'off',
      });
      await waitUntil(
        () => ask(key.body.key, false),
        { what: `a ${environment} answer` },
        (status) => status === 200,
      );
      expect(await ask(key.body.key, true)).toBe(200);
    }
    expect(await ask('not-a-key', false)).toBe(401);

    const used = new Set(
      [...panelExpressions, ...variableSelectors, ...allRules.map((rule) => rule.expr)].flatMap(metricNames),
    );
    expect(used.size).toBeGreaterThan(25);
    const missing = await waitUntil(
      async () => {
        const exported = await exportedNames(Object.values(h.metricsUrls));
        return [...used].filter(
          (name) =>
            !exported.has(name) &&
            !madeByPrometheus.has(name) &&
            !madeByKubeStateMetrics.has(name) &&
            !recorded.has(name),
        );
      },
      { what: 'every metric the dashboard and the alerts read to be exported', timeoutMs: 30_000 },
      (names) => names.length === 0,
    );
    expect(missing).toEqual([]);
  });

  it('give every alert a severity, a summary, a description and a runbook that exists', () => {
    expect(rules.length).toBeGreaterThanOrEqual(8);
    for (const rule of rules) {
      expect({ alert: rule.alert, severity: rule.labels?.severity }).toEqual({
        alert: rule.alert,
        severity: expect.stringMatching(/^(page|ticket)$/),
      });
      expect(rule.for).toMatch(/^\d+m$/);
      expect(rule.annotations?.summary).toBeTruthy();
      expect(rule.annotations?.description).toBeTruthy();
      const runbook = join(repoRoot, rule.annotations?.runbook_url ?? 'missing');
      expect({ alert: rule.alert, runbook: existsSync(runbook) }).toEqual({ alert: rule.alert, runbook: true });
      expect(readFileSync(runbook, 'utf8')).toContain(rule.alert);
    }
  });

  it('pass promtool: each alert fires on its failing series only, every query parses', () => {
    execFileSync(promtool, ['test', 'rules', join(observability, 'alerts.test.yaml')], { stdio: 'pipe' });
    // The dashboard's queries as recording rules, Grafana's variables replaced, so that promtool parses them.
    const dir = mkdtempSync(join(tmpdir(), 'dashboard-rules-'));
    const asRules = panelExpressions.map((expr, index) => ({
      record: `dashboard:query_${index}`,
      expr: expr.replace(/\$__rate_interval/g, '5m').replace(/\$\w+/g, '.*'),
    }));
    writeFileSync(
      join(dir, 'dashboard.rules.json'),
      JSON.stringify({ groups: [{ name: 'dashboard', rules: asRules }] }),
    );
    execFileSync(promtool, ['check', 'rules', join(dir, 'dashboard.rules.json')], { stdio: 'pipe' });
  });
});
