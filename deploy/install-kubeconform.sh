#!/usr/bin/env bash
# Installs kubeconform and the Kubernetes JSON schemas the chart tests validate rendered objects against,
# offline after the first run: kubeconform built by `go install`, the schemas of Kubernetes 1.37 taken from
# the PyPI package kubernetes-validate. Both are cached outside the repository, keyed by version.
#
#   deploy/install-kubeconform.sh   prints two lines: the kubeconform binary, the schema directory
#
# Environment (defaults):
#   GW_TOOLS_DIR   $HOME/.cache/gateway-tools
set -euo pipefail

readonly KUBECONFORM_VERSION=0.8.0
readonly SCHEMAS_PACKAGE_VERSION=1.37.0
readonly KUBERNETES_VERSION=1.37.0
readonly TOOLS_DIR="${GW_TOOLS_DIR:-$HOME/.cache/gateway-tools}"
readonly KUBECONFORM_DIR="$TOOLS_DIR/kubeconform-$KUBECONFORM_VERSION"
readonly SCHEMAS_DIR="$TOOLS_DIR/kubernetes-schemas-$KUBERNETES_VERSION"

log() { printf 'install-kubeconform: %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

mkdir -p "$TOOLS_DIR"
work="$(mktemp -d "$TOOLS_DIR/kubeconform-download.XXXXXX")"
trap 'rm -rf "$work"' EXIT

if [[ ! -x $KUBECONFORM_DIR/kubeconform ]]; then
  command -v go >/dev/null || die "go is needed to build kubeconform"
  log "go install kubeconform v$KUBECONFORM_VERSION"
  GOBIN="$work/bin" go install "github.com/yannh/kubeconform/cmd/kubeconform@v$KUBECONFORM_VERSION" >&2 ||
    die "go install kubeconform failed"
  rm -rf "$KUBECONFORM_DIR" && mv "$work/bin" "$KUBECONFORM_DIR"
fi

if [[ ! -f $SCHEMAS_DIR/_definitions.json ]]; then
  command -v pip3 >/dev/null || die "pip3 is needed to fetch kubernetes-validate"
  log "pip download kubernetes-validate==$SCHEMAS_PACKAGE_VERSION"
  pip3 download --quiet --no-deps --disable-pip-version-check \
    "kubernetes-validate==$SCHEMAS_PACKAGE_VERSION" -d "$work/wheel" >&2 || die "pip download failed"
  # The strict schemas of one version only. Their references name "/api/_definitions.json", a path the
  # package resolves itself; kubeconform needs them as absolute file URLs of the cached copy.
  python3 - "$work/wheel" "$work/schemas" "$KUBERNETES_VERSION" "$SCHEMAS_DIR" <<'PY'
import os, sys, zipfile
wheel_dir, out_dir, version, final_dir = sys.argv[1:5]
prefix = f"kubernetes_validate/kubernetes-json-schema/v{version}-local-strict/"
(wheel,) = [name for name in os.listdir(wheel_dir) if name.endswith(".whl")]
os.makedirs(out_dir)
with zipfile.ZipFile(os.path.join(wheel_dir, wheel)) as archive:
    for name in archive.namelist():
        if name.startswith(prefix) and name.endswith(".json"):
            text = archive.read(name).decode()
            text = text.replace('"$ref": "/api/_definitions.json', f'"$ref": "file://{final_dir}/_definitions.json')
            with open(os.path.join(out_dir, name[len(prefix):]), "w") as target:
                target.write(text)
PY
  [[ -f $work/schemas/_definitions.json ]] || die "kubernetes-validate holds no schemas for $KUBERNETES_VERSION"
  rm -rf "$SCHEMAS_DIR" && mv "$work/schemas" "$SCHEMAS_DIR"
fi

echo "$KUBECONFORM_DIR/kubeconform"
echo "$SCHEMAS_DIR"
