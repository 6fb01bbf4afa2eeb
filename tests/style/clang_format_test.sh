#!/usr/bin/env bash
# Every C++ source of the project is formatted as .clang-format says (clang-format from Debian's
# package, which scripts/setup.sh installs). Prints the files that are not, and how to fix them.
set -euo pipefail
root="${1:?usage: clang_format_test.sh SOURCE_DIR}"
cd "$root"
command -v clang-format >/dev/null || { echo "clang-format not found (make setup installs it)" >&2; exit 1; }
mapfile -t files < <(find src tests bench fuzz -name '*.cc' -o -name '*.h' | sort)
((${#files[@]} > 100)) || { echo "found only ${#files[@]} sources under $root" >&2; exit 1; }
bad=()
for f in "${files[@]}"; do
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]})); then
  printf 'not formatted: %s\n' "${bad[@]}"
  echo "fix with: clang-format -i ${bad[*]}"
  exit 1
fi
echo "${#files[@]} files formatted ($(clang-format --version))"
