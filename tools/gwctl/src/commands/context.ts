import type { AdminClient, AdminFailure } from '../client';
import { createAdminClient } from '../client';
import { showValue } from '../output';
import { loadSettings } from '../settings';

export const ExitCode = {
  ok: 0,
  /** The server refused, or could not be reached. */
  failure: 1,
  /** The command line or the settings are wrong: nothing was sent. */
  usage: 2,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

export interface Output {
  stdout(text: string): void;
  stderr(text: string): void;
}

/** Everything a command touches outside itself; main.ts passes the process's own. */
export interface CliContext {
  output: Output;
  env: Record<string, string | undefined>;
  cwd: string;
  /** Set by the command that ran; commander's own errors are mapped in run(). */
  exitCode: ExitCode;
}

/** Replaces every occurrence of the token, in case a server message or an error ever quotes it. */
function redacting(output: Output, token: string): Output {
  const redact = (text: string) => text.split(token).join('[redacted]');
  return { stdout: (text) => output.stdout(redact(text)), stderr: (text) => output.stderr(redact(text)) };
}

/**
 * Reads the settings only when a command is about to call the API, so that `--help` and usage errors
 * work without them. A settings problem is a usage error (exit 2).
 */
export async function withAdminClient(
  context: CliContext,
  command: (client: AdminClient, output: Output) => Promise<ExitCode>,
): Promise<void> {
  const loaded = loadSettings(context.env, context.cwd);
  if (!loaded.ok) {
    context.output.stderr(`error: ${loaded.message}\n`);
    context.exitCode = ExitCode.usage;
    return;
  }
  const { adminUrl, adminToken, timeoutMs } = loaded.settings;
  const client = createAdminClient({ baseUrl: adminUrl, token: adminToken, timeoutMs });
  context.exitCode = await command(client, redacting(context.output, adminToken));
}

/** Shows a URL without any user:password it may hold. */
function displayUrl(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.username = '';
    parsed.password = '';
    return parsed.toString();
  } catch {
    return url;
  }
}

export function describeFailure(failure: AdminFailure): string {
  switch (failure.kind) {
    case 'api': {
      const details = [failure.type, `HTTP ${failure.status}`, failure.requestId && `request id ${failure.requestId}`];
      return `${showValue(failure.message)} (${showValue(details.filter(Boolean).join(', '))})`;
    }
    case 'unreachable':
      return `cannot reach the Admin API at ${displayUrl(failure.url)}: ${failure.reason}`;
    case 'timeout':
      return `the Admin API did not answer within ${failure.timeoutMs} ms (${displayUrl(failure.url)})`;
    case 'invalid_response': {
      const requestId = failure.requestId ? `, request id ${failure.requestId}` : '';
      return `unexpected answer from the Admin API (HTTP ${failure.status}${requestId}): ${failure.reason}`;
    }
  }
}

export function reportFailure(output: Output, failure: AdminFailure): ExitCode {
  output.stderr(`error: ${describeFailure(failure)}\n`);
  return ExitCode.failure;
}
