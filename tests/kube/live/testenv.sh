#!/usr/bin/env bash
# The kube_testenv ctest fixture: `testenv.sh up DIR PATHFILE` starts testenv/ with state in DIR
# and writes the admin kubeconfig path to PATHFILE; `testenv.sh down DIR PATHFILE` stops it and
# removes both. DIR is this build tree's own, so it never touches another cluster. The API server
# runs without its watch cache: every watch is served by etcd, so a watch resumed below a
# compaction of etcd gets 410 Gone (with the cache, a compaction never reaches a client).
set -euo pipefail
action=$1 dir=$2 pathfile=$3
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
case "$action" in
  up)
    rm -f "$pathfile"
    # A cluster left behind by an interrupted run is stopped first.
    TESTENV_DIR="$dir" "$root/testenv/down" >&2 || true
    kubeconfig="$(TESTENV_DIR="$dir" TESTENV_SKIP_BUILD="${TESTENV_SKIP_BUILD:-1}" \
      "$root/testenv/up" --timeout 180s --apiserver-arg=--watch-cache=false | tail -n 1)"
    [[ -f "$kubeconfig" ]] || { echo "testenv.sh: up printed no kubeconfig" >&2; exit 1; }
    printf '%s\n' "$kubeconfig" > "$pathfile"
    echo "testenv up: $kubeconfig"
    ;;
  down)
    rm -f "$pathfile"
    TESTENV_DIR="$dir" "$root/testenv/down"
    ;;
  *)
    echo "usage: testenv.sh up|down DIR PATHFILE" >&2
    exit 2
    ;;
esac
