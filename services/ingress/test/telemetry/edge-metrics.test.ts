import { gatewayError, ok } from '@gw/errors';
import { commonv1 } from '@gw/proto';
import { startMetricsServer } from '@gw/telemetry';
import type { MetricsServer } from '@gw/telemetry';
import { createEdgeMetrics, routeOf, streamErrorType } from '../../src/telemetry/edge-metrics';
import type { FinishedRequest, SettledRequest } from '../../src/telemetry/edge-metrics';

const settled = (overrides: Partial<SettledRequest> = {}): SettledRequest => ({
  model: 'claude-sonnet-5',
  region: 'eu-west',
  environment: commonv1.Environment.LIVE,
  streamed: false,
  completed: true,
  errorType: undefined,
  tokens: { inputTokens: 10, outputTokens: 20, cacheReadInputTokens: 3, cacheCreationInputTokens: 4 },
  usageCapped: false,
  seconds: 1.5,
  firstTokenSeconds: undefined,
  routerFirstEventSeconds: 1.2,
  residency: commonv1.Residency.EU,
  ...overrides,
});

const finished = (overrides: Partial<FinishedRequest> = {}): FinishedRequest => ({
  route: 'messages',
  method: 'POST',
  status: 200,
  errorType: 'none',
  streamed: false,
  seconds: 0.3,
  caller: undefined,
  traceId: undefined,
  ...overrides,
});
const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
const openMetricsAccept = 'application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5';

let server: MetricsServer;
beforeEach(async () => {
  server = await startMetricsServer('ingress', '127.0.0.1', 0);
});
afterEach(() => server.close());

function metricsUnderTest() {
  const registry = server.registry;
  const metrics = createEdgeMetrics(registry, { models: ['claude-sonnet-5'], regions: ['eu-west'] });
  const value = async (name: string, labels: Record<string, string> = {}) => {
    const metric = (await registry.getMetricsAsJSON()).find(
      (candidate) => candidate.name === name.replace(/_(count|sum)$/, ''),
    );
    const suffix = /_(count|sum)$/.exec(name)?.[0];
    return (metric?.values ?? [])
      .filter((sample) => (suffix ? (sample as { metricName?: string }).metricName === name : true))
      .filter((sample) => Object.entries(labels).every(([key, expected]) => sample.labels[key] === expected))
      .reduce((sum, sample) => sum + sample.value, 0);
  };
  return { registry, metrics, value };
}

describe('edge metrics', () => {
  it('names a fixed set of routes, whatever the path', () => {
    expect(
      ['/v1/messages', '/v1/messages/count_tokens', '/v1/models', '/v1/models/x', '/v1/usage', '/v1/x', '/'].map(
        routeOf,
      ),
    ).toEqual(['messages', 'count_tokens', 'models', 'models', 'usage', 'other', 'other']);
  });

  it('counts tokens by model, kind and environment, a model outside the catalogue as other', async () => {
    const { metrics, value, registry } = metricsUnderTest();
    metrics.settled(settled());
    metrics.settled(settled({ model: 'someone-elses-model', environment: commonv1.Environment.TEST }));
    expect(
      await value('gateway_tokens_total', { model: 'claude-sonnet-5', kind: 'cache_write', environment: 'live' }),
    ).toBe(4);
    expect(await value('gateway_tokens_total', { model: 'other', kind: 'output', environment: 'test' })).toBe(20);
    expect(await registry.metrics()).not.toContain('someone-elses-model');
    expect(
      await value('gen_ai_client_token_usage_sum', { gen_ai_request_model: 'other', gen_ai_token_type: 'input' }),
    ).toBe(10);
  });

  it('labels a model and a region a reloaded configuration added by their names, with zeros from the reload on', async () => {
    const { metrics, value, registry } = metricsUnderTest();
    metrics.addLabelValues({ models: ['claude-opus-5'], regions: ['uk-south'] });
    expect(await registry.metrics()).toMatch(
      /gateway_tokens_total\{model="claude-opus-5",kind="output",environment="live",service="ingress"\} 0/,
    );
    metrics.settled(settled({ model: 'claude-opus-5', region: 'uk-south', streamed: true, firstTokenSeconds: 0.2 }));
    expect(await value('gateway_tokens_total', { model: 'claude-opus-5', kind: 'output', environment: 'live' })).toBe(
      20,
    );
    expect(await value('gateway_tokens_total', { model: 'other', kind: 'output', environment: 'live' })).toBe(0);
    expect(
      await value('gateway_time_to_first_token_seconds_count', { model: 'claude-opus-5', region: 'uk-south' }),
    ).toBe(1);
  });

  it('measures the added time on whole answers that succeeded only', async () => {
    const { metrics, value } = metricsUnderTest();
    metrics.settled(settled());
    metrics.settled(settled({ streamed: true, firstTokenSeconds: 0.4 }));
    metrics.settled(settled({ completed: false, errorType: 'overloaded_error' }));
    expect(await value('gateway_added_latency_seconds_count')).toBe(1);
    expect(await value('gateway_added_latency_seconds_sum')).toBeCloseTo(0.3);
    expect(
      await value('gateway_time_to_first_token_seconds_count', { model: 'claude-sonnet-5', region: 'eu-west' }),
    ).toBe(1);
    expect(await value('gen_ai_server_request_duration_seconds_count', { error_type: 'overloaded_error' })).toBe(1);
  });

  it("labels the added time with the key's residency tier, every tier's series there at zero from the start", async () => {
    const { metrics, value } = metricsUnderTest();
    const exposition = await server.registry.metrics();
    for (const tier of ['uk', 'eu', 'unspecified']) {
      expect(exposition).toMatch(
        new RegExp(`^gateway_added_latency_seconds_count\\{[^}]*tier="${tier}"[^}]*\\} 0$`, 'm'),
      );
    }
    metrics.settled(settled({ residency: commonv1.Residency.UK }));
    metrics.settled(settled());
    metrics.settled(settled());
    expect(await value('gateway_added_latency_seconds_count', { tier: 'uk' })).toBe(1);
    expect(await value('gateway_added_latency_seconds_count', { tier: 'eu' })).toBe(2);
  });

  it("labels each request with its key's residency tier, none when no key was verified for it", async () => {
    const { metrics, value } = metricsUnderTest();
    const residencyOf: Record<string, commonv1.Residency> = {
      'key-uk': commonv1.Residency.UK,
      'key-eu': commonv1.Residency.EU,
      'key-without-tier': commonv1.Residency.UNSPECIFIED,
    };
    const keys = metrics.watchKeys<{ requestId: string }, { residency: commonv1.Residency }>({
      verify: (presentedKey) =>
        Promise.resolve(
          presentedKey in residencyOf
            ? ok({ residency: residencyOf[presentedKey]! })
            : { ok: false as const, error: gatewayError('authentication_error', 'x', { reason: 'unknown' }) },
        ),
    });
    const callers = ['key-uk', 'key-eu', 'key-eu', 'key-without-tier', 'no-such-key'].map((key, index) => ({
      key,
      scope: { requestId: String(index) },
    }));
    for (const { key, scope } of callers) await keys.verify(key, '127.0.0.1', scope);
    for (const { scope } of callers) metrics.requestFinished(finished({ caller: scope }));
    metrics.requestFinished(finished({ status: 404, errorType: 'not_found_error', route: 'other' }));
    const requests = (tier: string) => value('gateway_http_requests_total', { tier });
    expect([await requests('uk'), await requests('eu'), await requests('unspecified')]).toEqual([1, 2, 1]);
    expect(await requests('none')).toBe(2);
    expect(await value('gateway_http_requests_total', { tier: 'none', status: '404' })).toBe(1);
  });

  it("keeps a sampled request's trace id as the exemplar of its latencies, served in OpenMetrics only", async () => {
    const { metrics } = metricsUnderTest();
    metrics.requestFinished(finished({ seconds: 0.3, traceId }));
    metrics.settled(settled({ seconds: 1.5, routerFirstEventSeconds: 1.25 }), traceId);
    metrics.settled(settled({ streamed: true, firstTokenSeconds: 0.6 }), traceId);
    metrics.requestFinished(finished({ seconds: 0.007 }));
    const scrape = async (accept: string) =>
      (await fetch(`http://127.0.0.1:${server.port}/metrics`, { headers: { accept } })).text();
    const open = await scrape(openMetricsAccept);
    const exemplar = (series: string, bucket: string, value: string) =>
      new RegExp(`^${series}_bucket\\{le="${bucket}"[^}]*\\} \\d+ # \\{trace_id="${traceId}"\\} ${value} `, 'm');
    expect(open).toMatch(exemplar('gateway_http_request_duration_seconds', '0.5', '0.3'));
    expect(open).toMatch(exemplar('gateway_added_latency_seconds', '0.25', '0.25'));
    expect(open).toMatch(exemplar('gateway_time_to_first_token_seconds', '0.75', '0.6'));
    // A request without a sampled trace is counted, with no exemplar.
    expect(open).toMatch(/^gateway_http_request_duration_seconds_bucket\{le="0.01",[^}]*streamed="false"[^}]*\} 1$/m);
    expect(await scrape('text/plain')).not.toContain(traceId);
  });

  it('counts refusals by the reason they carry, and nothing for an error without one', async () => {
    const { metrics, value } = metricsUnderTest();
    metrics.refused(gatewayError('rate_limit_error', 'x', { reason: 'concurrency' }));
    metrics.refused(gatewayError('quota_exceeded', 'x', { reason: 'hard_ceiling' }));
    metrics.refused(gatewayError('authentication_error', 'x', { reason: 'revoked' }));
    metrics.refused(gatewayError('permission_error', 'x', { reason: 'ip_not_allowed' }));
    metrics.refused(gatewayError('residency_unavailable', 'x', { reason: 'uk' }));
    metrics.refused(gatewayError('authentication_error', 'x', { reason: 'not-a-reason' }));
    metrics.refused(gatewayError('api_error', 'x'));
    expect(await value('gateway_limit_refusals_total', { kind: 'concurrency' })).toBe(1);
    expect(await value('gateway_limit_refusals_total', { kind: 'hard_ceiling' })).toBe(1);
    expect(await value('gateway_limit_refusals_total')).toBe(2);
    expect(await value('gateway_auth_failures_total')).toBe(2);
    expect(await value('gateway_residency_refusals_total', { tier: 'uk' })).toBe(1);
  });

  it('reads the error type of an SSE error event, api_error when it is not one', () => {
    expect(streamErrorType('{"type":"error","error":{"type":"overloaded_error","message":"x"}}')).toBe(
      'overloaded_error',
    );
    expect(streamErrorType('{"type":"error","error":{"type":"made_up"}}')).toBe('api_error');
    expect(streamErrorType('not json')).toBe('api_error');
  });
});
