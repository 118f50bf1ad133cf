import type { Command } from 'commander';
import { Option } from 'commander';
import { parsePositiveInteger } from '../arguments';
import type { Account, AccountLimits, AdminClient, LimitsChange } from '../client';
import { renderAccount, renderAccountTable, renderJson, showValue } from '../output';
import type { CliContext } from './context';
import { ExitCode, reportFailure, withAdminClient } from './context';

interface JsonOption {
  json?: boolean;
}

interface CreateOptions extends JsonOption {
  name: string;
  plan: string;
}

interface SetLimitsOptions extends JsonOption {
  rpm?: number;
  concurrency?: number;
  allowance?: number;
  overage?: 'on' | 'off';
  ceiling?: number;
}

/** The API's fields for the options given, and only those: an absent option leaves the limit as it is. */
export function limitsChange(options: SetLimitsOptions): LimitsChange {
  const change: LimitsChange = {};
  if (options.rpm !== undefined) change.requests_per_minute = options.rpm;
  if (options.concurrency !== undefined) change.concurrency = options.concurrency;
  if (options.allowance !== undefined) change.monthly_tokens = options.allowance;
  if (options.overage !== undefined) change.overage = options.overage === 'on';
  if (options.ceiling !== undefined) change.hard_ceiling_tokens = options.ceiling;
  return change;
}

function confirmLimits(account: Account, change: LimitsChange): string {
  const changed = (Object.keys(change) as (keyof AccountLimits)[]).map((name) => {
    const value = account.limits?.[name];
    return `${name}=${typeof value === 'boolean' ? (value ? 'on' : 'off') : showValue(value)}`;
  });
  return `Updated limits of account ${showValue(account.id)}: ${changed.join(', ')}\n`;
}

export function registerAccountCommands(program: Command, context: CliContext): void {
  const accounts = program.command('accounts').description('create, list, suspend and limit accounts');

  accounts
    .command('create')
    .description('create an account')
    .requiredOption('--name <name>', 'account name')
    .requiredOption('--plan <plan>', 'plan of the gateway configuration, e.g. pro')
    .option('--json', 'print the account as JSON')
    .action((options: CreateOptions) =>
      withAdminClient(context, async (client, output) => {
        const result = await client.createAccount({ name: options.name, plan: options.plan });
        if (!result.ok) return reportFailure(output, result.failure);
        output.stdout(options.json ? renderJson(result.value) : renderAccount(result.value));
        return ExitCode.ok;
      }),
    );

  accounts
    .command('list')
    .description('list the accounts the token can see')
    .option('--json', 'print {"data":[…]} as JSON')
    .action((options: JsonOption) =>
      withAdminClient(context, async (client, output) => {
        const result = await client.listAccounts();
        if (!result.ok) return reportFailure(output, result.failure);
        const accounts = result.value.data;
        output.stdout(options.json ? renderJson({ data: accounts }) : renderAccountTable(accounts));
        return ExitCode.ok;
      }),
    );

  accounts
    .command('show')
    .description('show one account and its limits')
    .argument('<id>', 'account id')
    .option('--json', 'print the account as JSON')
    .action((id: string, options: JsonOption) =>
      withAdminClient(context, async (client, output) => {
        const result = await client.getAccount(id);
        if (!result.ok) return reportFailure(output, result.failure);
        output.stdout(options.json ? renderJson(result.value) : renderAccount(result.value));
        return ExitCode.ok;
      }),
    );

  registerStatusChanges(accounts, context);
  registerSetLimits(accounts, context);
}

/** `accounts suspend` and `accounts resume`. */
function registerStatusChanges(accounts: Command, context: CliContext): void {
  const statusChanges = [
    {
      name: 'suspend',
      description: 'suspend an account: its keys are refused until it is resumed',
      done: 'Suspended',
      call: (client: AdminClient, id: string) => client.suspendAccount(id),
    },
    {
      name: 'resume',
      description: 'resume a suspended account',
      done: 'Resumed',
      call: (client: AdminClient, id: string) => client.resumeAccount(id),
    },
  ];
  for (const statusChange of statusChanges) {
    accounts
      .command(statusChange.name)
      .description(statusChange.description)
      .argument('<id>', 'account id')
      .option('--json', 'print the account as JSON')
      .action((id: string, options: JsonOption) =>
        withAdminClient(context, async (client, output) => {
          const result = await statusChange.call(client, id);
          if (!result.ok) return reportFailure(output, result.failure);
          const account = result.value;
          output.stdout(
            options.json
              ? renderJson(account)
              : `${statusChange.done} account ${showValue(account.id)} (${showValue(account.name)}): status ${showValue(account.status)}\n`,
          );
          return ExitCode.ok;
        }),
      );
  }
}

/** `accounts set-limits`: only the options given change. */
function registerSetLimits(accounts: Command, context: CliContext): void {
  accounts
    .command('set-limits')
    .description("override limits of an account's plan (only the options given change)")
    .argument('<id>', 'account id')
    .option('--rpm <n>', 'requests per minute', parsePositiveInteger)
    .option('--concurrency <n>', 'requests in flight at once', parsePositiveInteger)
    .option('--allowance <n>', 'tokens per month', parsePositiveInteger)
    .addOption(new Option('--overage <on|off>', 'allow use beyond the monthly allowance').choices(['on', 'off']))
    .option('--ceiling <n>', 'hard ceiling of tokens per month, overage included', parsePositiveInteger)
    .option('--json', 'print the account as JSON')
    .action(async (id: string, options: SetLimitsOptions, command: Command) => {
      const change = limitsChange(options);
      if (Object.keys(change).length === 0) {
        command.error('error: give at least one of --rpm, --concurrency, --allowance, --overage, --ceiling', {
          exitCode: ExitCode.usage,
          code: 'gwctl.noLimitGiven',
        });
      }
      await withAdminClient(context, async (client, output) => {
        const result = await client.setAccountLimits(id, change);
        if (!result.ok) return reportFailure(output, result.failure);
        output.stdout(options.json ? renderJson(result.value) : confirmLimits(result.value, change));
        return ExitCode.ok;
      });
    });
}
