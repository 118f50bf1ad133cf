import pino from 'pino';
import type { Logger } from 'pino';

export type { Logger };

/**
 * One JSON line per event on stdout. Key material never reaches a log: header names that carry
 * keys are redacted wherever they appear, and services log ids, never bodies.
 */
export function createLogger(service: string, level: string): Logger {
  return pino({
    level,
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: {
      paths: ['*.authorization', '*["x-api-key"]', '*.key', '*.headers.authorization', '*.headers["x-api-key"]'],
      censor: '[redacted]',
    },
  });
}
