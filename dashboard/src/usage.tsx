import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import { KeyEnvironment } from '@gw/vocabulary';
import type { AccountUsage, AdminClient, Environment } from './api';
import { EnvironmentSelect, ErrorNote, TableScroll, Timestamp, formatGbp, formatTokens } from './ui';

const daySeconds = 24 * 3600;

/** Every day of the period, those without use at zero: x in Unix seconds (UTC midnight), y in tokens. */
function dailySeries(usage: AccountUsage): [number[], number[]] {
  const byDay = new Map(usage.daily.map((day) => [day.day, day.billable_tokens]));
  const days: number[] = [];
  const tokens: number[] = [];
  for (let at = Date.parse(usage.period.start); at < Date.parse(usage.period.end); at += daySeconds * 1000) {
    days.push(at / 1000);
    tokens.push(byDay.get(new Date(at).toISOString().slice(0, 10)) ?? 0);
  }
  return [days, tokens];
}

function DailyChart({ usage }: { usage: AccountUsage }) {
  const container = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = container.current!;
    const chart = new uPlot(
      {
        width: Math.max(280, element.clientWidth),
        height: 240,
        tzDate: (seconds) => uPlot.tzDate(new Date(seconds * 1000), 'Etc/UTC'),
        scales: { x: { time: true }, y: { range: (_chart, _min, max) => [0, Math.max(10, max * 1.1)] } },
        axes: [{}, { values: (_chart, ticks) => ticks.map((tick) => formatTokens(tick)), size: 70 }],
        series: [
          {},
          {
            label: 'billable tokens',
            stroke: '#2563eb',
            fill: 'rgba(37, 99, 235, 0.35)',
            paths: uPlot.paths.bars!({ size: [0.7, 40] }),
            points: { show: false },
          },
        ],
        legend: { show: false },
      },
      dailySeries(usage),
      element,
    );
    // uPlot draws at a fixed size: follow the container when the window is resized (a phone turned, say).
    const resized = new ResizeObserver(() => chart.setSize({ width: Math.max(280, element.clientWidth), height: 240 }));
    resized.observe(element);
    return () => {
      resized.disconnect();
      chart.destroy();
    };
  }, [usage]);
  // The canvas says nothing to a screen reader: the label carries the numbers it draws.
  const total = usage.daily.reduce((sum, day) => sum + day.billable_tokens, 0);
  const label = `${formatTokens(total)} billable tokens this month over ${usage.daily.length} days with use`;
  return <div ref={container} class="chart" data-testid="daily-chart" role="img" aria-label={label} />;
}

/** The month's use by model: requests, billable tokens and cost. */
function ByModelTable({ usage }: { usage: AccountUsage }) {
  return (
    <TableScroll label="usage by model">
      <table data-testid="by-model">
        <thead>
          <tr>
            <th>model</th>
            <th>requests</th>
            <th>billable tokens</th>
            <th>cost (GBP)</th>
          </tr>
        </thead>
        <tbody>
          {usage.by_model.map((line) => (
            <tr key={line.model}>
              <td>{line.model}</td>
              <td>{formatTokens(line.requests)}</td>
              <td>{formatTokens(line.billable_tokens)}</td>
              <td>{formatGbp(line.cost_gbp)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroll>
  );
}

/** The account's usage this month: GET /v1/usage's numbers, plus the overage and the days. */
export function UsagePanel(props: { client: AdminClient; accountId: string }) {
  const [environment, setEnvironment] = useState<Environment>(KeyEnvironment.live);
  const [usage, setUsage] = useState<AccountUsage>();
  const [error, setError] = useState<string>();
  const [loadedAt, setLoadedAt] = useState<string>();
  const load = () =>
    props.client.usage(props.accountId, environment).then(
      (loaded) => {
        setError(undefined);
        setUsage(loaded);
        setLoadedAt(new Date().toISOString());
      },
      (failure: Error) => setError(failure.message),
    );
  useEffect(() => {
    // Figures of the other environment are not these: they go rather than stay under the wrong heading.
    setUsage(undefined);
  }, [environment]);
  const stale = error !== undefined && usage !== undefined;
  useEffect(() => {
    void load();
  }, [props.client, props.accountId, environment]);

  const tokens = usage?.tokens;
  return (
    <div data-testid="usage">
      <div class="toolbar">
        <label>
          environment
          <EnvironmentSelect value={environment} onChange={setEnvironment} />
        </label>
        <button type="button" class="secondary" onClick={() => void load()}>
          Refresh
        </button>
      </div>
      <ErrorNote message={error} />
      {stale && loadedAt ? (
        <p class="warning" data-testid="stale">
          The last refresh failed: the figures below are from <Timestamp iso={loadedAt} /> and may be out of date.
        </p>
      ) : null}
      {usage && tokens ? (
        <div class={stale ? 'stale' : ''} data-stale={stale}>
          <p class="muted">
            {usage.period.start.slice(0, 10)} to {usage.period.end.slice(0, 10)} (UTC) · plan {usage.plan}
          </p>
          <div
            class="bar"
            role="meter"
            aria-valuemin={0}
            aria-valuemax={tokens.allowance}
            aria-valuenow={tokens.used}
            aria-label="allowance used"
          >
            <div
              class={tokens.used > tokens.allowance ? 'bar-used over' : 'bar-used'}
              style={{ width: `${Math.min(100, tokens.percent_used)}%` }}
            />
          </div>
          <dl class="figures">
            <dt>used</dt>
            <dd data-testid="tokens-used">{formatTokens(tokens.used)}</dd>
            <dt>allowance</dt>
            <dd>{formatTokens(tokens.allowance)}</dd>
            <dt>remaining</dt>
            <dd data-testid="tokens-remaining">{formatTokens(tokens.remaining)}</dd>
            <dt>percent used</dt>
            <dd>{tokens.percent_used}%</dd>
            <dt>overage</dt>
            <dd data-testid="tokens-overage">
              {formatTokens(tokens.overage)} ({tokens.overage_allowed ? 'allowed' : 'not allowed'})
            </dd>
          </dl>
          <h3>Tokens per day</h3>
          <DailyChart usage={usage} />
          <h3>By model</h3>
          <ByModelTable usage={usage} />
          {usage.by_model.length === 0 ? <p class="muted">No use this month.</p> : null}
        </div>
      ) : null}
    </div>
  );
}
