-- Up Migration

-- What each request cost and how many of its tokens were beyond the allowance, written by metering
-- (services/metering/README.md has the formula). Cost in GBP, exact: never a float. Rows written
-- before this migration keep cost 0.
ALTER TABLE usage_events
  ADD COLUMN cost_gbp        numeric(24,10) NOT NULL DEFAULT 0,
  ADD COLUMN overage_tokens  bigint NOT NULL DEFAULT 0,
  ADD COLUMN plan            text;

ALTER TABLE usage_aggregates
  ADD COLUMN cost_gbp        numeric(24,10) NOT NULL DEFAULT 0,
  ADD COLUMN overage_tokens  bigint NOT NULL DEFAULT 0;

-- Down Migration

ALTER TABLE usage_aggregates
  DROP COLUMN cost_gbp,
  DROP COLUMN overage_tokens;
ALTER TABLE usage_events
  DROP COLUMN cost_gbp,
  DROP COLUMN overage_tokens,
  DROP COLUMN plan;
