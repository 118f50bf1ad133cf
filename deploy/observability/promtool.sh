#!/usr/bin/env bash
# promtool, the Prometheus rule checker, built once per pinned version and cached outside the repository.
#   deploy/observability/promtool.sh install   build it with `go install` unless cached (several minutes cold)
#   deploy/observability/promtool.sh path      print the cached binary's path; exit 1 when it is not built
set -euo pipefail

PROMTOOL_VERSION=v0.316.0
cache_dir="${GATEWAY_TOOLS_CACHE:-$HOME/.cache/gateway-tools}"
binary="$cache_dir/promtool-$PROMTOOL_VERSION"

case "${1:-}" in
  path)
    [[ -x "$binary" ]] || exit 1
    echo "$binary"
    ;;
  install)
    if [[ ! -x "$binary" ]]; then
      command -v go >/dev/null || { echo "promtool: go is not installed" >&2; exit 1; }
      build_dir="$(mktemp -d)"
      trap 'rm -rf "$build_dir"' EXIT
      GOBIN="$build_dir" go install "github.com/prometheus/prometheus/cmd/promtool@$PROMTOOL_VERSION"
      mkdir -p "$cache_dir"
      mv "$build_dir/promtool" "$binary"
    fi
    echo "$binary"
    ;;
  *)
    echo "usage: $0 install|path" >&2
    exit 2
    ;;
esac
