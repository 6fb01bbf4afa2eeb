#!/usr/bin/env bash
# Renders the Helm chart deploy/helm/tidepool into the plain manifests in deploy/manifests/ (for
# people without Helm), with the Helm Go module (deploy/helm/render; no helm binary is packaged).
#   deploy/render-manifests.sh          rewrite deploy/manifests/*.yaml
#   deploy/render-manifests.sh --check  compare instead; exit 1 and show the diff when stale
# The first run downloads and builds the Helm module (about two minutes); later runs take seconds.
# The ProvisioningRequest CRD is left out (provisioningRequestCRD.install=false): it is upstream's
# text, never committed here (docs/install.md says where to take it from).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
check=false
if [[ ${1:-} == --check ]]; then check=true; fi

if ! command -v go >/dev/null 2>&1 && [[ -x /usr/local/go/bin/go ]]; then
  export PATH="$PATH:/usr/local/go/bin"
fi
command -v go >/dev/null 2>&1 || { echo "render-manifests: go not found" >&2; exit 1; }
export GOTOOLCHAIN=local GOFLAGS=-mod=readonly

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$root/deploy/helm/render" && go build -o "$tmp/render" .)

chart=$root/deploy/helm/tidepool
# name: file, then the render arguments
variants=(
  "tidepool.yaml"
  "tidepool-kwok.yaml -f $chart/values-kwok.yaml"
)
status=0
for v in "${variants[@]}"; do
  read -r file args <<<"$v"
  {
    echo "# Generated from deploy/helm/tidepool by deploy/render-manifests.sh: do not edit."
    echo "# Release \"tidepool\" in namespace kube-system${args:+, values ${args##*/}}."
    # shellcheck disable=SC2086  # args is a list of flags
    "$tmp/render" --chart "$chart" --name tidepool --namespace kube-system $args \
      --set provisioningRequestCRD.install=false
  } >"$tmp/$file"
  if $check; then
    if ! diff -u "$root/deploy/manifests/$file" "$tmp/$file"; then
      echo "render-manifests: deploy/manifests/$file is stale; run deploy/render-manifests.sh" >&2
      status=1
    fi
  else
    mkdir -p "$root/deploy/manifests"
    cp "$tmp/$file" "$root/deploy/manifests/$file"
    echo "wrote deploy/manifests/$file"
  fi
done
if $check && ((status == 0)); then echo "ok: deploy/manifests/ matches a fresh render of the chart"; fi
exit $status
