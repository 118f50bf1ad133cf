import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { monitoringApi, ofKind, render, renderFails, repoRoot } from './helm';

// The PrometheusRule the chart ships: the repository's rules (recording rules of the objectives, burn-rate
// alerts and the rest), checked and unit-tested with promtool as rendered, runbooks linked.

const base = 'https://runbooks.example.com/gateway/';
const ruleOn = [
  '--set',
  'monitoring.prometheusRule.enabled=true',
  '--set',
  `monitoring.prometheusRule.runbookBaseUrl=${base}`,
  ...monitoringApi,
];

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

function renderedRules(): { groups: { name: string; rules: Rule[] }[] } {
  const [rule] = ofKind(render(...ruleOn), 'PrometheusRule');
  if (!rule) throw new Error('no PrometheusRule rendered');
  return rule.spec as unknown as { groups: { name: string; rules: Rule[] }[] };
}

let promtool = '';
let workDir = '';
beforeAll(() => {
  // Cached after the first run (test/run.sh installs it before the unit tests).
  promtool = execFileSync('bash', [join(repoRoot, 'deploy', 'observability', 'promtool.sh'), 'install'], {
    encoding: 'utf8',
  }).trim();
  workDir = mkdtempSync(join(tmpdir(), 'gw-chart-rules-'));
}, 120_000);
afterAll(() => rmSync(workDir, { recursive: true, force: true }));

test('the rendered rules pass promtool check and every unit test of deploy/observability/alerts.test.yaml', () => {
  const rulesFile = join(workDir, 'rendered.rules.yaml');
  writeFileSync(rulesFile, stringify(renderedRules()));
  const check = spawnSync(promtool, ['check', 'rules', rulesFile], { encoding: 'utf8' });
  expect(check.stdout + check.stderr).toContain('SUCCESS');
  // The repository's tests, run on the rendered rules: runbook paths there are links here.
  const tests = readFileSync(join(repoRoot, 'deploy', 'observability', 'alerts.test.yaml'), 'utf8')
    .replace(/^ {2}- alerts\.yaml$/m, `  - ${rulesFile}`)
    .replaceAll('runbook_url: docs/runbooks/', `runbook_url: ${base}`);
  const testsFile = join(workDir, 'alerts.test.yaml');
  writeFileSync(testsFile, tests);
  const run = spawnSync(promtool, ['test', 'rules', testsFile], { encoding: 'utf8' });
  expect(run.stdout + run.stderr).toContain('SUCCESS');
  expect(run.status).toBe(0);
});

test('multi-window burn-rate alerts for availability and added time, fed by recording rules of each window', () => {
  const rules = renderedRules().groups.flatMap((group) => group.rules);
  const recorded = rules.flatMap((rule) => (rule.record ? [rule.record] : []));
  for (const objective of ['http_requests_5xx', 'added_latency_over_250ms']) {
    expect(recorded.filter((name) => name.startsWith(`gateway:${objective}:ratio_rate`)).sort()).toEqual(
      ['1d', '1h', '2h', '30m', '3d', '5m', '6h'].map((window) => `gateway:${objective}:ratio_rate${window}`),
    );
  }
  const severities = Object.fromEntries(
    rules.flatMap((rule) => (rule.alert ? [[rule.alert, rule.labels?.severity]] : [])),
  );
  expect(severities).toMatchObject({
    GatewayAvailabilityBudgetBurnFast: 'page',
    GatewayAvailabilityBudgetBurnSlow: 'ticket',
    GatewayAddedLatencyBudgetBurnFast: 'page',
    GatewayAddedLatencyBudgetBurnSlow: 'ticket',
    MeteringUsageEventsSkipped: 'page',
    MeteringUsageEventsUnpriced: 'ticket',
    GatewayConfigDrift: 'ticket',
    GatewayTargetDown: 'page',
  });
  // Fast: 1 h with 5 min and 6 h with 30 min; each long window paired with a short one.
  const fast = rules.find((rule) => rule.alert === 'GatewayAvailabilityBudgetBurnFast')!.expr;
  for (const window of ['1h', '5m', '6h', '30m'])
    expect(fast).toContain(`gateway:http_requests_5xx:ratio_rate${window} `);
});

test('every alert links its runbook, which exists and names the alert; every alert groups by cluster', () => {
  const alerts = renderedRules()
    .groups.flatMap((group) => group.rules)
    .filter((rule) => rule.alert);
  expect(alerts.length).toBeGreaterThanOrEqual(17);
  for (const alert of alerts) {
    const url = alert.annotations?.runbook_url ?? '';
    expect(url.startsWith(base)).toBe(true);
    const file = join(repoRoot, 'docs', 'runbooks', url.slice(base.length));
    expect({ alert: alert.alert, exists: existsSync(file) }).toEqual({ alert: alert.alert, exists: true });
    expect(readFileSync(file, 'utf8')).toContain(alert.alert);
    if (/\b(by|on) \(/.test(alert.expr))
      expect({ alert: alert.alert, expr: alert.expr }).toMatchObject({ expr: /cluster/ });
  }
});

test('the runbook of the metering lag names the consumer group metering really uses', () => {
  const runbook = readFileSync(join(repoRoot, 'docs', 'runbooks', 'metering-behind-usage-freshness.md'), 'utf8');
  const group = /consumerGroup: (\S+)/.exec(
    readFileSync(join(repoRoot, 'charts', 'inference-gateway', 'values.yaml'), 'utf8'),
  )?.[1];
  expect(group).toBe('gateway-metering');
  expect(runbook).toContain(`consumer group \`${group}\``);
});

test('with the rule on, a runbook base URL is required; monitoring.cluster labels every scraped series', () => {
  expect(renderFails('--set', 'monitoring.prometheusRule.enabled=true', ...monitoringApi)).toContain(
    'monitoring.prometheusRule.runbookBaseUrl',
  );
  const monitors = ofKind(
    render(
      '--set',
      'monitoring.serviceMonitor.enabled=true',
      '--set',
      'monitoring.cluster=uk-south-prod',
      ...monitoringApi,
    ),
    'ServiceMonitor',
  );
  expect(monitors).toHaveLength(6);
  for (const monitor of monitors) {
    const [endpoint] = (monitor.spec as { endpoints: { relabelings?: unknown[] }[] }).endpoints;
    expect(endpoint?.relabelings).toEqual([{ targetLabel: 'cluster', replacement: 'uk-south-prod' }]);
  }
});
