#!/usr/bin/env bash
# promtool, the Prometheus rule checker, from Debian's prometheus package (unpacked, nothing installed or
# started), cached outside the repository by version.
#   deploy/observability/promtool.sh install   unpack it unless cached (seconds)
#   deploy/observability/promtool.sh path      print the cached binary's path; exit 1 when it is not there
#
# Environment (defaults):
#   GW_TOOLS_DIR   $HOME/.cache/gateway-tools   (the cache of every tool the scripts install)
set -euo pipefail

PROMETHEUS_DEB_VERSION=2.42.0+ds-5+deb12u1
cache_dir="${GW_TOOLS_DIR:-$HOME/.cache/gateway-tools}"
binary="$cache_dir/promtool-$PROMETHEUS_DEB_VERSION"

case "${1:-}" in
  path)
    [[ -x "$binary" ]] || exit 1
    echo "$binary"
    ;;
  install)
    if [[ ! -x "$binary" ]]; then
      work_dir="$(mktemp -d)"
      trap 'rm -rf "$work_dir"' EXIT
      chmod 777 "$work_dir" # apt's download user writes there
      (cd "$work_dir" && apt-get download "prometheus=$PROMETHEUS_DEB_VERSION" >/dev/null 2>&1) || {
        # The package lists may be stale on a fresh machine.
        apt-get update -qq >/dev/null
        (cd "$work_dir" && apt-get download "prometheus=$PROMETHEUS_DEB_VERSION" >/dev/null)
      }
      dpkg -x "$work_dir"/prometheus_*.deb "$work_dir/unpacked"
      mkdir -p "$cache_dir"
      mv "$work_dir/unpacked/usr/bin/promtool" "$binary"
    fi
    echo "$binary"
    ;;
  *)
    echo "usage: $0 install|path" >&2
    exit 2
    ;;
esac
