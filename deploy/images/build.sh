#!/usr/bin/env bash
# `make images`: builds the six services' images with podman (daemonless, from Debian), from the one
# Dockerfile (deploy/images/Dockerfile: the service is a build argument and a target of the same name) with
# the repository as context, and prints each image's size.
#
# The Node base image is pulled, or built locally when no registry answers (deploy/images/base-image.sh).
# podman keeps every layer: a second run with unchanged sources reuses them and takes seconds.
#
#   deploy/images/build.sh [service...]   default: all six
#
# Environment (defaults):
#   IMAGE_TAG      the chart's appVersion
#   IMAGE_PREFIX   inference-gateway/   (images are named <prefix><service>:<tag>)
#   NODE_EXTRA_CA_CERTS   a PEM bundle of extra CAs for the package downloads (none)
set -euo pipefail
cd "$(dirname "$0")/../.."

log() { printf 'images: %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}
# shellcheck source=deploy/images/podman.sh
source deploy/images/podman.sh

readonly ALL_SERVICES=(auth policy quota router metering ingress)
version="$(sed -n "s/^appVersion: *['\"]\{0,1\}\([^'\"]*\)['\"]\{0,1\}$/\1/p" charts/inference-gateway/Chart.yaml)"
[[ -n $version ]] || die "no appVersion in charts/inference-gateway/Chart.yaml"
readonly TAG="${IMAGE_TAG:-$version}"
readonly PREFIX="${IMAGE_PREFIX:-inference-gateway/}"
services=("$@")
((${#services[@]})) || services=("${ALL_SERVICES[@]}")

# A registry behind a TLS-inspecting proxy needs the build machine's extra CA certificates in the steps
# that download packages: given to them as a build secret, never stored in a layer.
secret=()
if [[ -n ${NODE_EXTRA_CA_CERTS:-} && -f $NODE_EXTRA_CA_CERTS ]]; then
  secret=(--secret "id=extra-ca,src=$NODE_EXTRA_CA_CERTS")
fi

started=$SECONDS
# The six images are built from one snapshot of the sources (the files git tracks or would track), so
# that they hold the same code even if the tree changes during the build, and so that the compile layer,
# which does not depend on the service, is made once and reused by the other five.
context="$(mktemp -d "${TMPDIR:-/tmp}/gw-image-context.XXXXXX")"
build_log="$(mktemp "${TMPDIR:-/tmp}/gw-image-build.XXXXXX")"
trap 'rm -rf "$context" "$build_log"' EXIT
git ls-files -z --cached --others --exclude-standard |
  xargs -0 -r sh -c 'for f in "$@"; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
  tar --null -T - -c | tar -x -C "$context"
base="$(bash deploy/images/base-image.sh)"
log "base image $base ready after $((SECONDS - started)) s"

for service in "${services[@]}"; do
  [[ -f services/$service/package.json ]] || die "no service $service (services/$service/package.json)"
  image_started=$SECONDS
  # Host network: the build fetches packages from the npm registry; no bridge or iptables rule is made.
  if ! podman build --network=host --layers \
    --ulimit nofile=4096:4096 --ulimit nproc=4096:4096 \
    --build-arg "NODE_IMAGE=$base" --build-arg "VERSION=$version" "${secret[@]}" \
    --build-arg "SERVICE=$service" --target "$service" \
    -f "$context/deploy/images/Dockerfile" -t "$PREFIX$service:$TAG" "$context" >"$build_log" 2>&1; then
    tail -40 "$build_log" >&2
    die "podman build of $service failed"
  fi
  log "$PREFIX$service:$TAG built in $((SECONDS - image_started)) s"
done

printf '%-40s %10s\n' IMAGE SIZE
for service in "${services[@]}"; do
  size="$(podman image inspect --format '{{.Size}}' "$PREFIX$service:$TAG")"
  printf '%-40s %7s MB\n' "$PREFIX$service:$TAG" "$((size / 1000000))"
done
# Every rebuild after a source change leaves the previous compile layers untagged; those older than a day
# go, so that the cache of recent builds stays and the disk does not fill run after run.
podman image prune --force --filter until=24h >/dev/null || log "warning: podman image prune failed"
log "done in $((SECONDS - started)) s"
