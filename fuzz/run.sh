#!/usr/bin/env bash
# `make fuzz`: builds the fuzz targets with clang 16 + libFuzzer + ASan/UBSan in $FUZZ_BUILD and
# runs each for $FUZZ_SECONDS seconds, starting from its seed corpus in fuzz/corpus/<name>/.
# New inputs go to $FUZZ_BUILD/corpus/<name>/ (never into the source tree); a crash, leak, hang
# or sanitizer report stops that target, leaves crash-*/leak-*/timeout-* in
# $FUZZ_BUILD/artifacts/<name>/ and makes the script exit 1 after the other targets ran.
#   FUZZ_SECONDS=60       per target
#   FUZZ_TARGETS="quantity duration state config kubeconfig watch_line"
#   FUZZ_BUILD=build-fuzz
#   FUZZ_JOBS=1           parallel fuzzing processes per target (libFuzzer -fork)
#   FUZZ_ARGS=            extra libFuzzer flags, e.g. "-max_len=4096"
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${FUZZ_SECONDS:-60}
targets=${FUZZ_TARGETS:-quantity duration state config kubeconfig watch_line}
build=${FUZZ_BUILD:-build-fuzz}
jobs=${FUZZ_JOBS:-1}
extra=${FUZZ_ARGS:-}

# clang 16 (not Debian's default clang 14, whose incomplete C++20 concepts keep libstdc++ 12's
# std::expected from compiling) and llvm-16 for the sanitizers' symbolizer; only `make fuzz`
# needs them, so they are installed here rather than by `make setup`.
if ! command -v clang++-16 >/dev/null; then
  echo "fuzz: installing clang-16 libclang-rt-16-dev llvm-16" >&2
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    clang-16 libclang-rt-16-dev llvm-16
fi
if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S . -B "$build" -G Ninja -C fuzz/libfuzzer.cmake >/dev/null
fi
cmake --build "$build" -j "$(nproc)" --target fuzz_targets

# Symbolized stacks in sanitizer reports.
if [[ -z ${ASAN_SYMBOLIZER_PATH:-} ]]; then
  for s in llvm-symbolizer-16 llvm-symbolizer; do
    if command -v "$s" >/dev/null; then
      export ASAN_SYMBOLIZER_PATH=$(command -v "$s")
      break
    fi
  done
fi
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

status=0
summary=()
for name in $targets; do
  bin=$build/fuzz/${name}_fuzz
  work=$build/corpus/$name
  artifacts=$build/artifacts/$name
  mkdir -p "$work" "$artifacts"
  dict=()
  [[ -f fuzz/dict/$name.dict ]] && dict=(-dict="fuzz/dict/$name.dict")
  fork=()
  ((jobs > 1)) && fork=(-fork="$jobs" -ignore_crashes=0)
  log=$build/artifacts/$name.log
  echo "fuzz: $name for ${seconds}s (log: $log)"
  # -timeout: one input taking over 10 s is a hang; -rss_limit_mb: 2 GB is a memory blowup.
  # shellcheck disable=SC2086
  if "$bin" "$work" fuzz/corpus/"$name" "${dict[@]}" "${fork[@]}" -max_total_time="$seconds" \
      -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts/" \
      $extra >"$log" 2>&1; then
    summary+=("$name: ok, $(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$log" |
      grep -o '[0-9]*$' || echo '?') executions")
  else
    status=1
    summary+=("$name: FAILED, see $log; reproduce with $bin $artifacts/<file>")
    grep -E -m5 'ERROR|invariant failed|check failed|Test unit written' "$log" >&2 || true
  fi
done
printf 'fuzz: %s\n' "${summary[@]}"
exit $status
