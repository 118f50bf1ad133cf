import { Writable } from 'node:stream';
import pino from 'pino';
import { cutForLog, loggerOptions, maxLoggedChars } from '../src/logger';

/** A logger with the services' options that keeps its lines. */
function capturingLogger() {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  return { logger: pino(loggerOptions('test', 'info'), sink), lines };
}

const twoMegabytes = 'm'.repeat(2 * 1024 * 1024);
const longestRun = (line: string) => Math.max(0, ...(line.match(/m+/g) ?? []).map((run) => run.length));

describe('the services logger', () => {
  it('cuts a long string field to the cap, saying how long it was', () => {
    const { logger, lines } = capturingLogger();
    logger.info({ request_id: 'req_1', model: twoMegabytes }, 'request');
    expect(lines).toHaveLength(1);
    const line = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(line.model).toBe(`${'m'.repeat(maxLoggedChars)}…[cut, ${twoMegabytes.length} chars]`);
    expect(line.request_id).toBe('req_1');
    expect(lines[0]!.length).toBeLessThan(1024);
  });

  it('cuts strings inside nested fields and leaves the logged object as it was', () => {
    const { logger, lines } = capturingLogger();
    const fields = { outer: { inner: twoMegabytes, list: [twoMegabytes, 'short'] }, count: 3 };
    logger.warn(fields, 'nested');
    expect(longestRun(lines[0]!)).toBe(maxLoggedChars);
    expect(JSON.parse(lines[0]!)).toEqual(
      expect.objectContaining({ count: 3, outer: { inner: expect.any(String), list: [expect.any(String), 'short'] } }),
    );
    expect(fields.outer.inner).toBe(twoMegabytes);
  });

  it("cuts an error's message, in its stack too, and keeps the frames", () => {
    const { logger, lines } = capturingLogger();
    logger.error({ err: new Error(`bad model ${twoMegabytes}`) }, 'request failed');
    logger.error(new Error(twoMegabytes));
    expect(lines).toHaveLength(2);
    for (const line of lines) {
      expect(line.length).toBeLessThan(8 * 1024);
      expect(longestRun(line)).toBeLessThanOrEqual(maxLoggedChars);
    }
    const first = JSON.parse(lines[0]!) as { err: { type: string; message: string; stack: string }; msg: string };
    expect(first.msg).toBe('request failed');
    expect(first.err.type).toBe('Error');
    expect(first.err.message).toMatch(/^bad model m+…\[cut, \d+ chars\]$/);
    expect(first.err.stack).toMatch(/^Error: bad model m+…\[cut, \d+ chars\]\n\s+at /);
  });

  it('still redacts key material', () => {
    const { logger, lines } = capturingLogger();
    logger.info({ headers: { authorization: 'Bearer gw_live_secret', 'x-api-key': 'gw_live_secret' } }, 'headers');
    expect(lines[0]).not.toContain('gw_live_secret');
  });
});

describe('cutForLog', () => {
  it('leaves text within the cap as it is and never splits a surrogate pair', () => {
    expect(cutForLog('short')).toBe('short');
    expect(cutForLog('x'.repeat(maxLoggedChars))).toBe('x'.repeat(maxLoggedChars));
    const emoji = `${'x'.repeat(maxLoggedChars - 1)}😀😀`;
    expect(cutForLog(emoji)).toBe(`${'x'.repeat(maxLoggedChars - 1)}…[cut, ${emoji.length} chars]`);
  });
});
