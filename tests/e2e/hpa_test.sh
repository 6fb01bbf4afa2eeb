#!/usr/bin/env bash
# The Horizontal Pod Autoscaler and tidepool together, on real metrics (issue 27): the source
# document's Deployment and HPA (examples/seed/workloads/ai-model-training-hpa.yaml), metrics-server
# reading kwok's emulated kubelet resource metrics, the HPA controller of kube-controller-manager,
# and `tidepool run` on a pool of small nodes (tests/e2e/hpa_config.yaml: one replica per node).
#
# Usage: hpa_test.sh TIDEPOOL_BINARY. Environment: E2E_KEEP_LOGS (a folder for the logs and the
# state snapshot), HPA_TEST_CONFIG (another tidepool config, its unneededTime in seconds).
# Its own testenv: `testenv/up --with metrics`, kube-controller-manager with an HPA sync period of
# 5 s instead of 15 s; the HPA's scale-down stabilization is patched to 10 s (default 300 s).
# Load: a pod's CPU usage is its annotation kwok.x-k8s.io/usage-cpu; a driver loop keeps every
# replica (new ones too) at the current level, i.e. every replica works as hard as the others.
#
#   1. burst: usage 900m (90% of the 1-CPU limit, 180% of the request): the HPA scales 2 -> 5 in one
#      step; tidepool adds the 3 nodes in one IncreasePool; all 5 Running. Reported: the time from
#      the HPA's scale to all Running. (At 90% of the request the HPA would go 2 -> 4 -> 5, two
#      steps at least one sync apart: ceil(2 * 90 / 50) = 4.)
#   2. scale back: usage 100m (20%): the HPA scales 5 -> 2 after its 10 s window; the 3 emptied
#      nodes are removed after unneededTime; no replica is evicted or recreated, and every node
#      removed was empty.
#   3. flapping: back to 5, then the usage alternates 200m (40%: 5 -> 4, and stable at 4) and 300m
#      (60%: 4 -> 5, stable at 5) twice. Each 5 -> 4 empties a node for a while shorter than
#      unneededTime; the next replica lands on it: no IncreasePool, no taint, no DeleteNode,
#      the same nodes throughout.
# Prints figures and PASS/FAIL per scene and "N passed, M failed"; exits 0 iff all passed.
set -uo pipefail

TIDEPOOL=${1:?usage: hpa_test.sh TIDEPOOL_BINARY}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tidepool-hpa.XXXXXX")
source "$HERE/lib.sh"
NS=hpa
APP=app=ai-model-training
DEPLOY=ai-model-deployment
HPA=ai-model-hpa
CONFIG=${HPA_TEST_CONFIG:-$HERE/hpa_config.yaml}  # another config: to see the test fail with it
UNNEEDED=$(sed -n 's/^ *unneededTime: *\([0-9]*\)s *$/\1/p' "$CONFIG")  # seconds
HOLD_AT_4=5  # seconds the flapping HPA is held at 4 replicas before the load rises again
DRIVER_PID=""
PASSED=() FAILED=()

cleanup() {
  [[ -n $DRIVER_PID ]] && kill "$DRIVER_PID" 2>/dev/null && wait "$DRIVER_PID" 2>/dev/null
  stop_all_tidepool
  if [[ -n ${E2E_KEEP_LOGS:-} ]]; then
    mkdir -p "$E2E_KEEP_LOGS" && cp "$WORK"/*.log "$WORK"/*.yaml "$E2E_KEEP_LOGS"/ 2>/dev/null
    cp "$TESTENV_DIR"/logs/*.log "$E2E_KEEP_LOGS"/ 2>/dev/null
  fi
  e2e_disconnect
  rm -rf "$WORK"
}
trap cleanup EXIT
trap "exit 143" INT TERM

[[ -n $UNNEEDED ]] || { echo "FAIL setup: no scaleDown.unneededTime in seconds in $CONFIG"; exit 1; }
pass() { echo "PASS $1"; PASSED+=("$1"); }
fail() {
  echo "FAIL $1: $2"
  FAILED+=("$1")
  echo "---- tidepool.log (last 30)"; tail -30 "$WORK/tidepool.log"
  k get hpa -n "$NS" -o wide
  k get nodes
  k -n "$NS" get pods -o wide
  return 1
}
abort() { fail "$1" "$2"; echo "$(scenario_summary)"; exit 1; }

# ---- cluster, metrics, tidepool ---------------------------------------------------------------
unset E2E_TESTENV_DIR  # always a testenv of its own: the fixture's has no metrics API
log "bringing up a testenv --with metrics"
e2e_connect --with metrics --controller-manager-arg=--horizontal-pod-autoscaler-sync-period=5s
k create namespace "$NS" >/dev/null || abort setup "cannot create namespace $NS"
wait_until 30 k -n "$NS" get serviceaccount default || abort setup "namespace $NS has no ServiceAccount"
LISTEN=127.0.0.1:$(free_port)
start_tidepool tidepool "$CONFIG"
wait_until 30 grep -q "caches synced" "$WORK/tidepool.log" || abort setup "tidepool did not sync its caches"

# Load: every replica's usage-cpu annotation follows $WORK/load.
echo 1m >"$WORK/load"
"$ROOT/scripts/drive-cpu-usage.sh" "$NS" "$APP" "$WORK/load" &
DRIVER_PID=$!
set_load() { echo "$1" >"$WORK/load"; log "load: usage-cpu $1 per replica"; }

replicas() { k -n "$NS" get deployment "$DEPLOY" -o jsonpath='{.spec.replicas}'; }
replicas_are() { [[ $(replicas) == "$1" ]]; }
running() { k -n "$NS" get pods -l "$APP" --field-selector=status.phase=Running -o name | wc -l; }
all_running() { [[ $(replicas) == "$1" && $(running) -eq $1 && $(k -n "$NS" get pods -l "$APP" -o name | wc -l) -eq $1 ]]; }
node_names() { k get nodes -o name | sed 's|^node/||' | sort; }
replica_nodes() { k -n "$NS" get pods -l "$APP" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort; }
replica_names() { k -n "$NS" get pods -l "$APP" -o name | sed 's|^pod/||' | sort; }
hpa_utilization() { k -n "$NS" get hpa "$HPA" -o jsonpath='{.status.currentMetrics[0].resource.current.averageUtilization}'; }
unneeded_nodes() { curl -s --max-time 5 "http://$LISTEN/metrics" | awk '$1 == "tidepool_unneeded_nodes" {print $2}'; }
log_mark() { wc -l <"$WORK/tidepool.log"; }
log_since() { tail -n "+$(($1 + 1))" "$WORK/tidepool.log"; }
count_since() { log_since "$1" | grep -c -E " I $2 " || true; }
# wait_replicas N SECONDS: polls spec.replicas every 0.5 s until it is N; fails on any other
# value than the start value and N (so 2 -> 4 -> 5 is not taken for 2 -> 5). Sets SCALED_MS.
wait_replicas() {
  local want=$1 deadline=$((SECONDS + $2)) from r
  from=$(replicas)
  while ((SECONDS < deadline)); do
    r=$(replicas)
    if [[ $r == "$want" ]]; then SCALED_MS=$(now_ms); return 0; fi
    if [[ -n $r && $r != "$from" ]]; then echo "replicas went $from -> $r, not to $want"; return 1; fi
    sleep 0.5
  done
  echo "replicas still $(replicas) after $2 s, want $want"
  return 1
}

k apply -n "$NS" -f "$ROOT/examples/seed/workloads/ai-model-training-hpa.yaml" >/dev/null ||
  abort setup "cannot apply the source document's Deployment and HPA"
k -n "$NS" patch hpa "$HPA" --type=merge \
  -p '{"spec":{"behavior":{"scaleDown":{"stabilizationWindowSeconds":10}}}}' >/dev/null ||
  abort setup "cannot shorten the HPA's scale-down stabilization window"
wait_until 90 all_running 2 || abort setup "the 2 initial replicas are not Running"
wait_until 60 bash -c "[[ -n \$(kubectl -n $NS get hpa $HPA -o jsonpath='{.status.currentMetrics[0].resource.current.averageUtilization}' 2>/dev/null) ]]" ||
  abort setup "the HPA has no CPU utilization from the metrics API"
log "setup: 2 replicas on $(node_count) node(s); the HPA reads $(hpa_utilization)% CPU utilization"
pod_metrics() { k get --raw "/apis/metrics.k8s.io/v1beta1/namespaces/$NS/pods" | jq -c '[.items[] | {pod: .metadata.name, cpu: .containers[0].usage.cpu}]'; }
wait_until 30 bash -c "[[ \$(kubectl get --raw /apis/metrics.k8s.io/v1beta1/namespaces/$NS/pods 2>/dev/null | jq '.items | length') -eq 2 ]]"
echo "metrics API (metrics.k8s.io/v1beta1, pods in $NS): $(pod_metrics)"

# ---- 1. burst: 2 -> 5 ---------------------------------------------------------------------------
scene_burst() {
  local mark t0 t_run incr nodes_before snap pending
  nodes_before=$(node_count)
  mark=$(log_mark)
  set_load 900m
  t0=$(now_ms)
  wait_replicas 5 90 >"$WORK/why" || { fail burst "$(<"$WORK/why")"; return; }
  # What `tidepool explain` says about an HPA-created replica while it is pending.
  snap=$WORK/pending-state.yaml
  k get nodes,pods,pdb,ds -A -o yaml >"$snap"
  pending=$(k -n "$NS" get pods -l "$APP" --field-selector=status.phase=Pending -o name | head -1)
  wait_until 90 all_running 5 || { fail burst "not all 5 replicas Running within 90 s of the HPA's scale"; return; }
  t_run=$(now_ms)
  incr=$(log_since "$mark" | grep " I IncreasePool ")
  echo "burst: the HPA scaled 2 -> 5 $(secs $((SCALED_MS - t0))) s after the load rose to 900m (HPA: $(k -n "$NS" get hpa "$HPA" -o jsonpath='{.status.currentMetrics[0].resource.current.averageUtilization}')% of requests);" \
    "all 5 Running $(secs $((t_run - SCALED_MS))) s after the HPA's scale"
  echo "burst: tidepool: ${incr#* I }"
  [[ $(grep -c . <<<"$incr") -eq 1 ]] || { fail burst "want one IncreasePool, got: $incr"; return; }
  grep -q "IncreasePool small +3 " <<<"$incr" || { fail burst "want +3 nodes of pool small: $incr"; return; }
  [[ $(node_count) -eq $((nodes_before + 3)) ]] || { fail burst "$(node_count) nodes, want $((nodes_before + 3))"; return; }
  if [[ -n $pending ]]; then
    echo "burst: tidepool explain ${NS}/${pending#pod/} (state taken while it was pending):"
    "$TIDEPOOL" explain "$NS/${pending#pod/}" --config "$CONFIG" --state "$snap" 2>&1 | sed 's/^/    /' | head -20
  fi
  pass burst
}

# ---- 2. scale back: 5 -> 2, emptied nodes removed -------------------------------------------------
scene_scale_back() {
  local mark t0 before after kept gone evicted t_nodes
  before=$(replica_names)
  mark=$(log_mark)
  set_load 100m
  t0=$(now_ms)
  wait_replicas 2 90 >"$WORK/why" || { fail scale_back "$(<"$WORK/why")"; return; }
  echo "scale back: the HPA scaled 5 -> 2 $(secs $((SCALED_MS - t0))) s after the load fell to 100m (window 10 s)"
  wait_until 30 all_running 2 || { fail scale_back "the deployment did not settle at 2 replicas"; return; }
  kept=$(replica_nodes)
  wait_until $((UNNEEDED + 45)) bash -c "[[ \$(kubectl get nodes -o name 2>/dev/null | wc -l) -eq 2 ]]" ||
    { fail scale_back "$(node_count) nodes $((UNNEEDED + 45)) s after the scale-down, want 2"; return; }
  t_nodes=$(now_ms)
  after=$(replica_names)
  gone=$(log_since "$mark" | grep " I DeleteNode " | awk '{print $4}' | sort)
  evicted=$(log_since "$mark" | grep " I EvictPods " || true)
  echo "scale back: nodes back to 2 $(secs $((t_nodes - SCALED_MS))) s after the HPA's scale-down (unneededTime ${UNNEEDED} s); removed: $(echo $gone)"
  [[ -z $evicted ]] || { fail scale_back "tidepool evicted pods: $evicted"; return; }
  [[ -z $(comm -13 <(echo "$before") <(echo "$after")) ]] ||
    { fail scale_back "replicas were recreated: before $(echo $before), after $(echo $after)"; return; }
  [[ $(node_names) == "$kept" ]] ||
    { fail scale_back "the nodes left ($(node_names | tr '\n' ' ')) are not those of the replicas ($(echo $kept))"; return; }
  [[ -z $(comm -12 <(echo "$gone") <(echo "$kept")) ]] || { fail scale_back "a node holding a replica was removed"; return; }
  [[ $(grep -c . <<<"$gone") -eq 3 ]] || { fail scale_back "want 3 DeleteNode, got: $(echo $gone)"; return; }
  pass scale_back
}

# ---- 3. flapping 4 <-> 5: no node churn -----------------------------------------------------------
scene_flapping() {
  local mark nodes i t_down t_up empty_node landed changes seen_unneeded
  set_load 900m
  wait_replicas 5 90 >"$WORK/why" || { fail flapping "$(<"$WORK/why")"; return; }
  wait_until 90 all_running 5 || { fail flapping "not all 5 replicas Running"; return; }
  sleep 6  # older than delayAfterAdd (4 s): only unneededTime protects an emptied node now
  nodes=$(node_names)
  mark=$(log_mark)
  for i in 1 2; do
    set_load 200m
    wait_replicas 4 90 >"$WORK/why" || { fail flapping "flap $i: $(<"$WORK/why")"; return; }
    t_down=$SCALED_MS
    wait_until 20 all_running 4 || { fail flapping "flap $i: not settled at 4"; return; }
    empty_node=$(comm -23 <(echo "$nodes") <(replica_nodes | sort -u))
    # Stay at 4 for a while (the HPA is stable there at 40%): tidepool must see the emptied node
    # as unneeded, and keep it.
    seen_unneeded=0
    for _ in $(seq "$HOLD_AT_4"); do
      (($(unneeded_nodes || echo 0) >= 1)) && seen_unneeded=1
      sleep 1
    done
    ((seen_unneeded)) || { fail flapping "flap $i: tidepool never counted ${empty_node:-the emptied node} as unneeded"; return; }
    set_load 300m
    wait_replicas 5 90 >"$WORK/why" || { fail flapping "flap $i: $(<"$WORK/why")"; return; }
    wait_until 60 all_running 5 || { fail flapping "flap $i: not all 5 Running again"; return; }
    t_up=$(now_ms)
    landed="another node"
    [[ -n $empty_node ]] && replica_nodes | grep -qx "$empty_node" && landed=$empty_node
    echo "flap $i: 5 -> 4 -> 5; node ${empty_node:-?} held no replica for $(secs $((t_up - t_down))) s, counted unneeded by tidepool (unneededTime ${UNNEEDED} s); the new replica runs on $landed"
  done
  changes=$(log_since "$mark" | grep -E " I (IncreasePool|TaintNode|DeleteNode|EvictPods) " || true)
  [[ -z $changes ]] || { fail flapping "tidepool changed nodes while the HPA flapped: $changes"; return; }
  [[ $(node_names) == "$nodes" ]] || { fail flapping "nodes changed: $(echo $nodes) -> $(node_names | tr '\n' ' ')"; return; }
  echo "flapping: the same $(grep -c . <<<"$nodes") nodes throughout, no IncreasePool, TaintNode or DeleteNode"
  pass flapping
}

scene_burst
scene_scale_back
scene_flapping
echo "hpa: $(scenario_summary)"
((${#FAILED[@]} == 0))
