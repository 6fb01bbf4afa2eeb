#!/usr/bin/env bash
# Builds tidepool's container image without a Docker daemon: stages the root filesystem of a
# local build (deploy/stage-rootfs.sh) and builds deploy/Containerfile FROM scratch with buildah
# (chroot isolation, so it needs no daemon, no systemd and no registry).
#   deploy/build-image.sh BINARY [--tag IMAGE] [--root DIR]
# --tag: default localhost/tidepool:<version printed by `BINARY version`>.
# --root: a private image store and configuration in DIR (deploy/containers-conf.sh) instead of
#         the default containers storage; podman sees the image after the same `eval`.
# Prints the image name on stdout.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
binary=${1:?usage: $0 BINARY [--tag IMAGE] [--root DIR]}
shift
tag="" root=""
while (($#)); do
  case $1 in
    --tag) tag=${2:?--tag needs a value}; shift 2 ;;
    --root) root=${2:?--root needs a value}; shift 2 ;;
    *) echo "build-image: unknown option $1 (expected --tag IMAGE or --root DIR)" >&2; exit 2 ;;
  esac
done
[[ -x $binary ]] || { echo "build-image: $binary is not an executable (make build first)" >&2; exit 2; }
command -v buildah >/dev/null || { echo "build-image: buildah not found (scripts/setup.sh installs it)" >&2; exit 2; }
if [[ -z $tag ]]; then
  version=$("$binary" version | awk 'NR == 1 {print $2}')
  [[ -n $version ]] || { echo "build-image: '$binary version' printed no version" >&2; exit 1; }
  tag=localhost/tidepool:$version
fi

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
if [[ -n $root ]]; then eval "$("$here/containers-conf.sh" "$root")"; fi
"$here/stage-rootfs.sh" "$binary" "$ctx/rootfs" >&2
buildah bud --isolation chroot --layers=false \
  -q -f "$here/Containerfile" -t "$tag" "$ctx" >&2
echo "$tag"
