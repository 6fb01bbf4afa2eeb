#!/usr/bin/env bash
# `make tsan` / `make asan`: tidepool built with a sanitizer in a build directory of its own
# (build-tsan/, build-asan/), then every unit test and the live tests of the threaded code: the
# API client, informers and leader election against testenv's real API server, and `tidepool run`
# (controller, informers, leader election, the ops server) in the kwok e2e scenarios.
# Usage: scripts/sanitize.sh thread|address [extra ctest args]
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:?usage: scripts/sanitize.sh thread|address}
shift
werror=ON
case "$kind" in
  thread)
    dir=build-tsan
    flags="-fsanitize=thread -fno-omit-frame-pointer"
    export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 ${TSAN_OPTIONS:-}"
    ;;
  address)
    dir=build-asan
    flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
    # GCC 12 warns maybe-uninitialized inside <regex>/<functional> under ASan+UBSan, falsely:
    # warnings stay warnings in this build.
    werror=OFF
    export ASAN_OPTIONS="detect_leaks=1 abort_on_error=1 ${ASAN_OPTIONS:-}"
    export UBSAN_OPTIONS="print_stacktrace=1 halt_on_error=1 ${UBSAN_OPTIONS:-}"
    ;;
  *) echo "sanitize.sh: unknown sanitizer '$kind' (thread or address)" >&2; exit 2 ;;
esac
launcher=()
if command -v ccache >/dev/null 2>&1; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" -DTIDEPOOL_WERROR="$werror" >/dev/null
cmake --build "$dir" -j "$(nproc)"
# Unit tests, the kube client against the real API server, and the controller in the core e2e
# scenarios. Left out: fuzz replays (their own ASan build in build-fuzz/), the benchmark smoke
# runs, the Azure e2e, the long fault loops (afterwards: ctest --test-dir DIR -R e2e.api_faults)
# and the soak-labelled tests (e2e.api_overload).
ctest --test-dir "$dir" --output-on-failure -j "$(nproc)" -LE soak \
  -E '^(fuzz\.|bench\.|e2e\.Azure\.|e2e\.kill_loop|e2e\.api_faults)' "$@"
