#!/usr/bin/env bash
# etcd compaction and defragmentation under a running tidepool (reliability issue): every informer
# relists, nothing is decided on a stale view, the next scale-up is correct.
#
# Usage: etcd_compaction_test.sh TIDEPOOL_BINARY. Environment: E2E_KEEP_LOGS (a folder to copy
# tidepool's log and the restart logs to). Needs bin/testenv with `up --apiserver-arg`
# (testenv/build).
#
# Its own testenv (in its own work directory, always torn down on exit), started with
# kube-apiserver --watch-cache=false: watches are then served straight from etcd, so a watch that
# resumes from a resourceVersion older than the compaction really gets 410 Expired. (With the
# watch cache, the apiserver answers from memory and a compaction of etcd alone never reaches a
# client.) A watch that is open when etcd compacts is not cut by it: only a watch started (or
# resumed) below the compacted revision fails. So the test:
#
#   1. runs `tidepool run` (kwok provider, leader election) and scales up for one GPU pod;
#      a PodDisruptionBudget and a DaemonSet (selecting nothing) give every informer an event.
#   2. control: kills and restarts kube-apiserver without compacting: every informer resumes
#      where it was (etcd still has the revisions it missed), none relists.
#   3. compacts (physical) and defragments etcd while tidepool's watches are open: they carry on.
#   4. cuts every watch deterministically: `testenv restart --kill --down 3s kube-apiserver`.
#      While the apiserver is down nothing else writes to etcd, so every informer's
#      resourceVersion is at most etcd's revision R. The test writes and deletes a marker key
#      (outside /registry) straight in etcd, so the revision is R+2, compacts at R+2 and
#      defragments. Each informer then resumes from rv <= R, i.e. from revision rv+1 < R+2: below
#      the compaction, every time (compacting at R or R+1 would not do: an informer whose last
#      event was at R resumes from R+1, which is kept).
#      Then it asserts from tidepool's log that every informer (pods, nodes,
#      poddisruptionbudgets, daemonsets) relisted on 410 Expired after the compaction.
#   5. creates a second GPU pod: exactly one new machine is requested, the pod runs on it, and
#      after a 10 s settle no extra node appears and no node is tainted ToBeDeleted.
# (A watch resumed exactly at the compacted revision is not expired; when the event there is a
# DELETE of its kind, a kube-apiserver without watch cache ends it with a 500 "PrevKv=nil" ERROR
# event instead, every time. tidepool's informers relist on that too, see the unit test
# FakeServerTest.InformerRelistsWhenAnErrorEventEndsItsWatch; this test does not set it up.)
# The etcd calls go through etcd's v3 JSON gateway (curl on TESTENV_ETCD, plain HTTP on loopback).
# Prints figures and PASS/FAIL; exits 0 iff it passed.
set -uo pipefail

TIDEPOOL=${1:?usage: etcd_compaction_test.sh TIDEPOOL_BINARY}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tidepool-compaction.XXXXXX")
source "$HERE/lib.sh"
NS=compaction
INFORMERS=(pods nodes poddisruptionbudgets daemonsets)
DOWN=3  # seconds kube-apiserver stays down
SETTLE=10
TP_PID=""
RESTART_PID=""

cleanup() {
  stop_tidepool
  if [[ -n $RESTART_PID ]]; then kill -TERM "$RESTART_PID" 2>/dev/null; wait "$RESTART_PID" 2>/dev/null; fi
  e2e_disconnect
  if [[ -n ${E2E_KEEP_LOGS:-} ]]; then mkdir -p "$E2E_KEEP_LOGS" && cp "$WORK"/*.log "$E2E_KEEP_LOGS"/; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
trap "exit 143" INT TERM


fail() {
  echo "FAIL etcd_compaction: $*"
  # What tidepool did, without the warnings that repeat while the API server is away.
  echo "---- tidepool.log (info and errors, last 60)"
  grep -v -E ' W (informer [a-z]+: watch failed|leader election: .*renewing|writing the status)' \
    "$WORK/tidepool.log" | tail -60
  echo "---- tidepool.log (last 10 lines)"; tail -10 "$WORK/tidepool.log"
  local f
  for f in "$WORK"/restart*.log; do [[ -s $f ]] && { echo "---- ${f##*/}"; cat "$f"; }; done
  k get nodes
  k -n "$NS" get pods -o wide
  exit 1
}

# ---- etcd, through its v3 JSON gateway (keys and values base64) ---------------------------------
etcd() { curl -s --max-time 60 -X POST "$TESTENV_ETCD/v3/$1" -d "$2"; }
etcd_revision() { etcd kv/range '{"key":"AA=="}' | jq -r '.header.revision // empty'; }
etcd_db_size() { etcd maintenance/status '{}' | jq -r '.dbSize // empty'; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
MARKER=$(printf 'tidepool-e2e/compaction-marker' | base64 -w0)
# compact_and_defrag: compacts etcd (physical) at its current revision, defragments it; sets
# COMPACTED (the revision) and DB_BEFORE / DB_AFTER (sizes in bytes).
compact_and_defrag() {
  local out
  COMPACTED=$(etcd_revision)
  [[ -n $COMPACTED ]] || fail "cannot read etcd's revision from $TESTENV_ETCD"
  DB_BEFORE=$(etcd_db_size)
  out=$(etcd kv/compaction "{\"revision\":\"$COMPACTED\",\"physical\":true}")
  jq -e '.header' >/dev/null 2>&1 <<<"$out" || fail "compaction at $COMPACTED failed: $out"
  out=$(etcd maintenance/defragment '{}')
  if [[ -z $out ]] || jq -e '.error // .code' >/dev/null 2>&1 <<<"$out"; then
    fail "defragment failed: $out"
  fi
  DB_AFTER=$(etcd_db_size)
}

# ---- cluster and tidepool ----------------------------------------------------------------------
unset E2E_TESTENV_DIR  # always a testenv of its own: the fixture's has the watch cache on
log "bringing up a testenv with kube-apiserver --watch-cache=false"
e2e_connect --apiserver-arg=--watch-cache=false
# shellcheck source=/dev/null
source "$TESTENV_DIR/env"  # TESTENV_ETCD
grep -q -- '--watch-cache=false' "$TESTENV_DIR/launch/kube-apiserver.json" ||
  fail "kube-apiserver was not started with --watch-cache=false"
[[ -n $(etcd_revision) ]] || fail "etcd's JSON gateway does not answer on $TESTENV_ETCD"

k create namespace "$NS" >/dev/null || fail "cannot create namespace $NS"
wait_until 30 k -n "$NS" get serviceaccount default || fail "namespace $NS has no default ServiceAccount"

CONFIG=$WORK/config.yaml
cp "$HERE/config.yaml" "$CONFIG"
"$TIDEPOOL" run --config "$CONFIG" --kubeconfig "$KUBECONFIG" --namespace "$NS" \
  --identity compaction --lease-duration 15s --renew-deadline 10s --retry-period 1s --listen "" \
  >>"$WORK/tidepool.log" 2>&1 &
TP_PID=$!

# relisted_since LINE INFORMER: the informer logged a relist after line LINE of tidepool's log.
relisted_since() { tail -n "+$(($1 + 1))" "$WORK/tidepool.log" | grep -q "informer $2: .*; relisting"; }
all_relisted_since() {
  local i
  for i in "${INFORMERS[@]}"; do relisted_since "$1" "$i" || return 1; done
}
relist_count_since() {
  local i n=0
  for i in "${INFORMERS[@]}"; do relisted_since "$1" "$i" && n=$((n + 1)); done
  echo "$n"
}
log_lines() { wc -l <"$WORK/tidepool.log"; }

# ---- 1. a first scale-up -------------------------------------------------------------------------
wait_until 30 grep -q "caches synced" "$WORK/tidepool.log" || fail "tidepool did not sync its caches"
apply_gpu_pod c-0
t0=$(now_ms)
wait_until 90 pod_running c-0 || fail "c-0 not Running within 90 s"
log "c-0 Running after $(secs $(($(now_ms) - t0))) s"
# An event for the PDB and DaemonSet informers too (neither selects anything that runs here).
cat <<EOF | k apply -f - >/dev/null || fail "cannot create the PDB and the DaemonSet"
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: compaction, namespace: $NS}
spec: {minAvailable: 0, selector: {matchLabels: {app: nothing-here}}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: compaction, namespace: $NS}
spec:
  selector: {matchLabels: {app: compaction-ds}}
  template:
    metadata: {labels: {app: compaction-ds}}
    spec:
      nodeSelector: {no-such-node: "true"}
      containers: [{name: c, image: busybox}]
EOF
sleep 2
BEFORE=$(requested)
NODE0=$(k -n "$NS" get pod c-0 -o jsonpath='{.spec.nodeName}')
((BEFORE == 1)) || fail "expected 1 machine for c-0, got $BEFORE: $(machines | tr '\n' ' ')"

# ---- 2. control: a restart alone makes nobody relist ----------------------------------------------
# Without the watch cache the restarted apiserver replays from etcd whatever each informer missed,
# so the relists in step 4 are the compaction's doing, not the restart's. (Before step 3: the PDB
# and DaemonSet informers have seen nothing since their last event, which step 3 compacts away.)
mark=$(log_lines)
"$ROOT/testenv/bin/testenv" restart --dir "$TESTENV_DIR" --kill --down 1s kube-apiserver \
  >>"$WORK/restart-control.log" 2>&1 || fail "testenv restart failed: $(tail -3 "$WORK/restart-control.log")"
sleep 3
control_relists=$(relist_count_since "$mark")
echo "control: kube-apiserver killed and restarted, no compaction; $control_relists of ${#INFORMERS[@]} informers relisted"
((control_relists == 0)) || fail "informers relisted after a restart without compaction"

# ---- 3. compaction while the watches are open ----------------------------------------------------
mark=$(log_lines)
compact_and_defrag
sleep 3
live_relists=$(relist_count_since "$mark")
echo "live: compacted at revision $COMPACTED and defragmented (db $(mib "$DB_BEFORE") -> $(mib "$DB_AFTER")) with tidepool's watches open; $live_relists of ${#INFORMERS[@]} informers relisted (open watches carry on)"

# ---- 4. cut every watch; compact and defragment while kube-apiserver is down -------------------
mark=$(log_lines)
"$ROOT/testenv/bin/testenv" restart --dir "$TESTENV_DIR" --kill --down "${DOWN}s" kube-apiserver \
  >>"$WORK/restart.log" 2>&1 &
RESTART_PID=$!
deadline=$((SECONDS + 40))
until grep -q "stopped; starting it again" "$WORK/restart.log"; do
  if ((SECONDS >= deadline)) || ! kill -0 "$RESTART_PID" 2>/dev/null; then
    fail "kube-apiserver was not stopped"
  fi
  sleep 0.1
done
down_at=$(now_ms)
R=$(etcd_revision)
etcd kv/put "{\"key\":\"$MARKER\",\"value\":\"$(printf x | base64)\"}" >/dev/null
etcd kv/deleterange "{\"key\":\"$MARKER\"}" >/dev/null
compact_and_defrag
compacted_at=$(now_ms)
((COMPACTED >= R + 2)) || fail "etcd revision $COMPACTED after the marker writes, expected at least $((R + 2))"
! grep -q "started kube-apiserver again" "$WORK/restart.log" ||
  fail "compacting took longer than the ${DOWN} s kube-apiserver was down ($(secs $((compacted_at - down_at))) s)"
log "kube-apiserver down: compacted at revision $COMPACTED (tidepool's watches are at <= $R)," \
  "db $(mib "$DB_BEFORE") -> $(mib "$DB_AFTER") in $(secs $((compacted_at - down_at))) s"
wait "$RESTART_PID" || { RESTART_PID=""; fail "testenv restart failed"; }
RESTART_PID=""
ready_at=$(now_ms)

wait_until 60 all_relisted_since "$mark" ||
  fail "not every informer relisted within 60 s of kube-apiserver being ready again (relisted: $(for i in "${INFORMERS[@]}"; do relisted_since "$mark" "$i" && printf '%s ' "$i"; done))"
# When each relisted, from the timestamps of tidepool's log (UTC, milliseconds).
figures=() last=0
for i in "${INFORMERS[@]}"; do
  line=$(tail -n "+$((mark + 1))" "$WORK/tidepool.log" | grep -m1 "informer $i: .*; relisting")
  grep -q -E '410|too old|Expired' <<<"$line" || fail "informer $i relisted, but not on 410 Expired: $line"
  at=$(date -u -d "${line%% *}" +%s%3N)
  figures+=("${figures:+, }$i $(secs $((at - compacted_at))) s")
  ((at > last)) && last=$at
done
echo "relisted ${#INFORMERS[@]} informers $(secs $((last - compacted_at))) s after the compaction ($(printf %s "${figures[@]}")); kube-apiserver ready again $(secs $((ready_at - compacted_at))) s after it"

# ---- 5. the next scale-up ----------------------------------------------------------------------
apply_gpu_pod c-1
t1=$(now_ms)
wait_until 30 more_requested_than "$BEFORE" || fail "no node requested for c-1 within 30 s"
took=$(($(now_ms) - t1))
wait_until 90 pod_running c-1 || fail "c-1 not Running within 90 s"
running=$(($(now_ms) - t1))
sleep "$SETTLE"
[[ $(requested) -eq $((BEFORE + 1)) ]] ||
  fail "expected $((BEFORE + 1)) machines in all, got $(requested): $(machines | tr '\n' ' ')"
[[ $(node_count) -eq $((BEFORE + 1)) ]] ||
  fail "expected $((BEFORE + 1)) nodes, got: $(k get nodes -o name | tr '\n' ' ')"
[[ $(tainted_nodes) -eq 0 ]] || fail "$(tainted_nodes) node(s) left tainted ToBeDeleted"
k get node "$NODE0" >/dev/null || fail "c-0's node $NODE0 was removed"
[[ $(k -n "$NS" get pod c-1 -o jsonpath='{.spec.nodeName}') != "$NODE0" ]] ||
  fail "c-1 runs on c-0's node $NODE0"
echo "next scale-up: node requested $(secs "$took") s after the pod, pod Running after $(secs "$running") s; $((BEFORE + 1)) machines, no extra node and none tainted after ${SETTLE} s"
grep -q "lost leadership" "$WORK/tidepool.log" && log "tidepool lost and regained the Lease during the restart"
echo "PASS etcd_compaction"
