-- Up Migration

-- Admin keys expire like API keys and record their last use.
ALTER TABLE admin_keys
  ADD COLUMN expires_at    timestamptz,
  ADD COLUMN last_used_at  timestamptz;

-- A key made by rotation names the key it replaced.
ALTER TABLE api_keys ADD COLUMN replaces_key_id text REFERENCES api_keys (id);

-- Every change made through the admin API and every refused admin credential, as a hash chain: `entry` is
-- the canonical JSON that was hashed, `hash` = SHA-256(prev_hash || seq || "\n" || entry). account_id and
-- at repeat the entry's fields for filtering; verification checks that they agree with it.
CREATE TABLE admin_audit_log (
  seq         bigint PRIMARY KEY CHECK (seq > 0),
  at          timestamptz NOT NULL,
  account_id  text,
  entry       text NOT NULL,
  prev_hash   bytea NOT NULL,
  hash        bytea NOT NULL
);
CREATE INDEX admin_audit_log_account_seq ON admin_audit_log (account_id, seq);

-- Append-only for the gateway's own role: changing or deleting an entry needs its triggers disabled,
-- which the chain then shows.
CREATE FUNCTION admin_audit_log_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'admin_audit_log is append-only';
END
$$;
CREATE TRIGGER admin_audit_log_no_update_or_delete BEFORE UPDATE OR DELETE ON admin_audit_log
  FOR EACH ROW EXECUTE FUNCTION admin_audit_log_refuse_change();
CREATE TRIGGER admin_audit_log_no_truncate BEFORE TRUNCATE ON admin_audit_log
  FOR EACH STATEMENT EXECUTE FUNCTION admin_audit_log_refuse_change();

-- Down Migration

DROP TABLE admin_audit_log;
DROP FUNCTION admin_audit_log_refuse_change();
ALTER TABLE api_keys DROP COLUMN replaces_key_id;
ALTER TABLE admin_keys DROP COLUMN expires_at, DROP COLUMN last_used_at;
