#!/usr/bin/env bash
# The Helm chart installs the ProvisioningRequest CRD from its upstream module
# (deploy/helm/provisioningrequest-crd.sh), on a copy of the chart:
#   - without the copied CRD, rendering fails and names the script;
#   - with it, the rendered chart holds the CRD with the upstream spec, v1 served and stored,
#     kept on uninstall;
#   - provisioningRequestCRD.install=false leaves it out.
# Needs Go and the Helm module (deploy/helm/render) and the API module (downloaded when missing).
set -euo pipefail
ROOT=${1:?usage: helm_crd_test.sh SOURCE_DIR}
if ! command -v go >/dev/null 2>&1 && [[ -x /usr/local/go/bin/go ]]; then
  export PATH="$PATH:/usr/local/go/bin"
fi
export GOTOOLCHAIN=local GOFLAGS=-mod=readonly
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

(cd "$ROOT/deploy/helm/render" && go build -o "$WORK/render" .)
cp -R "$ROOT/deploy/helm/tidepool" "$WORK/chart"
rm -rf "$WORK/chart/files"
crd_file=autoscaling.x-k8s.io_provisioningrequests.yaml

if "$WORK/render" --chart "$WORK/chart" >"$WORK/none.yaml" 2>"$WORK/none.err"; then
  bad "rendered without the copied CRD"
elif ! grep -q "deploy/helm/provisioningrequest-crd.sh" "$WORK/none.err"; then
  bad "the error does not name the script: $(cat "$WORK/none.err")"
fi

"$ROOT/deploy/helm/provisioningrequest-crd.sh" --chart "$WORK/chart"
[[ -f $WORK/chart/files/$crd_file ]] || bad "the script wrote no files/$crd_file"
"$WORK/render" --chart "$WORK/chart" >"$WORK/on.yaml"
"$WORK/render" --chart "$WORK/chart" --set provisioningRequestCRD.install=false >"$WORK/off.yaml"

python3 - "$WORK/on.yaml" "$WORK/off.yaml" "$WORK/chart/files/$crd_file" <<'PY' || fails=$((fails + 1))
import sys, yaml
on, off, upstream = (list(d for d in yaml.safe_load_all(open(p)) if d) for p in sys.argv[1:])
def crds(docs):
    return [d for d in docs if d.get("kind") == "CustomResourceDefinition"]
errors = []
got = crds(on)
if len(got) != 1:
    errors.append(f"expected one CustomResourceDefinition in the rendered chart, got {len(got)}")
else:
    crd, src = got[0], upstream[0]
    if crd["metadata"]["name"] != "provisioningrequests.autoscaling.x-k8s.io":
        errors.append(f"CRD named {crd['metadata']['name']}")
    if crd["spec"] != src["spec"]:
        errors.append("the rendered CRD's spec differs from the upstream file's")
    if not any(v["name"] == "v1" and v["served"] and v["storage"] for v in crd["spec"]["versions"]):
        errors.append("autoscaling.x-k8s.io/v1 is not served and stored")
    if crd["metadata"].get("annotations", {}).get("helm.sh/resource-policy") != "keep":
        errors.append("the CRD is not kept on uninstall (helm.sh/resource-policy: keep)")
if crds(off):
    errors.append("provisioningRequestCRD.install=false still renders the CRD")
if len(off) != len(on) - 1:
    errors.append(f"install=false rendered {len(off)} objects, expected {len(on) - 1}")
for e in errors:
    print("FAIL:", e)
sys.exit(1 if errors else 0)
PY

if ((fails)); then
  echo "$fails failure(s)"
  exit 1
fi
echo "ok: the chart renders the upstream ProvisioningRequest CRD, and leaves it out when told"
