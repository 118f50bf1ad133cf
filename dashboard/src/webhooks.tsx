import { useEffect, useState } from 'preact/hooks';
import { AdminApiError } from './api';
import type { AdminClient } from './api';
import { ConfirmDialog, ErrorNote, FieldError, TableScroll, Timestamp } from './ui';
import type { Confirmation } from './ui';
import { usageApi, webhookEventTypes } from './usage-api';
import type { CreatedEndpoint, Delivery, NewEndpoint, WebhookEndpoint } from './usage-api';

interface EndpointForm {
  url: string;
  event_types: string[];
  /** Comma- or space-separated percentages. */
  thresholds_percent: string;
  expiring_within_days: string;
}

const emptyForm: EndpointForm = {
  url: '',
  event_types: ['usage.threshold_crossed'],
  thresholds_percent: '80, 100',
  expiring_within_days: '7',
};

function newEndpointOf(form: EndpointForm): NewEndpoint {
  const thresholds = form.thresholds_percent.split(/[\s,]+/).filter((entry) => entry !== '');
  return {
    url: form.url.trim(),
    event_types: form.event_types,
    thresholds_percent: thresholds.map(Number),
    expiring_within_days: Number(form.expiring_within_days),
  };
}

function EndpointFormView(props: {
  client: AdminClient;
  accountId: string;
  onCreated: (created: CreatedEndpoint) => void;
}) {
  const [form, setForm] = useState(emptyForm);
  const [fieldError, setFieldError] = useState<{ field: string; message: string }>();
  const [error, setError] = useState<string>();
  const set = <F extends keyof EndpointForm>(field: F, value: EndpointForm[F]) => setForm({ ...form, [field]: value });
  const toggle = (type: string, on: boolean) =>
    set('event_types', on ? [...form.event_types, type] : form.event_types.filter((chosen) => chosen !== type));
  const submit = (event: Event) => {
    event.preventDefault();
    setFieldError(undefined);
    setError(undefined);
    usageApi(props.client)
      .createEndpoint(props.accountId, newEndpointOf(form))
      .then(
        (created) => {
          setForm(emptyForm);
          props.onCreated(created);
        },
        (failure: Error) => {
          if (failure instanceof AdminApiError && failure.field !== undefined && failure.field in emptyForm) {
            setFieldError({ field: failure.field, message: failure.message });
          } else setError(failure.message);
        },
      );
  };
  return (
    <form class="key-form" onSubmit={submit} data-testid="create-endpoint">
      <h3>New endpoint</h3>
      <label>
        URL (https)
        <input
          name="url"
          type="url"
          required
          placeholder="https://hooks.example.com/gateway"
          value={form.url}
          onInput={(event) => set('url', event.currentTarget.value)}
        />
        <FieldError error={fieldError} field="url" />
      </label>
      <fieldset>
        <legend>events</legend>
        {webhookEventTypes.map((type) => (
          <label key={type} class="check">
            <input
              type="checkbox"
              name="event_types"
              value={type}
              checked={form.event_types.includes(type)}
              onChange={(event) => toggle(type, event.currentTarget.checked)}
            />
            {type}
          </label>
        ))}
        <FieldError error={fieldError} field="event_types" />
      </fieldset>
      <label>
        thresholds (% of the allowance)
        <input
          name="thresholds_percent"
          value={form.thresholds_percent}
          onInput={(event) => set('thresholds_percent', event.currentTarget.value)}
        />
        <FieldError error={fieldError} field="thresholds_percent" />
      </label>
      <label>
        days before a key expires
        <input
          name="expiring_within_days"
          type="number"
          min={1}
          max={90}
          value={form.expiring_within_days}
          onInput={(event) => set('expiring_within_days', event.currentTarget.value)}
        />
        <FieldError error={fieldError} field="expiring_within_days" />
      </label>
      <ErrorNote message={error} />
      <button type="submit">Add endpoint</button>
    </form>
  );
}

/** A signing secret, shown at its creation only (the gateway keeps it to sign, but never shows it again). */
function SecretOnce(props: { endpoint: CreatedEndpoint; rotated: boolean; onDismiss: () => void }) {
  return (
    <section class="shown-once" data-testid="shown-once" aria-live="polite">
      <h3>{props.rotated ? 'New signing secret' : 'Signing secret'}</h3>
      <p class="warning">Copy this secret now: it is shown only once. Verify each delivery's signature with it.</p>
      {props.rotated ? <p class="note">The previous secret keeps signing beside this one for 24 hours.</p> : null}
      <div class="secret">
        <code data-testid="secret-value">{props.endpoint.secret}</code>
      </div>
      <button type="button" class="secondary" onClick={props.onDismiss}>
        I have copied it
      </button>
    </section>
  );
}

function attemptsText(delivery: Delivery): string {
  return delivery.attempt_log.map((attempt) => attempt.status_code ?? attempt.error ?? 'no answer').join(' → ');
}

/** An endpoint's messages, newest first, each with its attempts and a resend. */
function DeliveryLog(props: { client: AdminClient; endpoint: WebhookEndpoint }) {
  const api = usageApi(props.client);
  const [deliveries, setDeliveries] = useState<Delivery[]>();
  const [error, setError] = useState<string>();
  const load = () =>
    api.deliveries(props.endpoint.id).then(
      (loaded) => {
        setError(undefined);
        setDeliveries(loaded);
      },
      (failure: Error) => setError(failure.message),
    );
  useEffect(() => {
    void load();
  }, [props.endpoint.id]);
  const resend = (delivery: Delivery) =>
    api.resend(props.endpoint.id, delivery.id).then(load, (failure: Error) => setError(failure.message));
  return (
    <div data-testid="delivery-log">
      <div class="toolbar">
        <button type="button" class="secondary" onClick={() => void load()}>
          Refresh log
        </button>
      </div>
      <ErrorNote message={error} />
      {deliveries ? (
        <TableScroll label={`deliveries to ${props.endpoint.url}`}>
          <table data-testid="deliveries">
            <thead>
              <tr>
                <th>event</th>
                <th>status</th>
                <th>created</th>
                <th>attempts</th>
                <th>message id</th>
                <th>
                  <span class="visually-hidden">actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {deliveries.map((delivery) => (
                <tr key={delivery.id} data-message-id={delivery.id}>
                  <td>{delivery.event_type}</td>
                  <td data-testid="delivery-status">
                    <span class={`status ${delivery.status}`}>{delivery.status}</span>
                  </td>
                  <td>
                    <Timestamp iso={delivery.created_at} />
                  </td>
                  <td data-testid="delivery-attempts">{attemptsText(delivery)}</td>
                  <td>
                    <code>{delivery.id}</code>
                  </td>
                  <td>
                    <button type="button" class="secondary" onClick={() => void resend(delivery)}>
                      Resend
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableScroll>
      ) : null}
      {deliveries?.length === 0 ? <p class="muted">Nothing delivered yet.</p> : null}
    </div>
  );
}

/** The account's webhook endpoints: register, rotate a secret, delete, and each one's delivery log. */
export function WebhooksPanel(props: { client: AdminClient; accountId: string }) {
  const api = usageApi(props.client);
  const [endpoints, setEndpoints] = useState<WebhookEndpoint[]>();
  const [shown, setShown] = useState<{ endpoint: CreatedEndpoint; rotated: boolean }>();
  const [open, setOpen] = useState<string>();
  const [confirmation, setConfirmation] = useState<Confirmation>();
  const [error, setError] = useState<string>();
  const load = () =>
    api.listEndpoints(props.accountId).then(
      (loaded) => {
        setError(undefined);
        setEndpoints(loaded);
      },
      (failure: Error) => setError(failure.message),
    );
  useEffect(() => {
    void load();
  }, [props.client, props.accountId]);
  const rotate = (endpoint: WebhookEndpoint) =>
    setConfirmation({
      message: `Make a new signing secret for ${endpoint.url}? The current one keeps signing for 24 hours.`,
      action: 'Rotate secret',
      run: () =>
        api.rotateSecret(endpoint.id).then((rotated) => {
          setShown({ endpoint: rotated, rotated: true });
          return load();
        }),
    });
  const remove = (endpoint: WebhookEndpoint) =>
    setConfirmation({
      message: `Delete the endpoint ${endpoint.url}? Nothing more is delivered to it.`,
      action: 'Delete endpoint',
      run: () => api.deleteEndpoint(endpoint.id).then(load),
    });

  return (
    <div data-testid="webhooks">
      <ErrorNote message={error} />
      {shown ? <SecretOnce {...shown} onDismiss={() => setShown(undefined)} /> : null}
      {endpoints?.map((endpoint) => (
        <section key={endpoint.id} class="endpoint" data-endpoint-id={endpoint.id}>
          <h3 class="endpoint-url">{endpoint.url}</h3>
          <p class="muted">
            {endpoint.event_types.join(', ')}
            {endpoint.thresholds_percent.length > 0 ? ` · at ${endpoint.thresholds_percent.join(' %, ')} %` : ''}
          </p>
          <div class="actions">
            <button
              type="button"
              class="secondary"
              aria-expanded={open === endpoint.id}
              onClick={() => setOpen(open === endpoint.id ? undefined : endpoint.id)}
            >
              Delivery log
            </button>
            <button type="button" class="secondary" onClick={() => rotate(endpoint)}>
              Rotate secret
            </button>
            <button type="button" class="danger" onClick={() => remove(endpoint)}>
              Delete
            </button>
          </div>
          {open === endpoint.id ? <DeliveryLog client={props.client} endpoint={endpoint} /> : null}
        </section>
      ))}
      {endpoints?.length === 0 ? <p class="muted">No endpoints yet.</p> : null}
      <EndpointFormView
        client={props.client}
        accountId={props.accountId}
        onCreated={(created) => {
          setShown({ endpoint: created, rotated: false });
          void load();
        }}
      />
      {confirmation ? <ConfirmDialog confirmation={confirmation} onClose={() => setConfirmation(undefined)} /> : null}
    </div>
  );
}
