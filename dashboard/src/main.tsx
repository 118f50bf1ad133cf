import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import 'uplot/dist/uPlot.min.css';
import './styles.css';
import { AdminApiError, AdminClient } from './api';
import type { Account } from './api';
import { AccountPage } from './account';
import { AccountsPage } from './accounts';
import { ErrorNote } from './ui';

/** A session ends after this long without a click, a key press or a call. */
const idleMs = 15 * 60 * 1000;

interface Session {
  client: AdminClient;
  /** The operator sees every account; an account admin key only its own. */
  operator: boolean;
}

interface SignInProps {
  notice?: string;
  onCall: (status: number) => void;
  onSignedIn: (session: Session, accounts: Account[]) => void;
}

function SignIn(props: SignInProps) {
  const [credential, setCredential] = useState('');
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const submit = (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    const entered = credential.trim();
    const client = new AdminClient(entered, props.onCall);
    client.listAccounts().then(
      (accounts) => {
        setCredential('');
        props.onSignedIn({ client, operator: !entered.startsWith('gw_admin_') }, accounts);
      },
      (failure: Error) => {
        setBusy(false);
        setError(
          failure instanceof AdminApiError && failure.status === 401
            ? 'That is neither the operator token nor an account admin key.'
            : failure.message,
        );
      },
    );
  };
  return (
    <form class="sign-in" onSubmit={submit} autocomplete="off">
      <h1>Gateway admin</h1>
      {props.notice ? <p class="note">{props.notice}</p> : null}
      <label for="credential">Operator token or account admin key</label>
      <input
        id="credential"
        name="credential"
        type="password"
        autocomplete="off"
        spellcheck={false}
        required
        value={credential}
        onInput={(event) => setCredential(event.currentTarget.value)}
      />
      <ErrorNote message={error} />
      <button type="submit" disabled={busy}>
        Sign in
      </button>
      <p class="muted">
        The credential stays in this page's memory only: reloading or closing the page, signing out or 15 minutes
        without activity end the session.
      </p>
    </form>
  );
}

function App() {
  const [session, setSession] = useState<Session>();
  const [notice, setNotice] = useState<string>();
  const [account, setAccount] = useState<Account>();
  const [ownAccounts, setOwnAccounts] = useState<Account[]>([]);
  const idleTimer = useRef<number | undefined>(undefined);
  // Read by timers and listeners, which outlive the render that made them.
  const signedIn = useRef(false);

  const signOut = (reason?: string) => {
    window.clearTimeout(idleTimer.current);
    signedIn.current = false;
    setSession(undefined);
    setAccount(undefined);
    setOwnAccounts([]);
    setNotice(reason);
  };
  const touch = () => {
    if (!signedIn.current) return;
    window.clearTimeout(idleTimer.current);
    idleTimer.current = window.setTimeout(() => signOut('Signed out after 15 minutes without activity.'), idleMs);
  };

  useEffect(() => {
    if (!session) return undefined;
    const events = ['pointerdown', 'keydown'] as const;
    for (const name of events) window.addEventListener(name, touch);
    return () => {
      for (const name of events) window.removeEventListener(name, touch);
    };
  }, [session]);

  if (!session) {
    return (
      <SignIn
        notice={notice}
        onCall={(status) => {
          // A credential revoked during the session (an admin key) ends it.
          if (status === 401 && signedIn.current) signOut('The credential is no longer accepted; sign in again.');
          else touch();
        }}
        onSignedIn={(started, accounts) => {
          signedIn.current = true;
          setNotice(undefined);
          setSession(started);
          setOwnAccounts(accounts);
          if (!started.operator) setAccount(accounts[0]);
          touch();
        }}
      />
    );
  }

  return (
    <div class="shell">
      <header>
        <strong>Gateway admin</strong>
        <span class="muted" data-testid="principal">
          {session.operator ? 'Operator: every account' : `Account admin: ${ownAccounts[0]?.name ?? ''}`}
        </span>
        <button type="button" class="secondary" onClick={() => signOut('Signed out.')}>
          Sign out
        </button>
      </header>
      {account ? (
        <AccountPage
          client={session.client}
          account={account}
          operator={session.operator}
          onBack={session.operator ? () => setAccount(undefined) : undefined}
        />
      ) : (
        <AccountsPage client={session.client} onOpen={setAccount} />
      )}
    </div>
  );
}

render(<App />, document.getElementById('app')!);
