import type { Command } from 'commander';
import { Option } from 'commander';
import { keyEnvironments, privacyModes, residencyTiers } from '@gw/vocabulary';
import { parseList, parseTimestamp } from '../arguments';
import type { KeyEnvironment, PrivacyMode, Residency } from '../client';
import { renderCreatedKey, renderJson, renderKeyTable, showValue, withoutKeyValue } from '../output';
import type { CliContext } from './context';
import { ExitCode, reportFailure, withAdminClient } from './context';

interface JsonOption {
  json?: boolean;
}

interface CreateOptions extends JsonOption {
  account: string;
  name: string;
  env: KeyEnvironment;
  residency: Residency;
  privacyMode: PrivacyMode;
  allowedModels?: string[];
  allowedIps?: string[];
  /** Already normalised to UTC ISO by parseTimestamp. */
  expiresAt?: string;
}

interface ListOptions extends JsonOption {
  account: string;
}

export function registerKeyCommands(program: Command, context: CliContext): void {
  const keys = program.command('keys').description('create, list and revoke API keys');

  keys
    .command('create')
    .description('create an API key; its value is shown once')
    .requiredOption('--account <id>', 'account id')
    .requiredOption('--name <name>', 'key name')
    .addOption(
      new Option('--env <env>', 'live (upstream) or test (deterministic stub)')
        .choices(keyEnvironments)
        .makeOptionMandatory(),
    )
    .addOption(
      new Option('--residency <region>', 'where requests may be served').choices(residencyTiers).makeOptionMandatory(),
    )
    .addOption(new Option('--privacy-mode <mode>', 'treatment of prompts').choices(privacyModes).makeOptionMandatory())
    .option('--allowed-models <list>', 'comma-separated models the key may use (default: any)', parseList)
    .option('--allowed-ips <list>', 'comma-separated client IPs or ranges (default: any)', parseList)
    .option('--expires-at <timestamp>', 'ISO 8601 expiry with a time zone, e.g. 2027-01-31T00:00:00Z', parseTimestamp)
    .option('--json', 'print the key, its value included, as JSON')
    .action((options: CreateOptions) =>
      withAdminClient(context, async (client, output) => {
        const result = await client.createKey({
          account_id: options.account,
          name: options.name,
          environment: options.env,
          residency: options.residency,
          privacy_mode: options.privacyMode,
          allowed_models: options.allowedModels ?? null,
          allowed_ips: options.allowedIps ?? null,
          expires_at: options.expiresAt ?? null,
        });
        if (!result.ok) return reportFailure(output, result.failure);
        output.stdout(options.json ? renderJson(result.value) : renderCreatedKey(result.value));
        return ExitCode.ok;
      }),
    );

  keys
    .command('list')
    .description("list an account's keys (never their values)")
    .requiredOption('--account <id>', 'account id')
    .option('--json', 'print {"data":[…]} as JSON')
    .action((options: ListOptions) =>
      withAdminClient(context, async (client, output) => {
        const result = await client.listKeys(options.account);
        if (!result.ok) return reportFailure(output, result.failure);
        const listed = result.value.data.map(withoutKeyValue);
        output.stdout(options.json ? renderJson({ data: listed }) : renderKeyTable(listed));
        return ExitCode.ok;
      }),
    );

  keys
    .command('revoke')
    .description('revoke a key: it is refused from now on')
    .argument('<key-id>', 'key id (key_…), not the key value')
    .option('--json', 'print the key as JSON')
    .action((keyId: string, options: JsonOption) =>
      withAdminClient(context, async (client, output) => {
        const result = await client.revokeKey(keyId);
        if (!result.ok) return reportFailure(output, result.failure);
        const key = withoutKeyValue(result.value);
        output.stdout(
          options.json
            ? renderJson(key)
            : `Revoked key ${showValue(key.id)} (${showValue(key.name)}, ${showValue(key.display_prefix)}…): status ${showValue(key.status)}\n`,
        );
        return ExitCode.ok;
      }),
    );
}
