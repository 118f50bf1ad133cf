-- Up Migration

CREATE TABLE accounts (
  id            text PRIMARY KEY,
  name          text NOT NULL,
  plan          text NOT NULL,
  suspended_at  timestamptz,
  created_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
  id              text PRIMARY KEY,
  account_id      text NOT NULL REFERENCES accounts (id),
  name            text NOT NULL,
  environment     text NOT NULL CHECK (environment IN ('live', 'test')),
  -- HMAC-SHA-256 of the whole key under the pepper named by pepper_id; the key itself is never stored.
  key_hash        bytea NOT NULL UNIQUE,
  pepper_id       text NOT NULL,
  display_prefix  text NOT NULL,
  residency       text NOT NULL CHECK (residency IN ('uk', 'eu')),
  privacy_mode    text NOT NULL CHECK (privacy_mode IN ('off', 'flag', 'redact', 'tokenise')),
  allowed_models  text[],
  allowed_ips     text[],
  expires_at      timestamptz,
  created_at      timestamptz NOT NULL DEFAULT now(),
  last_used_at    timestamptz,
  revoked_at      timestamptz
);
CREATE INDEX api_keys_account_id ON api_keys (account_id);

-- One row per request that reached the router. Holds counts and ids only, never content.
CREATE TABLE usage_events (
  event_id                     text PRIMARY KEY,
  account_id                   text NOT NULL,
  key_id                       text NOT NULL,
  environment                  text NOT NULL,
  model                        text NOT NULL,
  pool_id                      text NOT NULL,
  region                       text NOT NULL,
  input_tokens                 bigint NOT NULL,
  output_tokens                bigint NOT NULL,
  cache_read_input_tokens      bigint NOT NULL,
  cache_creation_input_tokens  bigint NOT NULL,
  billable_tokens              bigint NOT NULL,
  outcome                      text NOT NULL,
  error_type                   text,
  streamed                     boolean NOT NULL,
  started_at                   timestamptz NOT NULL,
  ended_at                     timestamptz NOT NULL,
  period_start                 date NOT NULL,
  recorded_at                  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX usage_events_account_period ON usage_events (account_id, period_start);

-- Per account, key, model, environment and billing period; written in the same transaction as the events.
CREATE TABLE usage_aggregates (
  account_id                   text NOT NULL,
  key_id                       text NOT NULL,
  model                        text NOT NULL,
  environment                  text NOT NULL,
  period_start                 date NOT NULL,
  requests                     bigint NOT NULL,
  input_tokens                 bigint NOT NULL,
  output_tokens                bigint NOT NULL,
  cache_read_input_tokens      bigint NOT NULL,
  cache_creation_input_tokens  bigint NOT NULL,
  billable_tokens              bigint NOT NULL,
  PRIMARY KEY (account_id, period_start, environment, model, key_id)
);

-- Kafka offsets consumed, committed with the rows they produced.
CREATE TABLE consumer_offsets (
  consumer_group  text NOT NULL,
  topic           text NOT NULL,
  partition       integer NOT NULL,
  next_offset     bigint NOT NULL,
  PRIMARY KEY (consumer_group, topic, partition)
);

-- Down Migration

DROP TABLE consumer_offsets;
DROP TABLE usage_aggregates;
DROP TABLE usage_events;
DROP TABLE api_keys;
DROP TABLE accounts;
