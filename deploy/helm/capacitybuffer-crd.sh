#!/usr/bin/env bash
# Copies the CapacityBuffer CRD (autoscaling.x-k8s.io/v1beta1) from the upstream module that
# ships it, sigs.k8s.io/karpenter (pkg/apis/crds/), out of the Go module cache; the Go command
# downloads the pinned version through the module proxy when it is not there yet. The copy is
# git-ignored: the schema is never committed here. Apply it where no other autoscaler has
# installed the CRD (docs/capacity-buffers.md):
#   deploy/helm/capacitybuffer-crd.sh [OUT]   (default: deploy/helm/tidepool/files/<crd>.yaml)
#   kubectl apply -f deploy/helm/tidepool/files/autoscaling.x-k8s.io_capacitybuffers.yaml
# Prints the path it wrote on its last line.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
module=sigs.k8s.io/karpenter
version=v1.14.0
crd=autoscaling.x-k8s.io_capacitybuffers.yaml
out=${1:-$root/deploy/helm/tidepool/files/$crd}
if (($# > 1)); then
  echo "usage: deploy/helm/capacitybuffer-crd.sh [OUT]" >&2
  exit 2
fi

if ! command -v go >/dev/null 2>&1 && [[ -x /usr/local/go/bin/go ]]; then
  export PATH="$PATH:/usr/local/go/bin"
fi
command -v go >/dev/null 2>&1 || { echo "capacitybuffer-crd: go not found" >&2; exit 1; }
export GOTOOLCHAIN=local GOFLAGS=

# Outside any module, so that only the pinned version is asked for.
dir=$(cd "${TMPDIR:-/tmp}" && go mod download -json "$module@$version" |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
src=$dir/pkg/apis/crds/$crd
[[ -n $dir && -f $src ]] || { echo "capacitybuffer-crd: $module@$version has no pkg/apis/crds/$crd" >&2; exit 1; }

mkdir -p "$(dirname "$out")"
tmp=$(mktemp "$(dirname "$out")/.crd.XXXXXX")
{
  echo "# From $module@$version, pkg/apis/crds/$crd;"
  echo "# copied by deploy/helm/capacitybuffer-crd.sh (not committed)."
  cat "$src"
} >"$tmp"
chmod 644 "$tmp"
mv "$tmp" "$out"
echo "$out"
