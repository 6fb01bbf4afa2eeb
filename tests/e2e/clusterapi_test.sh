#!/usr/bin/env bash
# tidepool's clusterapi provider against real Cluster API (issue 23): `testenv/up --with
# cluster-api` runs the Cluster API core controllers and testenv's own infrastructure provider,
# whose Machines become kwok Nodes with a providerID after their template's boot delay. The
# management cluster is the workload cluster, reached through provider.managementKubeconfig (a
# client of its own, as with two clusters).
#
# Node groups (namespace capi-e2e), all MachineDeployments at 0 replicas:
#   gpu      min 0 max 5, capacity annotations: 8 cpu, 64Gi, 2 nvidia.com/gpu, label
#            e2e.tidepool.dev/group=a (scale from zero from the annotations)
#   stuck    min 0 max 3, no capacity annotations: resources from the template's status.capacity
#            (2 GPUs), label group=b from the labels annotation (a template's status publishes
#            no labels); its Machines boot after 1 h, i.e. never within the test
#   gpu-b    min 0 max 3, annotations 2 GPUs, label group=b; the config gives stuck a higher
#            priority than gpu-b
#   broken   min 0 max 2, label group=c, priority 20: its Machines fail (testenv's template
#            failureReason InsufficientCapacity); gpu-c min 0 max 2, label group=c, priority 0
#   bad-size min 3 > max 1; bad-cap cpu annotation "lots": each reported once, named, left out
#
#   1. scale-up from zero: three pending 2-GPU pods for group a: gpu goes 0 -> 3 through the scale
#      subresource, three Machines and Nodes, the pods Running on them.
#   2. scale-down: the pods deleted: the three Machines are deleted through the delete-machine
#      annotation, replicas back to 0; no other Machine is touched.
#   3. provision timeout: one pending pod for group b: stuck is tried first, its Machine never
#      becomes a node; after provisionTimeout (20 s) tidepool cancels it (stuck back to 0) and
#      scales gpu-b, where the pod runs.
#   4. a failed Machine: one pending pod for group c: broken is tried first, its Machine fails;
#      tidepool reports the stockout naming the Machine and its reason, scales gpu-c at once
#      (without waiting for provisionTimeout), the pod runs there; the failed Machine is
#      cancelled (broken back to 0).
#   5. killed between marking and lowering replicas: a pod on a new gpu node is deleted while
#      tidepool runs with TIDEPOOL_KILL_AT=capi-machine-marked; after the kill the Machine is
#      marked and replicas not lowered; the restarted tidepool takes the mark off and removes
#      the node again: gpu back to 0, gpu-b's Machine (scene 3's pod) untouched.
#
# Usage: clusterapi_test.sh TIDEPOOL_BINARY [SCENARIO...]. E2E_KEEP_LOGS: a folder for the logs.
# Prints PASS/FAIL per scenario and "N passed, M failed"; exits 0 iff all passed.
set -uo pipefail

TIDEPOOL=${1:?usage: clusterapi_test.sh TIDEPOOL_BINARY [SCENARIO...]}
shift
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tidepool-capi.XXXXXX")
source "$HERE/lib.sh"
NS=capi-e2e
TP_PID=""
PASSED=()
FAILED=()
pass() { echo "PASS $CURRENT${1:+: $1}"; PASSED+=("$CURRENT"); }
fail() { echo "FAIL $CURRENT: $1"; FAILED+=("$CURRENT"); }

cleanup() {
  stop_tidepool
  e2e_teardown
}
trap cleanup EXIT
trap "exit 143" INT TERM

e2e_connect --with cluster-api

CONFIG=$WORK/config.yaml
cat >"$CONFIG" <<EOF
apiVersion: tidepool.dev/v1alpha1
kind: AutoscalerConfig
provider: {type: clusterapi, namespace: $NS, managementKubeconfig: $KUBECONFIG}
scanInterval: 1s
scaleUp:
  expanders: [priority, least-waste]
  provisionTimeout: 20s
  batchIdle: 1s
  batchMax: 3s
  backoff: {initial: 60s, max: 120s}
scaleDown:
  enabled: true
  unneededTime: 3s
  delayAfterAdd: ${CAPI_DELAY_AFTER_ADD:-10s}
  maxPodEvictionTime: 30s
pools:
- {name: stuck, priority: 10}
- {name: gpu-b, priority: 5}
- {name: broken, priority: 20}
EOF

# md NAME TEMPLATE MIN MAX ANNOTATIONS_YAML: a MachineDeployment at 0 replicas.
md() {
  cat <<EOF
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineDeployment
metadata:
  name: $1
  namespace: $NS
  annotations:
    cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size: "$3"
    cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size: "$4"
$5
spec:
  clusterName: e2e
  replicas: 0
  selector:
    matchLabels: {e2e.tidepool.dev/md: $1}
  template:
    metadata:
      labels: {e2e.tidepool.dev/md: $1}
    spec:
      clusterName: e2e
      version: v1.36.3
      bootstrap: {dataSecretName: e2e-no-bootstrap}
      infrastructureRef:
        apiGroup: infrastructure.testenv.tidepool.dev
        kind: TestenvMachineTemplate
        name: $2
EOF
}
# machine_template NAME BOOT_DELAY GROUP_LABEL [FAILURE_REASON]
machine_template() {
  cat <<EOF
---
apiVersion: infrastructure.testenv.tidepool.dev/v1alpha1
kind: TestenvMachineTemplate
metadata: {name: $1, namespace: $NS}
spec:
  template:
    spec:
      bootDelay: $2
      ${4:+failureReason: $4}
      ${4:+failureMessage: no GPU capacity in the zone}
      capacity: {cpu: "8", memory: 64Gi, pods: "110", nvidia.com/gpu: "2"}
      nodeLabels: {e2e.tidepool.dev/group: $3}
EOF
}
CAP='    capacity.cluster-autoscaler.kubernetes.io/cpu: "8"
    capacity.cluster-autoscaler.kubernetes.io/memory: 64Gi
    capacity.cluster-autoscaler.kubernetes.io/gpu-type: nvidia.com/gpu
    capacity.cluster-autoscaler.kubernetes.io/gpu-count: "2"'
{
  cat <<EOF
apiVersion: v1
kind: Namespace
metadata: {name: $NS}
---
apiVersion: infrastructure.testenv.tidepool.dev/v1alpha1
kind: TestenvCluster
metadata: {name: e2e, namespace: $NS}
---
apiVersion: controlplane.testenv.tidepool.dev/v1alpha1
kind: TestenvControlPlane
metadata: {name: e2e, namespace: $NS}
spec: {version: v1.36.3}
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: e2e, namespace: $NS}
spec:
  controlPlaneRef: {apiGroup: controlplane.testenv.tidepool.dev, kind: TestenvControlPlane, name: e2e}
  infrastructureRef: {apiGroup: infrastructure.testenv.tidepool.dev, kind: TestenvCluster, name: e2e}
EOF
  machine_template fast 3s a
  machine_template fast-b 3s b
  machine_template never 1h b
  md gpu fast 0 5 "$CAP
    capacity.cluster-autoscaler.kubernetes.io/labels: e2e.tidepool.dev/group=a"
  md stuck never 0 3 '    capacity.cluster-autoscaler.kubernetes.io/labels: e2e.tidepool.dev/group=b'
  md gpu-b fast-b 0 3 "$CAP
    capacity.cluster-autoscaler.kubernetes.io/labels: e2e.tidepool.dev/group=b"
  machine_template fast-c 3s c
  machine_template failing 3s c InsufficientCapacity
  md broken failing 0 2 "$CAP
    capacity.cluster-autoscaler.kubernetes.io/labels: e2e.tidepool.dev/group=c"
  md gpu-c fast-c 0 2 "$CAP
    capacity.cluster-autoscaler.kubernetes.io/labels: e2e.tidepool.dev/group=c"
  md bad-size fast 3 1 ""
  md bad-cap fast 0 2 '    capacity.cluster-autoscaler.kubernetes.io/cpu: lots'
} >"$WORK/capi.yaml"
if ! k apply -f "$WORK/capi.yaml" >"$WORK/apply.log"; then
  kubectl apply -f "$WORK/capi.yaml" >&2
  echo "FAIL setup: the Cluster API objects were refused" >&2
  exit 1
fi
cluster_ready() {
  [[ $(k -n "$NS" get cluster e2e -o jsonpath='{.status.initialization.infrastructureProvisioned}/{.status.initialization.controlPlaneInitialized}') == true/true ]]
}
template_published() {
  [[ $(k -n "$NS" get testenvmachinetemplate never -o jsonpath='{.status.capacity.nvidia\.com/gpu}') == 2 ]]
}
wait_until 90 cluster_ready || { echo "FAIL setup: Cluster e2e not initialized" >&2; exit 1; }
wait_until 30 template_published || { echo "FAIL setup: template status not published" >&2; exit 1; }

start() { start_tidepool tidepool "$CONFIG" --no-leader-elect; TP_PID=$LAST_PID; }
replicas() { k -n "$NS" get machinedeployment "$1" -o jsonpath='{.spec.replicas}'; }
machines_of() { k -n "$NS" get machines -l "e2e.tidepool.dev/md=$1" -o jsonpath='{.items[*].metadata.name}'; }
count() { wc -w <<<"$1"; }
# pod NAME GROUP: a bare pod asking for 2 GPUs on group GROUP's nodes.
pod() {
  cat <<EOF | k apply -f - >/dev/null
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: $NS}
spec:
  nodeSelector: {e2e.tidepool.dev/group: $2}
  containers:
  - name: train
    image: busybox
    resources: {requests: {cpu: "1", memory: 1Gi, nvidia.com/gpu: "2"}, limits: {nvidia.com/gpu: "2"}}
EOF
}
all_running() { local p; for p in "$@"; do pod_running "$p" || return 1; done; }
ready_nodes_of() {
  k get nodes -l "e2e.tidepool.dev/group=$1" -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{" "}{end}' | wc -w
}

start
# Bad node groups: each reported once (at startup), by name; the others became pools.
wait_until 20 grep -q "pool gpu-b: node group" "$WORK/tidepool.log"
CURRENT=bad-input
sizes=$(grep -c "MachineDeployment $NS/bad-size: min size 3 is greater than max size 1" "$WORK/tidepool.log")
caps=$(grep -c "MachineDeployment $NS/bad-cap: annotation capacity.cluster-autoscaler.kubernetes.io/cpu: \"lots\"" "$WORK/tidepool.log")
if [[ $sizes == 1 && $caps == 1 ]] && grep -q "pool gpu: node group min 0 max 5" "$WORK/tidepool.log" &&
  grep -q "pool stuck: node group min 0 max 3" "$WORK/tidepool.log"; then
  pass "bad-size and bad-cap reported once each and left out; gpu, gpu-b and stuck are pools"
else
  fail "bad-size reported $sizes times, bad-cap $caps times (want 1 and 1), or a pool missing"
fi

scenario_scale_up() {
  pod a1 a && pod a2 a && pod a3 a
  if ! wait_until 90 all_running a1 a2 a3; then
    fail "pods not Running: replicas $(replicas gpu), machines $(machines_of gpu)"
    if [[ -n ${E2E_KEEP_LOGS:-} ]]; then
      k get nodes,machines,pods -A -o yaml >"$WORK/state.log"
    fi
    return
  fi
  local r m n
  r=$(replicas gpu)
  m=$(count "$(machines_of gpu)")
  n=$(ready_nodes_of a)
  if [[ $r == 3 && $m == 3 && $n == 3 ]]; then
    pass "gpu 0 -> 3 replicas, 3 Machines, 3 Ready nodes, the 3 pods Running"
  else
    fail "replicas $r, machines $m, ready nodes $n (want 3, 3, 3)"
  fi
}

scenario_scale_down() {
  local before others_before others_after
  before=$(machines_of gpu)
  others_before=$(k -n "$NS" get machines -o jsonpath='{range .items[*]}{.metadata.uid}{" "}{end}' -l 'e2e.tidepool.dev/md!=gpu')
  k -n "$NS" delete pod a1 a2 a3 --wait=false >/dev/null
  gone() { [[ $(replicas gpu) == 0 && -z $(machines_of gpu) ]]; }
  if ! wait_until 90 gone; then
    fail "replicas $(replicas gpu), machines left: $(machines_of gpu)"
    return
  fi
  others_after=$(k -n "$NS" get machines -o jsonpath='{range .items[*]}{.metadata.uid}{" "}{end}' -l 'e2e.tidepool.dev/md!=gpu')
  if [[ $others_before != "$others_after" ]]; then
    fail "other Machines changed: '$others_before' -> '$others_after'"
  elif [[ $(count "$before") != 3 ]]; then
    fail "expected 3 machines before, had: $before"
  else
    pass "the 3 Machines ($before) deleted, replicas 0, no other Machine touched"
  fi
}

# fallback POD GROUP PREFERRED OTHER RUN_WITHIN: a pending pod for GROUP; PREFERRED (the higher
# priority) is tried with one replica, the pod ends Running within RUN_WITHIN seconds, and
# PREFERRED's Machine is cancelled (replicas 0, no Machine). Fails the scenario and returns 1
# otherwise.
fallback() {
  local pod=$1 group=$2 preferred=$3 other=$4 within=$5
  local state="$preferred $(replicas "$preferred"), $other $(replicas "$other")"
  pod "$pod" "$group"
  tried() { [[ $(replicas "$preferred") == 1 ]]; }
  if ! wait_until 30 tried; then
    fail "$preferred (the higher priority) not tried: $state"
    return 1
  fi
  if ! wait_until "$within" all_running "$pod"; then
    fail "$pod not Running: $preferred $(replicas "$preferred"), $other $(replicas "$other")"
    return 1
  fi
  cancelled() { [[ $(replicas "$preferred") == 0 && -z $(machines_of "$preferred") ]]; }
  if ! wait_until 60 cancelled; then
    fail "$preferred not cancelled: replicas $(replicas "$preferred"), machines $(machines_of "$preferred")"
    return 1
  fi
}

scenario_timeout() {
  fallback b1 b stuck gpu-b 90 || return
  local node
  node=$(k -n "$NS" get pod b1 -o jsonpath='{.spec.nodeName}')
  if [[ $(replicas gpu-b) == 1 && $node == "$(machines_of gpu-b)" ]]; then
    pass "stuck tried (1 replica), cancelled after the timeout; gpu-b 0 -> 1, b1 Running on $node"
  else
    fail "gpu-b replicas $(replicas gpu-b), b1 on '$node', gpu-b machines '$(machines_of gpu-b)'"
  fi
}

scenario_failed() {
  local t0=$SECONDS took machine
  fallback c2 c broken gpu-c 60 || return
  took=$((SECONDS - t0))
  # Cluster API wraps the infrastructure's message ("Failure detected from referenced resource ...").
  machine=$(grep -o "Machine $NS/broken-[a-z0-9-]* failed: InsufficientCapacity: .*no GPU capacity in the zone; pool broken reports a stockout" "$WORK/tidepool.log" | head -1 | cut -d' ' -f2)
  if [[ -z $machine ]]; then
    fail "no stockout naming a Machine of broken and its reason in the log"
  elif ((took >= 20)); then
    fail "c2 Running and broken cancelled only after ${took}s: the fallback waited for provisionTimeout (20 s)"
  else
    pass "broken's Machine $machine failed, reported with its reason; gpu-c took c2 and broken was cancelled ${took}s after c2 was created"
  fi
}

scenario_kill_marked() {
  pod c1 a
  if ! wait_until 90 all_running c1; then fail "c1 not Running"; return; fi
  local victim others
  victim=$(machines_of gpu)
  others=$(machines_of gpu-b)
  stop_tidepool
  TIDEPOOL_KILL_AT=capi-machine-marked start
  k -n "$NS" delete pod c1 --wait=false >/dev/null
  if ! wait_until 60 grep -q "kill point capi-machine-marked reached" "$WORK/tidepool.log"; then
    fail "the kill point was not reached"
    return
  fi
  wait "$TP_PID" 2>/dev/null
  TP_PID=""
  local mark r
  mark=$(k -n "$NS" get machine "$victim" -o jsonpath='{.metadata.annotations.cluster\.x-k8s\.io/delete-machine}')
  r=$(replicas gpu)
  if [[ -z $mark || $r != 1 ]]; then
    fail "after the kill: mark '$mark', replicas $r (want a mark and 1)"
    return
  fi
  start
  done_() { [[ $(replicas gpu) == 0 && -z $(machines_of gpu) ]]; }
  if ! wait_until 90 done_; then
    fail "not completed after restart: replicas $(replicas gpu), machines $(machines_of gpu)"
    return
  fi
  if [[ $(machines_of gpu-b) != "$others" ]] || ! pod_running b1; then
    fail "gpu-b changed: '$others' -> '$(machines_of gpu-b)', or b1 not Running"
  elif ! grep -q "Machine $NS/$victim: marked for deletion by a tidepool that stopped" "$WORK/tidepool.log"; then
    fail "the restarted tidepool did not report the mark it took off"
  else
    pass "killed with $victim marked and replicas 1; after restart the mark came off, the removal ran again: gpu 0, gpu-b untouched"
  fi
}

ALL=(scale_up scale_down timeout failed kill_marked)
run_scenarios : ALL "$@"
scenario_summary
