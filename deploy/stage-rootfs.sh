#!/usr/bin/env bash
# Stages the root filesystem of tidepool's FROM-scratch container image in ROOT: the binary at
# /usr/local/bin/tidepool, every shared library it links (as ldd resolves them, glibc and the
# dynamic loader included, at their Debian paths), the CA bundle for ARM's TLS, and passwd/group
# entries for the one user it runs as (nonroot, 65532). Nothing else: no shell, no package
# manager. Used by `make image` (deploy/build-image.sh) and the Dockerfile's build stage.
# Usage: stage-rootfs.sh BINARY ROOT
set -euo pipefail
binary=${1:?usage: $0 BINARY ROOT}
root=${2:?usage: $0 BINARY ROOT}

if ! out=$(ldd "$binary" 2>&1); then
  echo "stage-rootfs: ldd $binary failed: $out" >&2
  exit 1
fi
if grep -q 'not found' <<<"$out"; then
  echo "stage-rootfs: unresolved libraries:" >&2
  grep 'not found' <<<"$out" >&2
  exit 1
fi
# "libx.so => /path (addr)" lines, and the loader's "/lib64/ld-linux-x86-64.so.2 (addr)".
libs=$(awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' <<<"$out" | sort -u)
if ! grep -q '/ld-linux' <<<"$libs"; then
  echo "stage-rootfs: ldd $binary names no dynamic loader: $out" >&2
  exit 1
fi
for path in $libs; do
  install -D -m 0644 "$(readlink -f "$path")" "$root$path"
done
chmod 0755 "$root"/lib*/ld-linux* 2>/dev/null || true

# Without its debug info (a RelWithDebInfo build is ~150 MB with it, ~20 MB without).
mkdir -p "$root/usr/local/bin"
strip --strip-debug -o "$root/usr/local/bin/tidepool" "$binary"
chmod 0755 "$root/usr/local/bin/tidepool"
ca=/etc/ssl/certs/ca-certificates.crt
[[ -r $ca ]] || { echo "stage-rootfs: $ca missing (apt-get install ca-certificates)" >&2; exit 1; }
install -D -m 0644 "$ca" "$root$ca"
mkdir -p "$root/etc" "$root/tmp"
chmod 1777 "$root/tmp"
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/tmp:/sbin/nologin\n' \
  >"$root/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$root/etc/group"
printf 'hosts: files dns\n' >"$root/etc/nsswitch.conf"
echo "stage-rootfs: tidepool and $(wc -w <<<"$libs") libraries staged in $root"
