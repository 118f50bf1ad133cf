#!/usr/bin/env bash
# Builds and installs what a real Kubernetes node on this host needs, for the real-pods cluster test
# (deploy/node/node.sh): the kubelet and kube-proxy from the k8s.io/kubernetes Go module (the version of the
# control plane, deploy/cluster/install-control-plane.sh), CoreDNS from its Go module, a pause (sandbox)
# image and a CoreDNS image made here (no registry), and containerd, runc, the CNI plugins, conntrack,
# iptables and nft from Debian. Nothing is pulled from a container registry.
#
# The binaries and image archives are cached outside the repository, keyed by version: a cold run builds
# them (the kubelet about 7 minutes on two busy cores, CoreDNS about 2), a warm run prints their directory
# at once. The Go build cache is the user's (shared with the control plane's build).
#
#   deploy/node/install-node.sh   prints the directory holding bin/ and images/
#
# Environment (defaults):
#   GW_TOOLS_DIR   $HOME/.cache/gateway-tools
set -euo pipefail
cd "$(dirname "$0")/../.."

readonly KUBERNETES_VERSION=1.33.13
readonly COREDNS_VERSION=1.12.4
readonly PAUSE_TAG=3.10
readonly TOOLS_DIR="${GW_TOOLS_DIR:-$HOME/.cache/gateway-tools}"
readonly OUT_DIR="$TOOLS_DIR/node-$KUBERNETES_VERSION-coredns-$COREDNS_VERSION"
readonly BINARIES=(kubelet kube-proxy coredns)
readonly IMAGES=(pause coredns)
readonly PACKAGES=(containerd runc containernetworking-plugins conntrack iptables nftables)

log() { printf 'install-node: %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

packages_missing() {
  local package
  for package in "${PACKAGES[@]}"; do
    dpkg-query -W -f '${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || return 0
  done
  return 1
}

complete() {
  local name
  for name in "${BINARIES[@]}"; do [[ -x $OUT_DIR/bin/$name ]] || return 1; done
  for name in "${IMAGES[@]}"; do [[ -s $OUT_DIR/images/$name.tar ]] || return 1; done
  ! packages_missing
}

if complete; then
  echo "$OUT_DIR"
  exit 0
fi

((EUID == 0)) || die "a node needs root (containerd, the kubelet, iptables)"
if packages_missing; then
  # No systemd runs here: the packages start nothing (policy-rc.d), and the node starts containerd itself.
  log "apt-get install ${PACKAGES[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || die "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" >&2 ||
    die "apt-get install ${PACKAGES[*]} failed"
fi
command -v go >/dev/null || die "go is needed to build the kubelet"
command -v gcc >/dev/null || die "gcc is needed to build the pause binary"
# shellcheck source=deploy/images/podman.sh
source deploy/images/podman.sh

mkdir -p "$TOOLS_DIR" "$OUT_DIR/bin" "$OUT_DIR/images"
work="$(mktemp -d "$TOOLS_DIR/node-build.XXXXXX")"
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

timed() {
  local name=$1 started=$SECONDS
  shift
  "$@"
  log "$name built in $((SECONDS - started)) s"
}

build_kubernetes() {
  # As install-control-plane.sh: the module's ./staging replaces pointed at the published modules.
  local module src
  module="$(cd "$work" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@v$KUBERNETES_VERSION" |
    sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
  [[ -d $module ]] || die "go mod download k8s.io/kubernetes@v$KUBERNETES_VERSION failed"
  src="$work/kubernetes"
  cp -r "$module" "$src"
  chmod -R u+w "$src"
  rm -rf "$src/vendor" "$src/go.work" "$src/go.work.sum"
  (
    cd "$src"
    local staging name version binary
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
    for binary in kubelet kube-proxy; do
      [[ -x $OUT_DIR/bin/$binary ]] && continue
      timed "$binary" go build -mod=mod -trimpath -o "$OUT_DIR/bin/$binary" \
        -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=v$KUBERNETES_VERSION" "./cmd/$binary" >&2 ||
        die "go build $binary failed"
    done
  )
}

build_coredns() {
  # Static: it runs alone in an image with nothing else in it.
  timed coredns env CGO_ENABLED=0 GOBIN="$OUT_DIR/bin" go install -trimpath -ldflags "-s -w" \
    "github.com/coredns/coredns@v$COREDNS_VERSION" >&2 || die "go install coredns failed"
}

# An image of one static binary, saved as an archive containerd imports (`ctr images import`).
image_of() {
  local name=$1 binary=$2 tag=$3
  shift 3
  local rootfs="$work/$name-rootfs"
  mkdir -p "$rootfs"
  cp "$binary" "$rootfs/"
  tar -C "$rootfs" -cf "$work/$name-rootfs.tar" .
  podman import "$@" "$work/$name-rootfs.tar" "localhost/gateway-node/$name:$tag" >/dev/null
  podman save --format docker-archive -o "$OUT_DIR/images/$name.tar" "localhost/gateway-node/$name:$tag" >/dev/null
  podman rmi "localhost/gateway-node/$name:$tag" >/dev/null
}

build_pause() {
  gcc -Os -static -o "$work/pause" deploy/node/pause.c || die "gcc pause.c failed"
  strip "$work/pause"
  image_of pause "$work/pause" "$PAUSE_TAG" --change 'ENTRYPOINT ["/pause"]' --change 'USER 65535:65535'
}

[[ -x $OUT_DIR/bin/kubelet && -x $OUT_DIR/bin/kube-proxy ]] || build_kubernetes
[[ -x $OUT_DIR/bin/coredns ]] || build_coredns
[[ -s $OUT_DIR/images/pause.tar ]] || build_pause
[[ -s $OUT_DIR/images/coredns.tar ]] ||
  image_of coredns "$OUT_DIR/bin/coredns" "$COREDNS_VERSION" --change 'ENTRYPOINT ["/coredns"]'
complete || die "the node is incomplete in $OUT_DIR"
echo "$OUT_DIR"
