#!/usr/bin/env bash
# Copies the shared libraries BINARY needs (as ldd resolves them) into ROOT, keeping their paths,
# except the C/C++ runtime that the distroless cc base image already has. Used by the Dockerfile's
# build stage; run it locally to see what the runtime image will get.
# Usage: collect-runtime-libs.sh BINARY ROOT
set -euo pipefail
binary=${1:?usage: $0 BINARY ROOT}
root=${2:?usage: $0 BINARY ROOT}

# Provided by gcr.io/distroless/cc-debian12 (glibc, libstdc++, libgcc_s, OpenSSL 3).
base='^(ld-linux.*|libc|libm|libdl|libpthread|librt|libresolv|libutil|libstdc\+\+|libgcc_s|libssl|libcrypto)\.so'

if ! out=$(ldd "$binary" 2>&1); then
  echo "collect-runtime-libs: ldd $binary failed: $out" >&2
  exit 1
fi
if grep -q 'not found' <<<"$out"; then
  echo "collect-runtime-libs: unresolved libraries:" >&2
  grep 'not found' <<<"$out" >&2
  exit 1
fi
count=0
while read -r path; do
  name=$(basename "$path")
  if [[ $name =~ $base ]]; then continue; fi
  mkdir -p "$root$(dirname "$path")"
  cp -L "$path" "$root$path"
  count=$((count + 1))
done < <(awk '$2 == "=>" && $3 ~ /^\// {print $3}' <<<"$out" | sort -u)
echo "collect-runtime-libs: $count libraries copied into $root"
