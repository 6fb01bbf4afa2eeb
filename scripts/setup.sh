#!/usr/bin/env bash
# Installs every build and test dependency of tidepool from the package registries.
# Idempotent: when everything is present it only checks and returns within a second or two.
# --build-only: only what building the binary needs (the container image's build stage): no
# Chromium, no Go or kubectl checks.
set -euo pipefail

build_only=false
if [[ ${1:-} == --build-only ]]; then build_only=true; fi

# Debian packages (README: what the build and the tests need). kubectl comes with the machine image; it is checked, not installed.
packages=(
  build-essential cmake ninja-build pkg-config
  libfmt-dev libspdlog-dev libyaml-cpp-dev nlohmann-json3-dev libsimdjson-dev
  libcurl4-openssl-dev libcli11-dev libcpp-httplib-dev
  libgoogle-perftools-dev
  googletest libgtest-dev libgmock-dev libbenchmark-dev
  openssl
)
# Test-only: headless Chromium renders the status page (tests/ops/status_page_chromium_test.sh);
# clang-format checks the sources' format (tests/style/clang_format_test.sh); buildah, podman and
# runc build and run the container image without a daemon (`make image`, tests/ops/image_test.sh).
if ! $build_only; then
  packages+=(chromium clang-format buildah podman runc netavark ca-certificates)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if $build_only; then exit 0; fi

if ! command -v go >/dev/null 2>&1 && [[ -x /usr/local/go/bin/go ]]; then
  export PATH="$PATH:/usr/local/go/bin"
fi
command -v go >/dev/null 2>&1 || { echo "setup: a Go toolchain is needed to build testenv/ (go not found)" >&2; exit 1; }
command -v kubectl >/dev/null 2>&1 || echo "setup: note: kubectl not found; testenv tests will fail" >&2
exit 0
