#!/usr/bin/env bash
# `make kind`: the gateway on a local kind cluster, for users with Docker. Creates the cluster
# (deploy/kind/cluster.yaml) unless it exists, loads the images `make images` built with podman, starts
# dev PostgreSQL, Redis and Kafka in the cluster (deploy/kind/dev-infra.yaml), creates the Secret the chart
# names, and installs or upgrades the chart with values-dev.yaml and deploy/kind/values.yaml.
#
# Needs kind, kubectl and podman (the images are podman's) on PATH, and Docker or podman for kind's node
# (without docker, kind runs on podman: KIND_EXPERIMENTAL_PROVIDER=podman); helm comes from
# deploy/install-helm.sh. kind's node image is pulled from Docker Hub, which is why this is not part of
# `make test` on machines without it. The chart's topic Job creates the usage topic in the dev Kafka.
#
# Environment (defaults):
#   KIND_CLUSTER        inference-gateway
#   ANTHROPIC_API_KEY   the router's upstream credential (a placeholder: test keys still get stub answers)
#   IMAGE_TAG           the chart's appVersion
set -euo pipefail
cd "$(dirname "$0")/../.."

readonly CLUSTER="${KIND_CLUSTER:-inference-gateway}"
readonly NAMESPACE=gateway
readonly RELEASE=gw
readonly SERVICES=(auth policy quota router metering ingress)

log() { printf 'kind: %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

for tool in kind kubectl podman; do
  command -v "$tool" >/dev/null || die "$tool is needed (see docs/deployment.md)"
done
if ! command -v docker >/dev/null; then
  log "no docker: kind runs its node on podman"
  export KIND_EXPERIMENTAL_PROVIDER=podman
fi
helm="$(bash deploy/install-helm.sh)"
version="$(sed -n "s/^appVersion: *['\"]\{0,1\}\([^'\"]*\)['\"]\{0,1\}$/\1/p" charts/inference-gateway/Chart.yaml)"
readonly TAG="${IMAGE_TAG:-$version}"

if ! kind get clusters 2>/dev/null | grep -qx "$CLUSTER"; then
  log "creating kind cluster $CLUSTER"
  kind create cluster --name "$CLUSTER" --config deploy/kind/cluster.yaml
fi
context="kind-$CLUSTER"
kube() { kubectl --context "$context" "$@"; }

archive="$(mktemp -d)"
trap 'rm -rf "$archive"' EXIT
for service in "${SERVICES[@]}"; do
  image="inference-gateway/$service:$TAG"
  log "loading $image"
  podman --runtime runc save --format docker-archive -o "$archive/$service.tar" "localhost/$image"
  kind load image-archive --name "$CLUSTER" "$archive/$service.tar"
done

kube apply -f deploy/kind/dev-infra.yaml
for infra in postgres redis kafka; do
  kube -n gateway-dev-infra rollout status "deployment/$infra" --timeout=300s
done

kube create namespace "$NAMESPACE" --dry-run=client -o yaml | kube apply -f -
if ! kube -n "$NAMESPACE" get secret inference-gateway >/dev/null 2>&1; then
  log "creating the Secret inference-gateway (a new operator token and key pepper)"
  kube -n "$NAMESPACE" create secret generic inference-gateway \
    --from-literal=ADMIN_TOKEN="gw_operator_$(openssl rand -hex 24)" \
    --from-literal=KEY_PEPPERS="p1:$(openssl rand -base64 32 | tr '+/' '-_' | tr -d '=')" \
    --from-literal=DATABASE_URL=postgres://gateway:gateway-dev@postgres.gateway-dev-infra.svc.cluster.local:5432/gateway \
    --from-literal=REDIS_URL=redis://redis.gateway-dev-infra.svc.cluster.local:6379 \
    --from-literal=KAFKA_BROKERS=kafka.gateway-dev-infra.svc.cluster.local:9092 \
    --from-literal=ANTHROPIC_API_KEY="${ANTHROPIC_API_KEY:-unset}"
fi

"$helm" --kube-context "$context" upgrade --install "$RELEASE" charts/inference-gateway \
  --namespace "$NAMESPACE" \
  -f charts/inference-gateway/values-dev.yaml -f deploy/kind/values.yaml \
  --set-string "ingress.image.tag=$TAG,auth.image.tag=$TAG,policy.image.tag=$TAG,quota.image.tag=$TAG" \
  --set-string "router.image.tag=$TAG,metering.image.tag=$TAG,migrations.image.tag=$TAG" \
  --set-string "kafka.topicJob.image.tag=$TAG" \
  --wait --timeout 10m

cat >&2 <<EOT
kind: the gateway runs in kind cluster $CLUSTER, namespace $NAMESPACE.
  public API:  kubectl --context $context -n $NAMESPACE port-forward svc/$RELEASE-inference-gateway-ingress 8080:80
  admin API:   kubectl --context $context -n $NAMESPACE port-forward svc/$RELEASE-inference-gateway-ingress-admin 8081:8081
  operator token: kubectl --context $context -n $NAMESPACE get secret inference-gateway -o jsonpath='{.data.ADMIN_TOKEN}' | base64 -d
  remove it all:  kind delete cluster --name $CLUSTER
EOT
