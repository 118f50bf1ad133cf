#!/usr/bin/env bash
# `make test` after lint and build: unit tests, then integration and end-to-end tests against real
# PostgreSQL, Redis and Kafka, then the `make up`/`make down` test of the local stack.
set -euo pipefail
cd "$(dirname "$0")/.."

# The tests' infrastructure has its own state directory: servers already running on the default ports
# (for example from `make up`) are reused and left alone; servers started here are stopped at the end.
export GW_STATE_DIR="$PWD/.local/test-infra"
stop_infra() { bash deploy/local/infra.sh down >/dev/null || true; }
trap stop_infra EXIT

pnpm exec jest --config jest.unit.config.js
GW_PG_DATABASES="gateway" bash deploy/local/infra.sh up
set -a
# shellcheck disable=SC1091
source "$GW_STATE_DIR/infra.env"
set +a
pnpm exec jest --config jest.integration.config.js --runInBand
