#!/usr/bin/env bash
# Deterministic kills at every kill point (src/base/kill_point.h; the model is in
# docs/reliability.md, "Kill points"): `tidepool run` (kwok provider) is started with
# TIDEPOOL_KILL_AT=POINT, SIGKILLs itself there, and is restarted without it; the cluster must
# then converge with no duplicate machine, no orphaned taint and the workload running.
#
# Usage: kill_points_test.sh TIDEPOOL_BINARY [POINT...]   (no point: every scale-up and
# scale-down point). Environment: E2E_TESTENV_DIR (a running testenv, e.g. the ctest fixture's;
# otherwise a private one, torn down on exit), E2E_KEEP_LOGS (a folder to copy the logs to).
#
#   scale-up points: two 1-GPU pods arrive (one IncreasePool of 2 on pool gpu); the kill must
#     happen (the log says "kill point P reached", the process died of SIGKILL). After the
#     restart: both pods Running, exactly 2 machines ever requested (the kwok provider's state
#     and the Nodes, by name), 2 gpu nodes, nothing booting, no ToBeDeleted taint, and still so
#     after SETTLE seconds.
#   scale-down points: from 2 pods on 2 nodes, one pod goes; the kill happens while the empty
#     node is removed. After the restart: 1 gpu node, no ToBeDeleted taint, the pod Running on
#     the node it was on.
#   late-state-write: what no kill point can reach, a killed predecessor's state write that the
#     API server commits after tidepool read the state: with 1 node up, the test adds a booting
#     machine to the kwok provider's state ConfigMap behind tidepool's back, then 2 more pods
#     arrive. tidepool's next save conflicts; it must adopt that machine (its Node appears) and
#     ask for just 1 more: 3 nodes, 3 machines ever.
# Prints PASS/FAIL per point and a summary; exits 0 iff every point passed.
set -uo pipefail

TIDEPOOL=${1:?usage: kill_points_test.sh TIDEPOOL_BINARY [POINT...]}
shift
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tidepool-killpoints.XXXXXX")
source "$HERE/lib.sh"
NS=killpoints
SETTLE=8
# unneededTime (config below) is 15 s: kube-scheduler's backoff of a pod that was unschedulable
# for a while reaches 10 s, so a new node can stay empty that long before its pod binds.
TP_PID=""

cleanup() {
  stop_tidepool
  e2e_teardown
}
trap cleanup EXIT
trap "exit 143" INT TERM

e2e_connect

CONFIG=$WORK/config.yaml
cat >"$CONFIG" <<'EOF'
apiVersion: tidepool.dev/v1alpha1
kind: AutoscalerConfig
provider: {type: kwok, bootDelay: 3s}
scanInterval: 1s
scaleUp:
  expanders: [priority, least-waste]
  provisionTimeout: 60s
  batchIdle: 1s
  batchMax: 2s
  backoff: {initial: 60s, max: 120s}
scaleDown:
  enabled: true
  unneededTime: 15s
  delayAfterAdd: 1s
  maxPodEvictionTime: 6s
pools:
  - name: gpu
    min: 0
    max: 5
    template:
      capacity: {cpu: "6", memory: 56Gi, nvidia.com/gpu: "1", pods: "110"}
EOF

run_tidepool() {  # run_tidepool [KILL_POINT]
  TIDEPOOL_KILL_AT=${1:-} "$TIDEPOOL" run --config "$CONFIG" --kubeconfig "$KUBECONFIG" \
    --namespace "$NS" --identity killpoints --lease-duration 6s --renew-deadline 4s \
    --retry-period 1s --listen "" >>"$WORK/tidepool.log" 2>&1 &
  TP_PID=$!
}

reset_cluster() {
  stop_tidepool
  k delete namespace "$NS" --wait=true --timeout=90s >/dev/null
  k delete nodes --all --wait=false >/dev/null
  wait_until 60 bash -c "[[ \$(kubectl get nodes -o name 2>/dev/null | wc -l) -eq 0 ]]"
  k create namespace "$NS" >/dev/null
  wait_until 30 k -n "$NS" get serviceaccount default
  : >"$WORK/tidepool.log"
}

gpu_wave() {  # gpu_wave REPLICAS
  cat <<EOF | k apply -f - >/dev/null
apiVersion: apps/v1
kind: Deployment
metadata: {name: gpu-wave, namespace: $NS}
spec:
  replicas: $1
  selector: {matchLabels: {app: gpu-wave}}
  template:
    metadata: {labels: {app: gpu-wave}}
    spec:
      terminationGracePeriodSeconds: 0
      containers:
      - name: main
        image: busybox
        resources: {requests: {cpu: "1", memory: 1Gi, nvidia.com/gpu: "1"}, limits: {nvidia.com/gpu: "1"}}
EOF
}
running_pods() {
  k -n "$NS" get pods -l app=gpu-wave -o jsonpath='{range .items[*]}{.status.phase}{" "}{.metadata.deletionTimestamp}{"\n"}{end}' |
    grep -c '^Running $'
}
pods_running() { (($(running_pods) == $1)) && (($(k -n "$NS" get pods -o name | wc -l) == $1)); }
booting() { provider_machines | wc -l; }
# Every machine tidepool asked for in this scenario, by name: the ones booting or registered
# now, and every node its kwok provider logged as up (one removed again still counts).
ever_requested() {
  { machines; sed -n 's/.*kwok provider: node \([^ ]*\) of pool .* is up.*/\1/p' "$WORK/tidepool.log"; } |
    sort -u | wc -l
}
# settled WANT_NODES: the pods of gpu-wave all Running, WANT_NODES nodes, none booting or tainted.
settled() {
  (($(node_count) == $1 && $(booting) == 0 && $(tainted_nodes) == 0))
}

PASSED=()
FAILED=()
CURRENT=""
fail() {
  echo "FAIL $CURRENT: $*"
  FAILED+=("$CURRENT")
  echo "---- tidepool log (last 30 lines)"
  tail -30 "$WORK/tidepool.log"
  k get nodes -o wide
  k -n "$NS" get pods -o wide
  k -n "$NS" get configmap tidepool-kwok-provider -o jsonpath='{.data.state}'
  echo
  return 1
}
pass() { echo "PASS $CURRENT ($*)"; PASSED+=("$CURRENT"); }

# expect_killed POINT: the armed tidepool died at POINT by SIGKILL within 40 s.
expect_killed() {
  local point=$1 waited=0
  while kill -0 "$TP_PID" 2>/dev/null && ((waited < 80)); do sleep 0.5; waited=$((waited + 1)); done
  if kill -0 "$TP_PID" 2>/dev/null; then fail "tidepool did not reach kill point $point in 40 s"; return 1; fi
  wait "$TP_PID"
  local rc=$?
  TP_PID=""
  ((rc == 137)) || { fail "tidepool exited with $rc, not by SIGKILL (137)"; return 1; }
  grep -q "kill point $point reached" "$WORK/tidepool.log" ||
    { fail "the log does not say kill point $point was reached"; return 1; }
}

# converge WANT [RESTART]: (with RESTART, tidepool started again first) waits until WANT pods of
# gpu-wave run on WANT nodes, none booting or tainted; TOOK is how long that took (ms), and it
# must still hold SETTLE seconds later.
converge() {
  local want=$1 t0
  t0=$(now_ms)
  [[ -n ${2:-} ]] && run_tidepool
  wait_until 60 pods_running "$want" ||
    { fail "$(running_pods) of $want pods Running after 60 s"; return 1; }
  wait_until 30 settled "$want" ||
    { fail "not settled at $want nodes (nodes $(node_count), booting $(booting), tainted $(tainted_nodes))"; return 1; }
  TOOK=$(($(now_ms) - t0))
  sleep "$SETTLE"
  settled "$want" && pods_running "$want" ||
    { fail "after $SETTLE s: nodes $(node_count), booting $(booting), tainted $(tainted_nodes), pods running $(running_pods)"; return 1; }
}

scale_up_point() {
  local point=$1
  run_tidepool "$point"
  gpu_wave 2
  expect_killed "$point" || return 1
  local in_flight="$(booting) booting, $(node_count) nodes"
  converge 2 restart || return 1
  (($(ever_requested) == 2)) || { fail "$(ever_requested) machines requested for 2 pods"; return 1; }
  pass "at the kill: $in_flight; settled $(secs "$TOOK") s after the restart, 2 machines"
}

scale_down_point() {
  local point=$1
  run_tidepool
  gpu_wave 2
  converge 2 || return 1
  stop_tidepool
  run_tidepool "$point"
  k -n "$NS" scale deployment gpu-wave --replicas=1 >/dev/null
  wait_until 10 pods_running 1 || { fail "setup: the deployment did not shrink to 1 pod"; return 1; }
  local keep
  keep=$(k -n "$NS" get pods -l app=gpu-wave -o jsonpath='{.items[0].spec.nodeName}')
  expect_killed "$point" || return 1
  local in_flight="$(node_count) nodes, $(tainted_nodes) tainted"
  converge 1 restart || return 1
  [[ $(k -n "$NS" get pods -l app=gpu-wave -o jsonpath='{.items[0].spec.nodeName}') == "$keep" ]] ||
    { fail "the remaining pod was moved off its node $keep"; return 1; }
  pass "at the kill: $in_flight; settled $(secs "$TOOK") s after the restart"
}

late_state_write() {
  run_tidepool
  gpu_wave 1
  converge 1 || return 1
  local due state
  due=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  state="{\"pools\":{\"gpu\":[{\"name\":\"gpu-late0\",\"due\":\"$due\"}]}}"
  k -n "$NS" patch configmap tidepool-kwok-provider --type merge \
    -p "{\"data\":{\"state\":$(printf '%s' "$state" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))')}}" >/dev/null ||
    { fail "could not write the state ConfigMap"; return 1; }
  gpu_wave 3
  converge 3 || return 1
  k get node gpu-late0 >/dev/null || { fail "the machine written behind tidepool's back was not booted"; return 1; }
  (($(ever_requested) == 3)) || { fail "$(ever_requested) machines requested for 3 pods"; return 1; }
  grep -q "adopting machine gpu-late0" "$WORK/tidepool.log" || { fail "no adoption in the log"; return 1; }
  pass "gpu-late0 adopted, 3 machines"
}
scenario_late-state-write() { late_state_write; }

for p in scale-up-decided kwok-before-save kwok-saved scale-up-acknowledged kwok-node-created; do
  eval "scenario_$p() { scale_up_point $p; }"
done
for p in node-tainted machine-deleted; do
  eval "scenario_$p() { scale_down_point $p; }"
done
ALL=(scale-up-decided kwok-before-save kwok-saved scale-up-acknowledged kwok-node-created
     node-tainted machine-deleted late-state-write)
run_scenarios reset_cluster ALL "$@"
stop_tidepool
scenario_summary
