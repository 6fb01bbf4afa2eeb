#!/usr/bin/env bash
# Copies the ProvisioningRequest CRD (autoscaling.x-k8s.io) into the Helm chart from its upstream
# API module, k8s.io/autoscaler/cluster-autoscaler/apis (config/crd/), out of the Go module cache
# (the Go command downloads the module through the module proxy when it is not there yet). The
# version is the one testenv/kueue pins: the one Kueue requires and the e2e tests run against.
# The copy, the chart's files/ folder, is git-ignored: the schema is never committed here. Run it
# before `helm install` or `helm package` of the chart; the chart's provisioningRequestCRD.install
# value (default true) renders it, and rendering fails with a hint when the copy is missing.
#   deploy/helm/provisioningrequest-crd.sh [--chart DIR]   (default: deploy/helm/tidepool)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
chart=$root/deploy/helm/tidepool
if [[ ${1:-} == --chart && -n ${2:-} ]]; then
  chart=$2
elif (($#)); then
  echo "usage: deploy/helm/provisioningrequest-crd.sh [--chart DIR]" >&2
  exit 2
fi

if ! command -v go >/dev/null 2>&1 && [[ -x /usr/local/go/bin/go ]]; then
  export PATH="$PATH:/usr/local/go/bin"
fi
command -v go >/dev/null 2>&1 || { echo "provisioningrequest-crd: go not found" >&2; exit 1; }
export GOTOOLCHAIN=local GOFLAGS=-mod=readonly

module=k8s.io/autoscaler/cluster-autoscaler/apis
crd=autoscaling.x-k8s.io_provisioningrequests.yaml
pins=$root/testenv/kueue
(cd "$pins" && go mod download "$module")
read -r version dir < <(cd "$pins" && go list -m -f '{{.Version}} {{.Dir}}' "$module")
src=$dir/config/crd/$crd
[[ -f $src ]] || { echo "provisioningrequest-crd: $module@$version has no config/crd/$crd" >&2; exit 1; }

mkdir -p "$chart/files"
tmp=$(mktemp "$chart/files/.crd.XXXXXX")
{
  echo "# From $module@$version, config/crd/$crd;"
  echo "# copied by deploy/helm/provisioningrequest-crd.sh (not committed)."
  cat "$src"
} >"$tmp"
chmod 644 "$tmp"
mv "$tmp" "$chart/files/$crd"
echo "wrote ${chart#"$root"/}/files/$crd ($module@$version)"
