#!/usr/bin/env bash
# Installs Jaeger (the trace backend `make up` starts so its traces can be looked at), built from the Go
# module proxy and cached outside the repository, keyed by version. `go install` refuses the module (its
# go.mod has replace directives), so the module is downloaded, copied out of the read-only module cache
# and built there. The first build takes minutes; later runs only print the cached binary.
#
#   deploy/install-jaeger.sh          prints the path of the jaeger binary (building it if needed)
#   deploy/install-jaeger.sh --cached prints it only if it is already built; exits 1 otherwise
#
# Environment (defaults):
#   GW_TOOLS_DIR   $HOME/.cache/gateway-tools
set -euo pipefail

readonly JAEGER_VERSION=1.76.0
readonly TOOLS_DIR="${GW_TOOLS_DIR:-$HOME/.cache/gateway-tools}"
readonly JAEGER_DIR="$TOOLS_DIR/jaeger-$JAEGER_VERSION"

log() { printf 'install-jaeger: %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

if [[ -x $JAEGER_DIR/jaeger ]]; then
  echo "$JAEGER_DIR/jaeger"
  exit 0
fi
[[ ${1:-} == --cached ]] && exit 1

command -v go >/dev/null || die "go is needed to build jaeger"
mkdir -p "$TOOLS_DIR"
work="$(mktemp -d "$TOOLS_DIR/jaeger-build.XXXXXX")"
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

log "go mod download github.com/jaegertracing/jaeger@v$JAEGER_VERSION"
module_dir="$(cd "$work" && go mod download -json "github.com/jaegertracing/jaeger@v$JAEGER_VERSION" |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
[[ -d $module_dir ]] || die "go mod download gave no module directory"
cp -r "$module_dir" "$work/src"
chmod -R u+w "$work/src"
log "go build ./cmd/jaeger (several minutes the first time)"
(cd "$work/src" && go build -trimpath -o "$work/bin/jaeger" ./cmd/jaeger) >&2 || die "go build jaeger failed"
rm -rf "$JAEGER_DIR" && mv "$work/bin" "$JAEGER_DIR"
echo "$JAEGER_DIR/jaeger"
