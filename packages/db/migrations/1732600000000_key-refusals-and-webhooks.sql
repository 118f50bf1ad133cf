-- Up Migration

-- Requests refused after their key was verified, per key, UTC day and reason (the error type). Ingress
-- counts them in memory and metering adds each flush here: one write per flush, never one per refusal.
CREATE TABLE key_refusals (
  account_id   text NOT NULL,
  key_id       text NOT NULL,
  environment  text NOT NULL,
  day          date NOT NULL,
  reason       text NOT NULL,
  refusals     bigint NOT NULL,
  PRIMARY KEY (account_id, day, key_id, environment, reason)
);

-- The per-key days of a period read usage_events by account, period and key.
CREATE INDEX usage_events_account_period_key ON usage_events (account_id, period_start, key_id);

-- Where an account wants its events delivered. The signing secrets are kept as given to the account
-- (HMAC needs them); the previous one keeps signing beside the new one until previous_secret_until.
CREATE TABLE webhook_endpoints (
  id                     text PRIMARY KEY,
  account_id             text NOT NULL REFERENCES accounts (id),
  url                    text NOT NULL,
  event_types            text[] NOT NULL,
  -- Percentages of the monthly allowance that raise usage.threshold_crossed, ascending.
  thresholds_percent     integer[] NOT NULL DEFAULT '{}',
  -- key.expiring is raised this many days before a key expires.
  expiring_within_days   integer NOT NULL DEFAULT 7 CHECK (expiring_within_days BETWEEN 1 AND 90),
  secret                 text NOT NULL,
  previous_secret        text,
  previous_secret_until  timestamptz,
  created_at             timestamptz NOT NULL DEFAULT now(),
  deleted_at             timestamptz
);
CREATE INDEX webhook_endpoints_account ON webhook_endpoints (account_id) WHERE deleted_at IS NULL;

-- One row per event per endpoint, written in the transaction that decides the event (the outbox). The
-- dispatcher delivers pending rows; id is the webhook-id every attempt carries (the idempotency id).
-- dedupe_key makes an event once per endpoint: a threshold once per period, a revocation once per key.
CREATE TABLE webhook_messages (
  id               text PRIMARY KEY,
  endpoint_id      text NOT NULL REFERENCES webhook_endpoints (id),
  account_id       text NOT NULL,
  event_type       text NOT NULL,
  dedupe_key       text NOT NULL,
  payload          jsonb NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  status           text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts         integer NOT NULL DEFAULT 0,
  next_attempt_at  timestamptz NOT NULL DEFAULT now(),
  -- Retries stop after this; a resend moves it on.
  retry_until      timestamptz NOT NULL DEFAULT now() + interval '24 hours',
  delivered_at     timestamptz,
  UNIQUE (endpoint_id, dedupe_key)
);
CREATE INDEX webhook_messages_due ON webhook_messages (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_messages_endpoint ON webhook_messages (endpoint_id, created_at DESC);

-- Every delivery attempt, for the delivery log: the answer's status or why there was none.
CREATE TABLE webhook_attempts (
  id            bigserial PRIMARY KEY,
  message_id    text NOT NULL REFERENCES webhook_messages (id),
  attempted_at  timestamptz NOT NULL DEFAULT now(),
  status_code   integer,
  error         text,
  duration_ms   integer NOT NULL
);
CREATE INDEX webhook_attempts_message ON webhook_attempts (message_id, attempted_at);

-- Down Migration

DROP TABLE webhook_attempts;
DROP TABLE webhook_messages;
DROP TABLE webhook_endpoints;
DROP INDEX usage_events_account_period_key;
DROP TABLE key_refusals;
