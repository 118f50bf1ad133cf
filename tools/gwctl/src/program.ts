import { Command, CommanderError } from 'commander';
import { registerAccountCommands } from './commands/accounts';
import { registerAdminAccessCommands } from './commands/admin-access';
import type { CliContext } from './commands/context';
import { ExitCode } from './commands/context';
import { registerKeyCommands } from './commands/keys';

const environmentHelp = `
Settings (the environment wins; otherwise .local/stack.env in this directory or the nearest parent that has one):
  GW_ADMIN_URL         base URL of the Admin API, e.g. http://127.0.0.1:8081
  GW_ADMIN_TOKEN       operator token or account admin key (never printed)
  GW_ADMIN_TIMEOUT_MS  time allowed for each request (default 10000)

Exit codes: 0 done, 1 refused by the server or server unreachable, 2 bad arguments or settings.`;

export function buildProgram(context: CliContext): Command {
  // Settings made before .command() are inherited by every subcommand: commander errors are thrown to
  // run() instead of calling process.exit, and its messages go through the context's output.
  const program = new Command('gwctl')
    .description('Manage the accounts and API keys of the inference gateway through its Admin API.')
    .exitOverride()
    .showHelpAfterError('(add --help for usage)')
    .configureOutput({
      writeOut: (text) => context.output.stdout(text),
      writeErr: (text) => context.output.stderr(text),
    })
    .addHelpText('after', environmentHelp);
  registerAccountCommands(program, context);
  registerKeyCommands(program, context);
  registerAdminAccessCommands(program, context);
  return program;
}

/** Runs one command line (without `node` and the script) and returns the process exit code. */
export async function run(args: string[], context: CliContext): Promise<ExitCode> {
  const program = buildProgram(context);
  try {
    await program.parseAsync(args, { from: 'user' });
    return context.exitCode;
  } catch (error) {
    // Commander has already printed its message. Help asked for exits 0; every other usage problem
    // (commander would exit 1) exits 2, so scripts can tell them from server refusals.
    if (error instanceof CommanderError) return error.exitCode === 0 ? ExitCode.ok : ExitCode.usage;
    context.output.stderr(`error: unexpected failure: ${error instanceof Error ? error.message : String(error)}\n`);
    return ExitCode.failure;
  }
}
