#!/usr/bin/env bash
# `make fuzz`: the HTTP fuzz suite with more requests (FUZZ_RUNS, 50,000 unless set; FUZZ_SEED replays a run),
# on the tests' infrastructure, started as test/run.sh starts it: servers already running are reused and left
# alone, those started here are stopped at the end. The suite's global setup starts the stack.
set -euo pipefail
cd "$(dirname "$0")/../.."

export GW_STATE_DIR="$PWD/.local/test-infra"
trap 'bash deploy/local/infra.sh down >/dev/null || true' EXIT

bash deploy/local/infra.sh tools
bash deploy/local/infra.sh up
set -a
# shellcheck disable=SC1091
source "$GW_STATE_DIR/infra.env"
set +a
FUZZ_RUNS="${FUZZ_RUNS:-50000}" pnpm exec jest --config jest.integration.config.js --runInBand test/fuzz
