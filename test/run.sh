#!/usr/bin/env bash
# `make test` after lint and build: unit tests, then integration and end-to-end tests against real
# PostgreSQL, Redis and Kafka (including the `make up`/`make down` test of the local stack).
set -euo pipefail
cd "$(dirname "$0")/.."

# The tests' infrastructure has its own state directory: servers already running on the default ports
# (for example from `make up`) are reused and left alone; servers started here are stopped at the end.
export GW_STATE_DIR="$PWD/.local/test-infra"
results="$PWD/.local/test-results"
export results
rm -rf "$results"
mkdir -p "$results"

summary() {
  node -e '
    const fs = require("fs");
    let passed = 0, failed = 0;
    // Only the JSON reports of the runs: tests also keep artifacts here (screenshots of the dashboard).
    for (const file of fs.readdirSync(process.argv[1]).filter((name) => name.endsWith(".json"))) {
      const run = JSON.parse(fs.readFileSync(`${process.argv[1]}/${file}`, "utf8"));
      passed += run.numPassedTests;
      failed += run.numFailedTests + run.numRuntimeErrorTestSuites;
    }
    console.log(`tests: ${passed} passed, ${failed} failed`);
  ' "$results"
}
finish() {
  local status=$?
  # A stage still running in the background when the run ends early.
  jobs -p | xargs -r kill 2>/dev/null || true
  bash deploy/local/infra.sh down >/dev/null || true
  summary || true
  exit "$status"
}
trap finish EXIT

# Runs one stage and says how long it took, so that a slow CI run shows where its time went.
stage() {
  local name=$1 started=$SECONDS status=0
  shift
  "$@" || status=$?
  if [ "$status" -eq 0 ]; then
    echo "stage: $name took $((SECONDS - started)) s"
  else
    echo "stage: $name failed (exit $status) after $((SECONDS - started)) s"
  fi
  return "$status"
}

# Build, type checks of the tests, ESLint and Prettier.
stage lint make --no-print-directory lint
stage tools bash deploy/local/infra.sh tools
# helm, kubeconform and the Kubernetes schemas for the chart's offline tests in the unit run (cached).
stage helm bash -c 'bash deploy/install-helm.sh >/dev/null'
stage kubeconform bash -c 'bash deploy/install-kubeconform.sh >/dev/null'
# promtool for the alert rules' tests, and the Prometheus server that scrapes the traced stack in the
# tracing test (Debian's package, unpacked and cached).
stage promtool bash -c 'bash deploy/observability/promtool.sh install >/dev/null &&
  bash deploy/observability/promtool.sh prometheus >/dev/null'
# The Kubernetes control plane of the cluster test: etcd from Debian, kube-apiserver, controller manager,
# scheduler and kwok built from their Go modules once (the cold build is the long part of a first run),
# then cached outside the repository.
stage control-plane bash -c 'bash deploy/cluster/install-control-plane.sh >/dev/null'
# The real node of the real-pods test: kubelet, kube-proxy and CoreDNS built from their Go modules once
# (cached beside the control plane), containerd, runc and the CNI plugins from Debian.
stage node-tools bash -c 'bash deploy/node/install-node.sh >/dev/null'
# Two stages that each keep about one core busy run side by side: the second in the background, its
# output held until both have ended so that the two do not interleave. Fails when either failed.
side_by_side() {
  local label=$1 side=$2 log="$results/$1.log" side_pid main_status=0 side_status=0
  shift 2
  bash -c "$(declare -f stage); $side" >"$log" 2>&1 &
  side_pid=$!
  "$@" || main_status=$?
  wait "$side_pid" || side_status=$?
  cat "$log"
  if [ "$main_status" -ne 0 ] || [ "$side_status" -ne 0 ]; then
    echo "stage: $label: the main part exited with $main_status, the side part with $side_status"
    return 1
  fi
}

# The unit run keeps one core busy (Jest's one worker on two cores); beside it: the chart installed,
# upgraded, rolled back and uninstalled on that control plane (fake kwok nodes), then the six images built
# (podman; the base image made locally when no registry answers; they print their sizes).
side_by_side unit-beside-cluster-and-images '
  set -euo pipefail
  stage cluster pnpm exec jest --config jest.deploy.config.js --runInBand test/deploy/cluster.test.ts \
    --json --outputFile="$results/cluster.json"
  stage images bash deploy/images/build.sh' \
  stage unit pnpm exec jest --config jest.unit.config.js --json --outputFile="$results/unit.json"
# The chart's own pods on a real node (kubelet, containerd, kube-proxy, CoreDNS) joined to a loopback control
# plane, from those images; the node is taken down and the host restored at the end, whatever happened.
stage node pnpm exec jest --config jest.deploy.config.js --runInBand test/deploy/node.test.ts \
  --json --outputFile="$results/node.json"
stage infrastructure bash deploy/local/infra.sh up
set -a
# shellcheck disable=SC1091
source "$GW_STATE_DIR/infra.env"
set +a
stage integration pnpm exec jest --config jest.integration.config.js --runInBand --json --outputFile="$results/integration.json"
# Chaos tests stop and start infrastructure, so they run on a stack of their own (.local/chaos, other ports),
# which they start and stop themselves; beside them the images run with podman against the tests'
# infrastructure, on ports of their own (22000+).
side_by_side chaos-beside-images-run '
  set -euo pipefail
  stage images-run pnpm exec jest --config jest.deploy.config.js --runInBand test/deploy/images-run.test.ts \
    --json --outputFile="$results/images-run.json"' \
  stage chaos pnpm exec jest --config jest.chaos.config.js --runInBand --json --outputFile="$results/chaos.json"
