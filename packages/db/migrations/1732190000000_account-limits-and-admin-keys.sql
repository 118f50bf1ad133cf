-- Up Migration

-- An account's overrides of its plan's limits; NULL takes the plan's value.
ALTER TABLE accounts
  ADD COLUMN limit_requests_per_minute   integer CHECK (limit_requests_per_minute > 0),
  ADD COLUMN limit_concurrency           integer CHECK (limit_concurrency > 0),
  ADD COLUMN limit_monthly_tokens        bigint  CHECK (limit_monthly_tokens > 0),
  ADD COLUMN limit_overage               boolean,
  ADD COLUMN limit_hard_ceiling_tokens   bigint  CHECK (limit_hard_ceiling_tokens > 0);

-- Keys for an account's own administrators (gw_admin_…), stored like API keys: hashes only.
CREATE TABLE admin_keys (
  id              text PRIMARY KEY,
  account_id      text NOT NULL REFERENCES accounts (id),
  name            text NOT NULL,
  key_hash        bytea NOT NULL UNIQUE,
  pepper_id       text NOT NULL,
  display_prefix  text NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  revoked_at      timestamptz
);
CREATE INDEX admin_keys_account_id ON admin_keys (account_id);

-- Down Migration

DROP TABLE admin_keys;
ALTER TABLE accounts
  DROP COLUMN limit_requests_per_minute,
  DROP COLUMN limit_concurrency,
  DROP COLUMN limit_monthly_tokens,
  DROP COLUMN limit_overage,
  DROP COLUMN limit_hard_ceiling_tokens;
