#!/usr/bin/env bash
# promtool, the Prometheus rule checker, and the Prometheus server itself, from Debian's prometheus package
# (unpacked, nothing installed or started), cached outside the repository by version.
#   deploy/observability/promtool.sh install      unpack promtool unless cached (seconds); print its path
#   deploy/observability/promtool.sh path         print the cached promtool's path; exit 1 when it is not there
#   deploy/observability/promtool.sh prometheus   unpack the server unless cached; print its path (the tracing
#                                                 test scrapes the services with it)
#
# Environment (defaults):
#   GW_TOOLS_DIR   $HOME/.cache/gateway-tools   (the cache of every tool the scripts install)
set -euo pipefail
PROMETHEUS_DEB_VERSION=2.42.0+ds-5+deb12u1
cache_dir="${GW_TOOLS_DIR:-$HOME/.cache/gateway-tools}"
binary="$cache_dir/promtool-$PROMETHEUS_DEB_VERSION"
server="$cache_dir/prometheus-$PROMETHEUS_DEB_VERSION"

# Unpacks one binary of the package (promtool or prometheus) to its cached path, unless it is there.
unpack() {
  local name=$1 target=$2
  [[ -x "$target" ]] && return 0
  local work_dir
  work_dir="$(mktemp -d)"
  # shellcheck disable=SC2064 # the directory is known now
  trap "rm -rf '$work_dir'" RETURN
  chmod 777 "$work_dir" # apt's download user writes there
  (cd "$work_dir" && apt-get download "prometheus=$PROMETHEUS_DEB_VERSION" >/dev/null 2>&1) || {
    # The package lists may be stale on a fresh machine.
    apt-get update -qq >/dev/null
    (cd "$work_dir" && apt-get download "prometheus=$PROMETHEUS_DEB_VERSION" >/dev/null)
  }
  dpkg -x "$work_dir"/prometheus_*.deb "$work_dir/unpacked"
  mkdir -p "$cache_dir"
  mv "$work_dir/unpacked/usr/bin/$name" "$target"
}

case "${1:-}" in
  path)
    [[ -x "$binary" ]] || exit 1
    echo "$binary"
    ;;
  install)
    unpack promtool "$binary"
    echo "$binary"
    ;;
  prometheus)
    unpack prometheus "$server"
    echo "$server"
    ;;
  *)
    echo "usage: $0 install|path|prometheus" >&2
    exit 2
    ;;
esac
