import { useState } from 'preact/hooks';
import type { Account, AdminClient } from './api';
import { KeyUsagePanel } from './key-usage';
import { KeysPanel } from './keys';
import { UsagePanel } from './usage';
import { WebhooksPanel } from './webhooks';

/** One account: its keys and its usage this month. */
export function AccountPage(props: { client: AdminClient; account: Account; onBack?: () => void }) {
  const { account } = props;
  const [tab, setTab] = useState<'keys' | 'usage' | 'usage-by-key' | 'webhooks'>('keys');
  return (
    <section>
      {props.onBack ? (
        <button type="button" class="secondary" onClick={props.onBack}>
          ← All accounts
        </button>
      ) : null}
      <h2 data-testid="account-name">
        {account.name} <span class={`status ${account.status}`}>{account.status}</span>
      </h2>
      <p class="muted">
        <code>{account.id}</code> · plan {account.plan}
      </p>
      <nav class="tabs">
        <button type="button" class={tab === 'keys' ? 'selected' : ''} onClick={() => setTab('keys')}>
          Keys
        </button>
        <button type="button" class={tab === 'usage' ? 'selected' : ''} onClick={() => setTab('usage')}>
          Usage
        </button>
        <button type="button" class={tab === 'usage-by-key' ? 'selected' : ''} onClick={() => setTab('usage-by-key')}>
          Usage by key
        </button>
        <button type="button" class={tab === 'webhooks' ? 'selected' : ''} onClick={() => setTab('webhooks')}>
          Webhooks
        </button>
      </nav>
      {tab === 'keys' ? <KeysPanel client={props.client} accountId={account.id} /> : null}
      {tab === 'usage' ? <UsagePanel client={props.client} accountId={account.id} /> : null}
      {tab === 'usage-by-key' ? <KeyUsagePanel client={props.client} accountId={account.id} /> : null}
      {tab === 'webhooks' ? <WebhooksPanel client={props.client} accountId={account.id} /> : null}
    </section>
  );
}
