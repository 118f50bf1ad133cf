#!/usr/bin/env bash
# Installs kubeconform and the JSON schemas the chart tests validate rendered objects against, offline after
# the first run: kubeconform built by `go install`, the schemas of Kubernetes 1.37 taken from the PyPI package
# kubernetes-validate, and the schemas of the custom resources the chart renders (cert-manager, Prometheus
# Operator, Gateway API) converted from the CRDs inside their Go modules. All cached outside the repository,
# keyed by version.
#
#   deploy/install-kubeconform.sh   prints three lines: the kubeconform binary, the Kubernetes schema directory,
#                                   the custom resources' schema directory ({group}/{kind}_{version}.json)
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
# Go modules holding the CRDs, each with the directory of its CRD files (versions the Go proxy serves).
readonly CRD_MODULES=(
  "github.com/cert-manager/cert-manager@v1.18.2 deploy/crds"
  "github.com/prometheus-operator/prometheus-operator@v0.85.0 example/prometheus-operator-crd"
  "sigs.k8s.io/gateway-api@v1.3.0 config/crd/standard"
)
readonly CRD_SCHEMAS_DIR="$TOOLS_DIR/crd-schemas-$(printf '%s\n' "${CRD_MODULES[@]}" | sha256sum | cut -c1-12)"

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

if [[ ! -d $CRD_SCHEMAS_DIR ]]; then
  crd_dirs=()
  for entry in "${CRD_MODULES[@]}"; do
    read -r module subdir <<<"$entry"
    log "go mod download $module"
    dir="$(cd "$work" && go mod download -json "$module" | python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')" ||
      die "go mod download $module failed"
    crd_dirs+=("$dir/$subdir")
  done
  # Each served version's openAPIV3Schema as a strict JSON schema, as kubeconform's openapi2jsonschema.py
  # makes them: objects with properties refuse others, int-or-string takes both.
  python3 - "$work/crd-schemas" "${crd_dirs[@]}" <<'PY'
import json, os, sys, yaml
out_dir, crd_dirs = sys.argv[1], sys.argv[2:]
# The Prometheus Operator's CRDs hold a `=` scalar, which PyYAML reads as a "value" tag.
yaml.SafeLoader.add_constructor("tag:yaml.org,2002:value", lambda loader, node: loader.construct_scalar(node))

def strict(node):
    if isinstance(node, dict):
        if node.get("x-kubernetes-int-or-string"):
            node.pop("type", None)
            node["type"] = ["integer", "string"]
        if "properties" in node and "additionalProperties" not in node and not node.get("x-kubernetes-preserve-unknown-fields"):
            node["additionalProperties"] = False
        for value in node.values():
            strict(value)
    elif isinstance(node, list):
        for value in node:
            strict(value)

for crd_dir in crd_dirs:
    for name in sorted(os.listdir(crd_dir)):
        if not name.endswith(".yaml"):
            continue
        for crd in yaml.safe_load_all(open(os.path.join(crd_dir, name))):
            if not crd or crd.get("kind") != "CustomResourceDefinition":
                continue
            group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"].lower()
            os.makedirs(os.path.join(out_dir, group), exist_ok=True)
            for version in crd["spec"]["versions"]:
                schema = version["schema"]["openAPIV3Schema"]
                strict(schema)
                # metadata is checked by Kubernetes's own schema, not the CRD's.
                schema.get("properties", {})["metadata"] = {"type": "object"}
                with open(os.path.join(out_dir, group, f"{kind}_{version['name']}.json"), "w") as target:
                    json.dump(schema, target)
PY
  [[ -f $work/crd-schemas/monitoring.coreos.com/prometheusrule_v1.json ]] || die "no PrometheusRule schema was made"
  rm -rf "$CRD_SCHEMAS_DIR" && mv "$work/crd-schemas" "$CRD_SCHEMAS_DIR"
fi

echo "$KUBECONFORM_DIR/kubeconform"
echo "$SCHEMAS_DIR"
echo "$CRD_SCHEMAS_DIR"
