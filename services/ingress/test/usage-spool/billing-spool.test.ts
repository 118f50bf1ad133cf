import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SpoolFullError } from '@gw/kafka';
import { startMetricsServer } from '@gw/telemetry';
import type { Logger } from '@gw/telemetry';
import { logUsageNotRecorded, registerUsageSpoolMetrics, usageSpoolDir } from '../../src/usage-spool/billing-spool';

describe('usageSpoolDir', () => {
  it('is USAGE_SPOOL_DIR when set, else one directory per HTTP port under the temp directory', () => {
    expect(usageSpoolDir({ USAGE_SPOOL_DIR: '/var/spool/gateway', HTTP_PORT: 8080 })).toBe('/var/spool/gateway');
    expect(usageSpoolDir({ USAGE_SPOOL_DIR: undefined, HTTP_PORT: 8080 })).toBe(
      join(tmpdir(), 'gateway-usage-spool-8080'),
    );
    expect(usageSpoolDir({ USAGE_SPOOL_DIR: undefined, HTTP_PORT: 8090 })).not.toBe(
      usageSpoolDir({ USAGE_SPOOL_DIR: undefined, HTTP_PORT: 8080 }),
    );
  });
});

describe('logUsageNotRecorded', () => {
  const capture = () => {
    const lines: { fields: Record<string, unknown>; message: string }[] = [];
    const logger = { error: (fields: Record<string, unknown>, message: string) => lines.push({ fields, message }) };
    return { lines, logger: logger as unknown as Logger };
  };
  const event = { eventId: 'req_1', accountId: 'acct_1', keyId: 'key_1', model: 'claude-sonnet' };

  it('logs a refusal of the full spool with ids and sizes only', () => {
    const { lines, logger } = capture();
    logUsageNotRecorded(logger, event, new SpoolFullError(100, 100));
    expect(lines).toEqual([
      {
        fields: { request_id: 'req_1', account_id: 'acct_1', key_id: 'key_1', pending_bytes: 100, max_bytes: 100 },
        message: 'usage spool full: usage event not recorded',
      },
    ]);
  });

  it('logs any other failure with the ids and the error', () => {
    const { lines, logger } = capture();
    const error = new Error('EIO');
    logUsageNotRecorded(logger, event, error);
    expect(lines).toEqual([
      {
        fields: { request_id: 'req_1', account_id: 'acct_1', key_id: 'key_1', err: error },
        message: 'usage event not recorded',
      },
    ]);
  });
});

describe('registerUsageSpoolMetrics', () => {
  it('reports the spool depth and whether billing is available at each scrape', async () => {
    const metrics = await startMetricsServer('ingress', '127.0.0.1', 0);
    try {
      let depth = { events: 3, bytes: 210 };
      let accepts = false;
      registerUsageSpoolMetrics(metrics.registry, { depth: () => depth, acceptsEvents: () => accepts });
      const fullText = await metrics.registry.metrics();
      expect(fullText).toMatch(/^gateway_usage_spool_events\{service="ingress"\} 3$/m);
      expect(fullText).toMatch(/^gateway_billing_available\{service="ingress"\} 0$/m);
      depth = { events: 0, bytes: 0 };
      accepts = true;
      const text = await metrics.registry.metrics();
      expect(text).toMatch(/^gateway_usage_spool_events\{service="ingress"\} 0$/m);
      expect(text).toMatch(/^gateway_usage_spool_bytes\{service="ingress"\} 0$/m);
      expect(text).toMatch(/^gateway_billing_available\{service="ingress"\} 1$/m);
    } finally {
      await metrics.close();
    }
  });
});
