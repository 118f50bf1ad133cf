import type { Command } from 'commander';
import { parseList, parsePositiveInteger, parseTimestamp } from '../arguments';
import type { AdminKey, AuditEntry } from '@gw/admin-api';
import { renderFields, renderJson, renderTable, showValue, withoutKeyValue } from '../output';
import type { Column } from '../output';
import type { CliContext } from './context';
import { ExitCode, reportFailure, withAdminClient } from './context';

/** Commands for admin keys, key edits and the audit log (docs/admin-api.md). */

interface JsonOption {
  json?: boolean;
}

const adminKeyColumns: Column<AdminKey>[] = [
  { heading: 'ID', cell: (key) => key.id },
  { heading: 'NAME', cell: (key) => key.name },
  { heading: 'PREFIX', cell: (key) => key.display_prefix },
  { heading: 'STATUS', cell: (key) => key.status },
  { heading: 'EXPIRES', cell: (key) => key.expires_at },
  { heading: 'LAST USED', cell: (key) => key.last_used_at },
  { heading: 'CREATED', cell: (key) => key.created_at },
];

const auditColumns: Column<AuditEntry>[] = [
  { heading: 'SEQ', cell: (entry) => entry.seq },
  { heading: 'AT', cell: (entry) => entry.at },
  { heading: 'ACTOR', cell: (entry) => (entry.actor.id ? `${entry.actor.kind}:${entry.actor.id}` : entry.actor.kind) },
  { heading: 'FROM', cell: (entry) => entry.source_address },
  { heading: 'ACTION', cell: (entry) => entry.action },
  { heading: 'ACCOUNT', cell: (entry) => entry.account_id },
  { heading: 'TARGET', cell: (entry) => entry.target?.id },
];

/** `none` clears a list or an expiry; anything else is the new value. */
const orNone =
  <T>(parse: (value: string) => T) =>
  (value: string): T | null =>
    value === 'none' ? null : parse(value);

function registerAdminKeyCommands(program: Command, context: CliContext): void {
  const adminKeys = program.command('admin-keys').description("list, create and revoke an account's admin keys");

  adminKeys
    .command('list')
    .description("list an account's admin keys (never their values)")
    .requiredOption('--account <id>', 'account id')
    .option('--json', 'print {"data":[…]} as JSON')
    .action((options: { account: string } & JsonOption) =>
      withAdminClient(context, async (client, output) => {
        const result = await client.call('listAdminKeys', {
          params: { id: options.account },
          query: { limit: '200' },
        });
        if (!result.ok) return reportFailure(output, result.failure);
        const listed = result.value.data.map(withoutKeyValue);
        if (options.json) output.stdout(renderJson({ data: listed }));
        else output.stdout(listed.length === 0 ? 'No admin keys.\n' : renderTable(adminKeyColumns, listed));
        return ExitCode.ok;
      }),
    );

  adminKeys
    .command('create')
    .description('create an admin key for an account (operator only); its value is shown once')
    .requiredOption('--account <id>', 'account id')
    .requiredOption('--name <name>', 'admin key name')
    .option('--expires-at <timestamp>', 'ISO 8601 expiry with a time zone', parseTimestamp)
    .option('--json', 'print the admin key, its value included, as JSON')
    .action((options: { account: string; name: string; expiresAt?: string } & JsonOption) =>
      withAdminClient(context, async (client, output) => {
        const result = await client.call('createAdminKey', {
          params: { id: options.account },
          body: { name: options.name, expires_at: options.expiresAt ?? null },
        });
        if (!result.ok) return reportFailure(output, result.failure);
        if (options.json) output.stdout(renderJson(result.value));
        else {
          const { key, ...adminKey } = result.value;
          output.stdout(
            `${renderFields(Object.entries(adminKey))}\n${showValue(key)}\n\n` +
              'This is the admin key value. It will not be shown again: store it now.\n',
          );
        }
        return ExitCode.ok;
      }),
    );

  adminKeys
    .command('revoke')
    .description('revoke an admin key: refused from its next request')
    .argument('<admin-key-id>', 'admin key id (adk_…), not the key value')
    .option('--json', 'print the admin key as JSON')
    .action((id: string, options: JsonOption) =>
      withAdminClient(context, async (client, output) => {
        const result = await client.call('revokeAdminKey', { params: { id } });
        if (!result.ok) return reportFailure(output, result.failure);
        const key = withoutKeyValue(result.value);
        output.stdout(
          options.json ? renderJson(key) : `Revoked admin key ${showValue(key.id)}: status ${showValue(key.status)}\n`,
        );
        return ExitCode.ok;
      }),
    );
}

interface EditOptions extends JsonOption {
  name?: string;
  allowedModels?: string[] | null;
  allowedIps?: string[] | null;
  expiresAt?: string | null;
}

function registerKeyEditCommand(program: Command, context: CliContext): void {
  const keys = program.commands.find((command) => command.name() === 'keys') ?? program.command('keys');
  keys
    .command('edit')
    .description("change a key's name and restrictions; the others stay")
    .argument('<key-id>', 'key id (key_…)')
    .option('--name <name>', 'new name')
    .option('--allowed-models <list>', 'comma-separated models, or none for any', orNone(parseList))
    .option('--allowed-ips <list>', 'comma-separated addresses or ranges, or none for any', orNone(parseList))
    .option('--expires-at <timestamp>', 'ISO 8601 expiry with a time zone, or none', orNone(parseTimestamp))
    .option('--json', 'print the key as JSON')
    .action((id: string, options: EditOptions) =>
      withAdminClient(context, async (client, output) => {
        const { json: _json, ...change } = options;
        const body = {
          name: change.name,
          allowed_models: change.allowedModels,
          allowed_ips: change.allowedIps,
          expires_at: change.expiresAt,
        };
        if (Object.values(body).every((value) => value === undefined)) {
          output.stderr('error: name at least one of --name, --allowed-models, --allowed-ips, --expires-at\n');
          return ExitCode.usage;
        }
        const result = await client.call('updateKey', { params: { id }, body });
        if (!result.ok) return reportFailure(output, result.failure);
        const key = withoutKeyValue(result.value);
        output.stdout(options.json ? renderJson(key) : renderFields(Object.entries(key)));
        return ExitCode.ok;
      }),
    );
}

function registerAuditCommands(program: Command, context: CliContext): void {
  const audit = program.command('audit').description('read and verify the audit log of admin changes');

  audit
    .command('list')
    .description('audit entries, newest first (an account admin sees its own account)')
    .option('--account <id>', 'only this account')
    .option('--action <prefix>', 'only actions starting with this, e.g. key. or admin_key.revoke')
    .option('--limit <n>', 'entries (at most 200)', parsePositiveInteger, 50)
    .option('--json', 'print {"data":[…]} as JSON, before and after included')
    .action((options: { account?: string; action?: string; limit: number } & JsonOption) =>
      withAdminClient(context, async (client, output) => {
        const result = await client.call('listAudit', {
          query: { limit: String(options.limit), account_id: options.account, action: options.action },
        });
        if (!result.ok) return reportFailure(output, result.failure);
        if (options.json) output.stdout(renderJson(result.value));
        else {
          const entries = result.value.data;
          output.stdout(entries.length === 0 ? 'No entries.\n' : renderTable(auditColumns, entries));
        }
        return ExitCode.ok;
      }),
    );

  audit
    .command('verify')
    .description(
      'check the whole hash chain and its end against the published head (operator only); exit 1 if it does not hold',
    )
    .option('--json', 'print the verification as JSON')
    .action((options: JsonOption) =>
      withAdminClient(context, async (client, output) => {
        const result = await client.call('verifyAudit', {});
        if (!result.ok) return reportFailure(output, result.failure);
        const checked = result.value;
        if (options.json) output.stdout(renderJson(checked));
        else {
          const published = checked.published_head
            ? `${checked.published_head.seq} ${checked.published_head.hash}`
            : '(none known)';
          output.stdout(
            renderFields([
              ['valid', checked.valid ? 'yes' : 'NO'],
              ['entries_checked', checked.entries_checked],
              ['head', `${checked.head.seq} ${checked.head.hash}`],
              ['published_head', published],
              ['failed_at', checked.failure?.seq],
              ['reason', checked.failure?.reason],
            ]),
          );
        }
        return checked.valid ? ExitCode.ok : ExitCode.failure;
      }),
    );
}

export function registerAdminAccessCommands(program: Command, context: CliContext): void {
  registerAdminKeyCommands(program, context);
  registerKeyEditCommand(program, context);
  registerAuditCommands(program, context);
}
