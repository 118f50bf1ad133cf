#!/usr/bin/env bash
# Creates the virtual environment the Python SDK tests run in, once, and prints the path of its python.
# The environment lives outside the repository and is keyed by the hashed requirements, the pip that
# installs them and the interpreter, so a warm run only checks that it is there.
#
#   test/python/venv.sh   prints one line: the environment's python
#
# It needs python3 (3.11 or newer, which anthropic 2.x needs) and PyPI, nothing else: no system pip and no
# ensurepip (Debian ships python3 without them unless python3-venv is installed). The environment is made
# without pip, and a pinned pip wheel, checked against its SHA-256, installs the requirements with
# --require-hashes.
#
# Environment (defaults):
#   GW_TOOLS_DIR   $HOME/.cache/gateway-tools
#   GW_PYTHON      python3
set -euo pipefail

readonly PIP_VERSION=26.3
readonly PIP_URL="https://files.pythonhosted.org/packages/07/25/ee8c38ae72d66b844ce8eb9711ba905dba21ca1a8a0c960057c41cd23337/pip-$PIP_VERSION-py3-none-any.whl"
readonly PIP_SHA256=f3b60b20ffaadd4415ed7957212a38ac63fa4c5fa375bd0f4a797777940fad13
readonly HERE="$(cd "$(dirname "$0")" && pwd)"
readonly REQUIREMENTS="$HERE/requirements.txt"
readonly TOOLS_DIR="${GW_TOOLS_DIR:-$HOME/.cache/gateway-tools}"
readonly PYTHON="${GW_PYTHON:-python3}"

log() { printf 'python venv: %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

command -v "$PYTHON" >/dev/null || die "$PYTHON is needed for the Python SDK tests"
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || die "$PYTHON is older than 3.11"
interpreter="$("$PYTHON" -c 'import platform, sys; print(sys.version.split()[0], platform.machine(), sys.base_prefix)')"
key="$({
  cat "$REQUIREMENTS"
  echo "pip $PIP_VERSION"
  echo "$interpreter"
} | sha256sum | cut -c1-16)"
readonly VENV="$TOOLS_DIR/python-sdk-$key"

# An environment is whole once its marker exists: it is built beside it and renamed into place, so an
# interrupted build never passes for a finished one.
if [[ ! -f $VENV/.complete ]]; then
  mkdir -p "$TOOLS_DIR"
  work="$(mktemp -d "$TOOLS_DIR/python-sdk-build.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  log "creating the environment for $(basename "$VENV") ($interpreter)"
  "$PYTHON" -m venv --without-pip "$work/venv" >&2 || die "python3 -m venv failed"
  "$PYTHON" - "$PIP_URL" "$PIP_SHA256" "$work/pip-$PIP_VERSION-py3-none-any.whl" <<'PY' || die "pip $PIP_VERSION could not be fetched"
import hashlib, sys, urllib.request
url, sha256, target = sys.argv[1:4]
with urllib.request.urlopen(url, timeout=120) as response:
    data = response.read()
if hashlib.sha256(data).hexdigest() != sha256:
    sys.exit(f"{url}: SHA-256 mismatch")
with open(target, "wb") as out:
    out.write(data)
PY
  # pip runs from its wheel (a zip on the path) and installs into the environment it is run by; pip
  # itself stays out of the environment, which needs only the tests' packages.
  "$work/venv/bin/python" "$work/pip-$PIP_VERSION-py3-none-any.whl/pip" install --quiet --no-input \
    --disable-pip-version-check --no-cache-dir --require-hashes --no-deps --only-binary :all: \
    -r "$REQUIREMENTS" >&2 || die "pip install failed"
  touch "$work/venv/.complete"
  rm -rf "$VENV"
  mv "$work/venv" "$VENV"
fi

echo "$VENV/bin/python"
