import { useEffect, useState } from 'preact/hooks';
import type { Account, AdminClient, Residency } from './api';
import { AdminKeysPanel } from './admin-keys';
import { AuditPanel } from './audit';
import { KeyUsagePanel } from './key-usage';
import { KeysPanel } from './keys';
import { LimitsPanel } from './limits';
import { ConfirmDialog, Tabs } from './ui';
import { UsagePanel } from './usage';
import { WebhooksPanel } from './webhooks';

type Tab = 'keys' | 'usage' | 'usage-by-key' | 'webhooks' | 'limits' | 'admin-keys' | 'audit';

const tabs: readonly { id: Tab; label: string }[] = [
  { id: 'keys', label: 'Keys' },
  { id: 'usage', label: 'Usage' },
  { id: 'usage-by-key', label: 'Usage by key' },
  { id: 'webhooks', label: 'Webhooks' },
  { id: 'limits', label: 'Limits' },
  { id: 'admin-keys', label: 'Admin keys' },
  { id: 'audit', label: 'Audit log' },
];

/** One account: its keys, usage (by model and by key), webhooks, limits, admin keys and audit log. */
export function AccountPage(props: { client: AdminClient; account: Account; operator: boolean; onBack?: () => void }) {
  const { account, client } = props;
  const [tab, setTab] = useState<Tab>('keys');
  // A secret shown once and not yet marked copied: leaving the tab would lose it, so that asks first.
  const [secretPending, setSecretPending] = useState(false);
  const [leavingFor, setLeavingFor] = useState<Tab>();
  const [residencies, setResidencies] = useState<Residency[]>();
  useEffect(() => {
    client.limits(account.id).then(
      (limits) => setResidencies(limits.residency),
      () => setResidencies(undefined),
    );
  }, [client, account.id]);
  const select = (next: Tab) => {
    if (next === tab) return;
    if (secretPending) setLeavingFor(next);
    else setTab(next);
  };
  const panel = {
    keys: () => (
      <KeysPanel client={client} accountId={account.id} residencies={residencies} onSecretPending={setSecretPending} />
    ),
    usage: () => <UsagePanel client={client} accountId={account.id} />,
    'usage-by-key': () => <KeyUsagePanel client={client} accountId={account.id} />,
    webhooks: () => <WebhooksPanel client={client} accountId={account.id} />,
    limits: () => <LimitsPanel client={client} account={account} operator={props.operator} />,
    'admin-keys': () => (
      <AdminKeysPanel
        client={client}
        accountId={account.id}
        operator={props.operator}
        onSecretPending={setSecretPending}
      />
    ),
    audit: () => <AuditPanel client={client} accountId={account.id} />,
  }[tab];
  return (
    <section>
      {props.onBack ? (
        <button type="button" class="secondary" onClick={props.onBack}>
          ← All accounts
        </button>
      ) : null}
      <h2 data-testid="account-name" class="name">
        {account.name} <span class={`status ${account.status}`}>{account.status}</span>
      </h2>
      <p class="muted">
        <code>{account.id}</code> · plan {account.plan}
      </p>
      <Tabs label="account" tabs={tabs} selected={tab} onSelect={select} />
      <div role="tabpanel" id={`panel-${tab}`} aria-labelledby={`tab-${tab}`}>
        {panel()}
      </div>
      {leavingFor ? (
        <ConfirmDialog
          confirmation={{
            message: 'The key shown above has not been marked as copied. It cannot be shown again: leave and lose it?',
            action: 'Leave and discard it',
            run: async () => {
              setSecretPending(false);
              setTab(leavingFor);
            },
          }}
          onClose={() => setLeavingFor(undefined)}
        />
      ) : null}
    </section>
  );
}
