# The two commands of the README: `make up` runs the gateway locally, `make test` checks everything.
SHELL := /bin/bash
.DEFAULT_GOAL := help
PNPM_VERSION := 10.34.8
export PATH := $(CURDIR)/node_modules/.bin:$(PATH)

.PHONY: help deps build gen lint lint-types lint-style up down test test-unit test-integration test-node fuzz soak bench bench-quota bench-pii bench-gateway bench-bedrock images kind clean

help:
	@echo "make up     run the gateway locally (PostgreSQL, Redis, Kafka, six services, simulated upstream)"
	@echo "make down   stop what make up started"
	@echo "make test   lint, unit, integration and end-to-end tests"
	@echo "make fuzz   a longer run of the HTTP fuzz suite (FUZZ_RUNS, FUZZ_SEED); not part of make test"
	@echo "make soak   SOAK_MINUTES (30) of mixed traffic and faults, then exact usage, no lease, flat memory; not part of make test"
	@echo "make bench  benchmarks (bench/README.md); not part of make test"
	@echo "make images the six container images, with podman (docs/deployment.md)"
	@echo "make kind   a kind cluster with the images and the chart, for users with Docker (docs/deployment.md)"

deps: node_modules/.installed

node_modules/.installed: package.json pnpm-lock.yaml pnpm-workspace.yaml $(wildcard */*/package.json) deploy/local/package.json dashboard/package.json test/package.json
	@command -v pnpm >/dev/null || npm install -g pnpm@$(PNPM_VERSION)
	pnpm install --frozen-lockfile
	@touch $@

# Generated code and the dashboard's bundle are remade only when what they are made from changed, so that a
# `make up` or `make lint` after a build does not spend half a minute making them again.
gen: packages/proto/src/gen/.generated

packages/proto/src/gen/.generated: node_modules/.installed buf.yaml buf.gen.yaml $(shell find proto -name '*.proto')
	pnpm exec buf lint
	pnpm exec buf generate
	@touch $@

DASHBOARD_INPUTS := $(shell find dashboard/src packages/*/src -type f -not -path '*/gen/*') \
	dashboard/build.mjs dashboard/tsconfig.json dashboard/package.json packages/proto/src/gen/.generated

dashboard/dist/.built: $(DASHBOARD_INPUTS)
	pnpm --filter @gw/dashboard run build
	@touch $@

build: gen
	pnpm exec tsc -b
	@$(MAKE) --no-print-directory dashboard/dist/.built

# The type checks and the style checks run side by side: each is mostly one core's work.
lint: build
	@$(MAKE) --no-print-directory -j2 lint-types lint-style

lint-types:
	pnpm exec tsc -p tsconfig.tests.json
	pnpm exec tsc -p dashboard/test/tsconfig.json

lint-style:
	pnpm exec eslint .
	pnpm exec prettier --check .

up: build
	node deploy/local/dist/up.js

down:
	@if [ -f deploy/local/dist/down.js ]; then node deploy/local/dist/down.js; else echo "nothing to stop"; fi

test-unit: build
	pnpm exec jest --config jest.unit.config.js

# test/run.sh runs `make lint` as its first stage, so that its time is printed with the others'.
test: deps
	bash test/run.sh

# The HTTP fuzz suite of `make test` (test/fuzz) with more requests: FUZZ_RUNS (50,000 unless set), FUZZ_SEED
# to replay a run. It needs the tests' infrastructure and stack, started as `make test` starts them.
fuzz: build
	bash test/fuzz/run.sh

# Not part of `make test`: SOAK_MINUTES (30) of mixed traffic with a fault every few minutes against a stack of
# real processes of its own (.local/soak, ports 24000-24432), then exact usage, no lease held and flat memory
# are checked and printed (test/soak; docs/performance.md).
soak: build
	bash deploy/local/infra.sh tools
	nice -n 10 pnpm exec jest --config jest.soak.config.js --runInBand

# Benchmarks are not tests: `make test` never runs them. They use the PostgreSQL and Redis on loopback
# named by DATABASE_URL and REDIS_URL, read from the infra.env of the tests' (or `make up`'s)
# infrastructure when not set; see bench/README.md.
bench: bench-quota bench-pii bench-gateway bench-bedrock

bench-quota: build
	pnpm exec tsc -b bench/quota
	@if [ -z "$${DATABASE_URL:-}" ]; then \
	  for env in .local/test-infra/infra.env .local/infra.env; do \
	    if [ -f "$$env" ]; then set -a; source "$$env"; set +a; break; fi; \
	  done; \
	fi; \
	node bench/quota/dist/main.js

# In process, no infrastructure: the privacy modes' detection and transformation library (@gw/pii).
bench-pii: deps
	pnpm exec tsc -b packages/pii/bench
	node packages/pii/bench/dist/main.js

# The whole gateway on loopback (docs/performance.md): the six services as processes against real
# PostgreSQL, Redis and Kafka (DATABASE_URL, REDIS_URL and KAFKA_BROKERS, else started or reused through
# infra.sh), a mock upstream and a load generator. BENCH_PROFILE=1 also profiles every service.
bench-gateway: build
	pnpm exec tsc -b bench/gateway
	node bench/gateway/dist/main.js

# In process, no infrastructure: what a Bedrock pool costs the router per request (the body edit, the
# SigV4 signature, relaying a streamed answer from the AWS event stream against relaying it from SSE).
bench-bedrock: build
	pnpm exec tsc -b services/router/bench
	node services/router/bench/dist/bench/bedrock.js

# The chart's own pods on a real node (kubelet, containerd, kube-proxy, CoreDNS built or installed once and cached)
# joined to a loopback control plane, from the images of `make images`; the node is taken down and the host restored
# at the end, whatever happened (test/deploy/node.test.ts, docs/deployment.md). The `node` stage of `make test`;
# this target runs it alone.
test-node: build
	bash deploy/install-helm.sh >/dev/null
	bash deploy/cluster/install-control-plane.sh >/dev/null
	bash deploy/node/install-node.sh >/dev/null
	bash deploy/images/build.sh
	pnpm exec jest --config jest.deploy.config.js --runInBand test/deploy/node.test.ts

# The services' container images, built with podman from deploy/images/Dockerfile; prints their sizes.
images:
	bash deploy/images/build.sh

# A local Kubernetes cluster in Docker (kind): the images loaded, dev PostgreSQL, Redis and Kafka in the
# cluster, the chart installed with its dev values. Needs Docker and kind; see docs/deployment.md.
kind: images
	bash deploy/kind/kind.sh

clean:
	rm -rf node_modules */*/node_modules */*/dist packages/pii/bench/dist packages/proto/src/gen
