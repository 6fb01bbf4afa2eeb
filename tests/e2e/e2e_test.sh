#!/usr/bin/env bash
# End-to-end tests of `tidepool run` on the real control plane (testenv/): scale from zero,
# spot fallback, gangs, drain with PDBs, Job pods, a deallocate pool (stop, restart faster than a
# boot), crash in the middle of a scale-up, leader election, a CapacityBuffer. Usage: e2e_test.sh TIDEPOOL_BINARY [SCENARIO...]   (no scenario: all of them)
#
# Each scenario starts from an empty cluster (no nodes, no test pods, no tidepool state) and
# runs tidepool as a separate process, as users do. Prints "PASS name" / "FAIL name: why" and
# a summary; exits 0 iff every scenario passed. Logs of a failed scenario are printed.
set -uo pipefail

TIDEPOOL=${1:?usage: e2e_test.sh TIDEPOOL_BINARY [SCENARIO...]}
shift
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tidepool-e2e.XXXXXX")
source "$HERE/lib.sh"
NS=e2e

cleanup() {
  stop_all_tidepool
  e2e_disconnect
  rm -rf "$WORK"
}
trap cleanup EXIT

e2e_connect

# ---- helpers ---------------------------------------------------------------------------------




nodes_of() { k get nodes -l "tidepool.dev/pool=$1" -o name | wc -l; }
# tidepool_loop_unchanged_steps_total of the tidepool serving metrics at base URL $1.
unchanged_steps() {
  local metrics
  metrics=$(curl -s "$1/metrics")
  awk '$1 == "tidepool_loop_unchanged_steps_total" { print $2 }' <<<"$metrics"
}
# Whether that tidepool ($1) has skipped at least $2 Steps.
skipped_at_least() { local n; n=$(unchanged_steps "$1"); [[ -n $n ]] && ((n >= $2)); }
has_nodes() { [[ $(nodes_of "$1") -eq $2 ]]; }
pods_running() { [[ $(k -n "$NS" get pods -l "$1" --field-selector=status.phase=Running -o name | wc -l) -eq $2 ]]; }

# A fresh namespace and no nodes, and no slice policy a failed scenario_dra_match left behind.
reset_cluster() {
  e2e_reset_cluster
  k delete validatingadmissionpolicybinding,validatingadmissionpolicy e2e-no-slices --ignore-not-found >/dev/null
}

# config_with KEY_SED...: a copy of the e2e config edited by sed expressions.
config_with() {
  local out
  out=$(mktemp "$WORK/config.XXXX.yaml")
  cp "$HERE/config.yaml" "$out"
  for expr in "$@"; do sed -i "$expr" "$out"; done
  echo "$out"
}

# gpu_pod NAME GPUS [spot] [EXTRA_YAML]: a pod requesting GPUs (and tolerating spot if asked).
gpu_pod() {
  local name=$1 gpus=$2 spot=${3:-} extra=${4:-}
  local tol=""
  if [[ $spot == spot ]]; then
    tol='  tolerations: [{key: kubernetes.azure.com/scalesetpriority, operator: Equal, value: spot, effect: NoSchedule}]'
  fi
  cat <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $name
  namespace: $NS
$extra
spec:
$tol
  containers:
  - name: train
    image: tensorflow/tensorflow:latest-gpu
    resources:
      requests: {cpu: "1", memory: 1Gi, nvidia.com/gpu: "$gpus"}
      limits: {nvidia.com/gpu: "$gpus"}
EOF
}

FAILED=()
PASSED=()
CURRENT=""
fail() {
  echo "FAIL $CURRENT: $*"
  FAILED+=("$CURRENT")
  for f in "$WORK"/*.log; do
    [[ -f $f ]] || continue
    echo "---- $(basename "$f") (last 40 lines)"
    tail -40 "$f"
  done
  k get nodes -o wide
  k -n "$NS" get pods -o wide
  return 1
}
# A scenario passes only if no tidepool of it stopped on an internal check (lib.sh,
# start_tidepool: the cluster model's verify mode).
pass() {
  local failed
  if failed=$(tidepool_checks_failed); then
    fail "tidepool stopped on a failed check: $failed"
    return 1
  fi
  echo "PASS $CURRENT"
  PASSED+=("$CURRENT")
}

# ---- scenarios -------------------------------------------------------------------------------


# Also checks the operations endpoints of a running tidepool.
scenario_scale_from_zero() {
  local cfg port
  cfg=$(config_with)
  port=$(free_port)
  LISTEN=127.0.0.1:$port start_tidepool tp "$cfg"
  gpu_pod train-1 1 | k apply -f - >/dev/null || { fail "could not create the pod"; return 1; }
  wait_until 60 pod_running train-1 || { fail "pod not Running within 60 s"; return 1; }
  [[ $(nodes_of gpu) -eq 1 ]] || { fail "expected 1 node in pool gpu, got $(nodes_of gpu)"; return 1; }
  [[ $(node_count) -eq 1 ]] || { fail "expected 1 node in all, got $(node_count)"; return 1; }
  wait_until 10 event_for TriggeredScaleUp train-1 || { fail "no TriggeredScaleUp event"; return 1; }
  sleep 5
  [[ $(node_count) -eq 1 ]] || { fail "a second node appeared: $(node_count)"; return 1; }
  local base=http://127.0.0.1:$port
  [[ $(curl -s "$base/healthz") == ok ]] || { fail "/healthz is not ok"; return 1; }
  [[ $(curl -s -o /dev/null -w '%{http_code}' "$base/readyz") == 200 ]] || { fail "/readyz is not 200"; return 1; }
  # Read whole bodies first: with pipefail, `curl | grep -q` fails when grep stops early.
  local metrics status
  metrics=$(curl -s "$base/metrics")
  status=$(curl -s "$base/status")
  grep -q '^tidepool_scale_up_nodes_total{pool="gpu"} 1$' <<<"$metrics" ||
    { fail "/metrics does not count the scale-up: $(grep scale_up <<<"$metrics")"; return 1; }
  grep -q '^tidepool_leader 1$' <<<"$metrics" || { fail "/metrics: not leader"; return 1; }
  # Nothing changes now: the scans (every 2 s) see what a scan that decided nothing saw, and skip
  # the loop's Step.
  wait_until 20 skipped_at_least "$base" 1 ||
    { fail "no scan of the quiet cluster skipped its Step: $(unchanged_steps "$base") skipped"; return 1; }
  # A kubelet rewrites its node's status every few minutes (a heartbeat) with nothing tidepool
  # reads: the cluster stays quiet, and scans go on skipping while heartbeats come every second.
  local node skipped beat
  node=$(k get nodes -l tidepool.dev/pool=gpu -o jsonpath='{.items[0].metadata.name}')
  skipped=$(unchanged_steps "$base")
  for beat in 1 2 3 4 5 6 7 8; do
    k patch node "$node" --subresource=status -p \
      "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"lastHeartbeatTime\":\"$(date -u +%FT%TZ)\"}]}}" >/dev/null ||
      { fail "could not write node $node's status heartbeat"; return 1; }
    sleep 1
  done
  skipped_at_least "$base" $((skipped + 2)) ||
    { fail "heartbeats stopped the skips: $skipped skipped Steps before 8 s of heartbeats, $(unchanged_steps "$base") after"; return 1; }
  grep -q '<td[^>]*>[^<]*gpu' <<<"$status" || { fail "/status has no gpu pool row"; return 1; }
  grep -q "gpu: min 0 max 4 target 1" <<<"$(k -n "$NS" get configmap tidepool-status -o jsonpath='{.data.status}')" ||
    { fail "the tidepool-status ConfigMap does not show the gpu pool at 1"; return 1; }
  pass
}

# Pod b starts held by a scheduling gate (as Kueue holds the pods it queues): only a's node comes.
# Once the gate is removed, b gets its own.
scenario_two_pods_two_nodes() {
  local cfg port
  cfg=$(config_with)
  port=$(free_port)
  # With every pass planned (--no-skip-unchanged): the same decisions, and no Step skipped.
  LISTEN=127.0.0.1:$port start_tidepool tp "$cfg" --no-skip-unchanged
  gpu_pod a 1 | k apply -f - >/dev/null
  gpu_pod b 1 | sed 's|^spec:$|spec:\n  schedulingGates: [{name: example.com/hold}]|' | k apply -f - >/dev/null ||
    { fail "could not create the gated pod"; return 1; }
  wait_until 60 pod_running a || { fail "pod a not Running"; return 1; }
  sleep 4
  [[ $(nodes_of gpu) -eq 1 ]] || { fail "a node came for the gated pod: $(nodes_of gpu) gpu nodes"; return 1; }
  k -n "$NS" patch pod b --type=json -p '[{"op": "remove", "path": "/spec/schedulingGates"}]' >/dev/null ||
    { fail "could not remove the gate"; return 1; }
  wait_until 60 pod_running b || { fail "pod b not Running"; return 1; }
  sleep 4
  [[ $(nodes_of gpu) -eq 2 ]] || { fail "expected 2 gpu nodes, got $(nodes_of gpu)"; return 1; }
  [[ $(node_count) -eq 2 ]] || { fail "expected 2 nodes, got $(node_count)"; return 1; }
  # Quiet for six scans (scale_from_zero sees Steps skipped within that without the flag).
  sleep 12
  local skipped
  skipped=$(unchanged_steps "http://127.0.0.1:$port")
  [[ $skipped == 0 ]] || { fail "--no-skip-unchanged skipped Steps: '$skipped'"; return 1; }
  pass
}

scenario_spot_fallback() {
  local cfg
  cfg=$(config_with 's/^  bootDelay: 2s/  bootDelay: 2s\n  unavailablePools: [gpu-spot]/')
  start_tidepool tp "$cfg"
  local t0=$SECONDS
  gpu_pod spotty 1 spot | k apply -f - >/dev/null
  # One batch window (batchMax 5 s) plus boot (2 s) and binding: well within 20 s.
  wait_until 20 has_nodes gpu 1 || { fail "no on-demand node within 20 s"; return 1; }
  [[ $(nodes_of gpu-spot) -eq 0 ]] || { fail "a spot node appeared"; return 1; }
  wait_until 20 pod_running spotty || { fail "pod not Running on the fallback node"; return 1; }
  log "spot fallback: on-demand node after $((SECONDS - t0)) s"
  pass
}

# Zone twins (scaleUp.balanceZones): three pools alike but for their zone, and a Deployment of
# six pods of 3 cpu, one per 4-cpu node. The nodes come two per zone, in one scale-up, and every
# pod runs; the first zone alone (what a round filled before) would have taken all six.
scenario_zone_twins() {
  local cfg=$WORK/zones.yaml z
  sed '/^pools:/,$d' "$HERE/config.yaml" >"$cfg"
  echo "pools:" >>"$cfg"
  for z in 1 2 3; do
    cat >>"$cfg" <<EOF
  - name: cpu-z$z
    min: 0
    max: 6
    pricePerHour: 0.2
    template:
      labels: {pool-kind: cpu, topology.kubernetes.io/zone: zone-$z}
      capacity: {cpu: "4", memory: 16Gi, pods: "110"}
EOF
  done
  start_tidepool tp "$cfg"
  k apply -f - >/dev/null <<EOF || { fail "could not create the Deployment"; return 1; }
apiVersion: apps/v1
kind: Deployment
metadata: {name: zt, namespace: $NS}
spec:
  replicas: 6
  selector: {matchLabels: {app: zt}}
  template:
    metadata: {labels: {app: zt}}
    spec:
      containers:
      - name: main
        image: busybox
        resources:
          requests: {cpu: "3", memory: 1Gi}
EOF
  wait_until 90 pods_running app=zt 6 || { fail "the six pods are not Running within 90 s"; return 1; }
  for z in 1 2 3; do
    [[ $(nodes_of cpu-z$z) -eq 2 ]] || { fail "expected 2 nodes in zone $z, got $(nodes_of cpu-z$z)"; return 1; }
  done
  [[ $(node_count) -eq 6 ]] || { fail "expected 6 nodes in all, got $(node_count)"; return 1; }
  pass
}

# Gang of 4 pods with 2 GPUs each: 8 GPUs = 2 heavy nodes (4 GPUs). Both come, in one go.
# Then a gang that cannot fit (4 x 4 GPUs with heavy max 2): no node at all.
scenario_gang() {
  local cfg
  cfg=$(config_with)
  start_tidepool tp "$cfg"
  local meta="  labels: {scheduling.x-k8s.io/pod-group: g1, job: g1}
  annotations: {tidepool.dev/gang-size: \"4\"}"
  for i in 0 1 2 3; do gpu_pod "g1-$i" 2 "" "$meta" | k apply -f - >/dev/null; done
  wait_until 60 pods_running job=g1 4 || { fail "gang g1 not all Running"; return 1; }
  [[ $(nodes_of heavy) -eq 2 ]] || { fail "expected 2 heavy nodes, got $(nodes_of heavy)"; return 1; }
  grep -q "IncreasePool heavy +2" "$WORK/tp.log" || { fail "the 2 nodes were not one scale-up"; return 1; }

  local big="  labels: {scheduling.x-k8s.io/pod-group: g2, job: g2}
  annotations: {tidepool.dev/gang-size: \"4\"}"
  for i in 0 1 2 3; do gpu_pod "g2-$i" 4 "" "$big" | k apply -f - >/dev/null; done
  wait_until 30 event_for NotTriggerScaleUp g2-0 || { fail "no NotTriggerScaleUp for g2"; return 1; }
  sleep 5
  [[ $(nodes_of heavy) -eq 2 ]] || { fail "part of gang g2 was scaled up"; return 1; }
  [[ $(node_count) -eq 2 ]] || { fail "unexpected nodes: $(node_count)"; return 1; }
  pass
}

# web-a runs alone on node A; web-b and an anchor pod run on node B (the anchor keeps B needed
# and leaves room). One PDB (minAvailable 1) covers both web pods. A is underutilized: tidepool
# taints it, evicts web-a through the Eviction API (the PDB allows one disruption), waits for
# it to go, and deletes the node. The PDB's healthy count, sampled throughout, never drops
# below 1, and no node is left tainted.
web_deployment() {  # web_deployment NAME [NOT_ON_NODE]
  local affinity=""
  if [[ -n ${2:-} ]]; then
    affinity="      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions:
              - {key: kubernetes.io/hostname, operator: NotIn, values: [$2]}"
  fi
  cat <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: $1, namespace: $NS}
spec:
  replicas: 1
  selector: {matchLabels: {app: web, part: $1}}
  template:
    metadata: {labels: {app: web, part: $1}}
    spec:
      nodeSelector: {pool-kind: cpu}
$affinity
      containers:
      - {name: web, image: nginx, resources: {requests: {cpu: 500m, memory: 256Mi}}}
EOF
}

scenario_drain_honours_pdb() {
  local cfg node_a sampler
  cfg=$(config_with)
  start_tidepool tp "$cfg"
  k apply -f - >/dev/null <<EOF
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: $NS}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web}}
EOF
  web_deployment web-a | k apply -f - >/dev/null
  wait_until 60 pods_running part=web-a 1 || { fail "web-a not Running"; return 1; }
  node_a=$(k -n "$NS" get pods -l part=web-a -o jsonpath='{.items[0].spec.nodeName}')
  web_deployment web-b "$node_a" | k apply -f - >/dev/null
  wait_until 60 pods_running part=web-b 1 || { fail "web-b not Running"; return 1; }
  k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: anchor, namespace: $NS}
spec:
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions:
          - {key: kubernetes.io/hostname, operator: NotIn, values: [$node_a]}
          - {key: pool-kind, operator: In, values: [cpu]}
  containers:
  - {name: c, image: busybox, resources: {requests: {cpu: 2500m, memory: 1Gi}}}
EOF
  ( while true; do
      k -n "$NS" get pdb web -o jsonpath='{.status.currentHealthy}{"\n"}' >>"$WORK/healthy"
      sleep 0.3
    done ) &
  sampler=$!
  wait_until 60 pod_running anchor || { kill $sampler; fail "anchor not Running"; return 1; }
  [[ $(nodes_of cpu) -eq 2 ]] || { kill $sampler; fail "expected 2 cpu nodes, got $(nodes_of cpu)"; return 1; }
  wait_until 90 bash -c "! kubectl get node $node_a >/dev/null 2>&1" ||
    { kill $sampler; fail "$node_a was not drained and removed"; return 1; }
  wait_until 60 pods_running app=web 2 || { kill $sampler; fail "web pods not back"; return 1; }
  kill $sampler
  wait $sampler 2>/dev/null
  local min
  min=$(grep -E '^[0-9]+$' "$WORK/healthy" | sort -n | head -1)
  [[ -n $min && $min -ge 1 ]] || { fail "PDB healthy count dropped to ${min:-?}"; return 1; }
  grep -q "EvictPods $node_a" "$WORK/tp.log" || { fail "no eviction logged for $node_a"; return 1; }
  event_for ScaleDown "$node_a" || { fail "no ScaleDown event for $node_a"; return 1; }
  [[ $(tainted_nodes) -eq 0 ]] || { fail "a node was left tainted"; return 1; }
  log "drain: PDB healthy never below $min over $(wc -l <"$WORK/healthy") samples"
  pass
}

# A running Job pod keeps its node (a training pod is not evicted); once it completes, the
# node goes.
scenario_job_keeps_node() {
  local cfg
  cfg=$(config_with)
  start_tidepool tp "$cfg"
  k apply -f - >/dev/null <<EOF
apiVersion: batch/v1
kind: Job
metadata: {name: retrain, namespace: $NS}
spec:
  backoffLimit: 0
  template:
    metadata:
      labels: {job: retrain}
      annotations: {tidepool.dev/run-seconds: "25"}
    spec:
      restartPolicy: Never
      containers:
      - name: train
        image: tensorflow/tensorflow:latest-gpu
        resources: {requests: {cpu: 500m, nvidia.com/gpu: "1"}, limits: {nvidia.com/gpu: "1"}}
EOF
  wait_until 60 pods_running job=retrain 1 || { fail "job pod not Running"; return 1; }
  local node
  node=$(k -n "$NS" get pods -l job=retrain -o jsonpath='{.items[0].spec.nodeName}')
  # unneededTime 6 s + delayAfterAdd 4 s have long passed before the 25 s run ends.
  sleep 15
  k get node "$node" >/dev/null 2>&1 || { fail "the node of a running Job pod was removed"; return 1; }
  [[ $(tainted_nodes) -eq 0 ]] || { fail "the node of a running Job pod was tainted"; return 1; }
  wait_until 60 bash -c "[[ \$(kubectl -n $NS get job retrain -o jsonpath='{.status.succeeded}' 2>/dev/null) == 1 ]]" ||
    { fail "the job did not complete"; return 1; }
  wait_until 60 bash -c "! kubectl get node $node >/dev/null 2>&1" ||
    { fail "the node was not removed after the job completed"; return 1; }
  pass
}

# heavy_pod NAME GPUS: a bare pod asking for GPUs on the heavy pool (4 GPUs per node).
heavy_pod() {
  cat <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: $NS}
spec:
  nodeSelector: {pool-kind: heavy}
  containers:
  - {name: c, image: busybox, resources: {requests: {cpu: "1", nvidia.com/gpu: "$2"}, limits: {nvidia.com/gpu: "$2"}}}
EOF
}

# Consolidation (docs/consolidation.md): a running training pod that holds half of a heavy node
# ($12/h) and could move to the other one. Without checkpoint information its node stays (the
# savings never cover its runtime x what it holds x 2); once it reports a fresh checkpoint and
# a long remaining runtime, it is evicted, its node removed, and the Job runs it again on the
# node that stays.
scenario_consolidation() {
  local cfg port node_t node_a
  cfg=$(config_with 's/gpuUtilizationThreshold: 0.5/gpuUtilizationThreshold: 0.6/')
  port=$(free_port)
  LISTEN=127.0.0.1:$port start_tidepool tp "$cfg"
  { heavy_pod anchor 2; echo ---; heavy_pod filler 2; } | k apply -f - >/dev/null
  wait_until 60 pod_running anchor || { fail "anchor not Running"; return 1; }
  wait_until 60 pod_running filler || { fail "filler not Running"; return 1; }
  node_a=$(k -n "$NS" get pod anchor -o jsonpath='{.spec.nodeName}')
  k apply -f - >/dev/null <<EOF
apiVersion: batch/v1
kind: Job
metadata: {name: finetune, namespace: $NS}
spec:
  backoffLimit: 4
  template:
    metadata:
      labels: {job: finetune}
    spec:
      restartPolicy: Never
      nodeSelector: {pool-kind: heavy}
      containers:
      - name: train
        image: busybox
        resources: {requests: {cpu: "1", nvidia.com/gpu: "2"}, limits: {nvidia.com/gpu: "2"}}
EOF
  wait_until 60 pods_running job=finetune 1 || { fail "finetune not Running"; return 1; }
  node_t=$(k -n "$NS" get pods -l job=finetune -o jsonpath='{.items[0].spec.nodeName}')
  [[ $node_t != "$node_a" ]] || { fail "finetune landed on the anchor's node"; return 1; }
  k -n "$NS" delete pod filler --wait=false >/dev/null  # room for finetune on the anchor's node
  wait_until 30 bash -c "curl -s http://127.0.0.1:$port/status | grep -q 'consolidation does not pay'" ||
    { fail "the status page never said consolidation does not pay"; return 1; }
  sleep 10  # unneededTime 6 s and delayAfterAdd 4 s have passed: the node stays anyway
  k get node "$node_t" >/dev/null 2>&1 || { fail "the node of an unsaved training pod was removed"; return 1; }
  [[ $(tainted_nodes) -eq 0 ]] || { fail "a node was tainted while consolidation did not pay"; return 1; }

  k -n "$NS" annotate pods -l job=finetune --overwrite >/dev/null \
    "tidepool.dev/last-checkpoint=$(date -u +%Y-%m-%dT%H:%M:%SZ)" tidepool.dev/expected-runtime=10h
  wait_until 90 bash -c "! kubectl get node $node_t >/dev/null 2>&1" ||
    { fail "$node_t was not consolidated after the checkpoint"; return 1; }
  wait_until 60 bash -c "[[ \$(kubectl -n $NS get pods -l job=finetune --field-selector=status.phase=Running -o jsonpath='{.items[0].spec.nodeName}') == $node_a ]]" ||
    { fail "finetune did not run again on $node_a"; return 1; }
  grep -q "consolidation pays" "$WORK/tp.log" || { fail "no consolidation logged"; return 1; }
  [[ $(nodes_of heavy) -eq 1 ]] || { fail "expected 1 heavy node, got $(nodes_of heavy)"; return 1; }
  pass
}

# tidepool killed (SIGKILL) right after it asked for nodes, restarted: no duplicate nodes.
scenario_crash_during_scale_up() {
  local cfg pid
  cfg=$(config_with 's/^  bootDelay: 2s/  bootDelay: 8s/')
  start_tidepool tp "$cfg"
  pid=$LAST_PID
  gpu_pod c-0 1 | k apply -f - >/dev/null
  gpu_pod c-1 1 | k apply -f - >/dev/null
  wait_until 30 bash -c "kubectl -n $NS get configmap tidepool-kwok-provider -o jsonpath='{.data.state}' 2>/dev/null | grep gpu- >/dev/null" ||
    { fail "tidepool never asked for nodes"; return 1; }
  kill -KILL "$pid"
  wait "$pid" 2>/dev/null
  log "killed tidepool with nodes booting; restarting"
  start_tidepool tp "$cfg"
  wait_until 60 pod_running c-0 || { fail "c-0 not Running after the restart"; return 1; }
  wait_until 30 pod_running c-1 || { fail "c-1 not Running after the restart"; return 1; }
  sleep 8
  [[ $(nodes_of gpu) -eq 2 ]] || { fail "expected 2 gpu nodes after the restart, got $(nodes_of gpu)"; return 1; }
  [[ $(tainted_nodes) -eq 0 ]] || { fail "a node is left tainted"; return 1; }
  pass
}

lease_holder() { k -n "$NS" get lease tidepool -o jsonpath='{.spec.holderIdentity}'; }

# Two replicas: one leads; kill it and the other takes over within the lease duration (6 s)
# plus a retry period, and acts.
scenario_leader_election() {
  local cfg pa pb holder
  cfg=$(config_with)
  start_tidepool replica-a "$cfg"
  pa=$LAST_PID
  wait_until 20 bash -c "[[ \$(kubectl -n $NS get lease tidepool -o jsonpath='{.spec.holderIdentity}' 2>/dev/null) == replica-a ]]" ||
    { fail "replica-a did not take the lease"; return 1; }
  start_tidepool replica-b "$cfg"
  pb=$LAST_PID
  sleep 4
  [[ $(lease_holder) == replica-a ]] || { fail "the lease moved to $(lease_holder) while a lived"; return 1; }
  grep -q "acting as leader" "$WORK/replica-b.log" && { fail "replica-b acted while a led"; return 1; }
  kill -KILL "$pa"
  wait "$pa" 2>/dev/null
  local t0=$SECONDS
  wait_until 15 bash -c "[[ \$(kubectl -n $NS get lease tidepool -o jsonpath='{.spec.holderIdentity}' 2>/dev/null) == replica-b ]]" ||
    { fail "replica-b did not take over within 15 s"; return 1; }
  log "takeover after $((SECONDS - t0)) s"
  gpu_pod after-failover 1 | k apply -f - >/dev/null
  wait_until 60 pod_running after-failover || { fail "the new leader did not scale up"; return 1; }
  pass
}

# Dynamic Resource Allocation (docs/dra.md): a Deployment whose pods ask for one A100 through a
# ResourceClaimTemplate. The A100 pool grows from zero, the kwok provider publishes its node's
# ResourceSlice, kube-scheduler allocates the claim and the pod runs; the preferred T4 pool never
# grows. The Deployment deleted, the idle node goes.
# The DeviceClass of the DRA scenes' devices.
device_class() {
  cat <<'EOF'
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors: [{cel: {expression: 'device.driver == "gpu.example.com"'}}]
EOF
}
# claim_deployment NAME TEMPLATE: a one-replica Deployment (label app=NAME) whose pods take one
# CPU and a claim from ResourceClaimTemplate TEMPLATE.
claim_deployment() {
  cat <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: $1, namespace: $NS}
spec:
  replicas: 1
  selector: {matchLabels: {app: $1}}
  template:
    metadata: {labels: {app: $1}}
    spec:
      containers:
      - name: train
        image: busybox
        resources:
          requests: {cpu: "1", memory: 1Gi}
          claims: [{name: devices}]
      resourceClaims: [{name: devices, resourceClaimTemplateName: $2}]
EOF
}
dra_objects() {
  device_class
  cat <<EOF
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: a100, namespace: $NS}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.example.com
          selectors:
          - cel: {expression: 'device.attributes["gpu.example.com"].productName == "A100"'}
---
EOF
  claim_deployment dra-train a100
}
dra_pools() {
  cat <<'EOF'
  - name: dra-t4
    min: 0
    max: 2
    priority: 100
    pricePerHour: 0.3
    template:
      labels: {pool-kind: dra}
      capacity: {cpu: "8", memory: 32Gi, pods: "110"}
      devices: [{driver: gpu.example.com, count: 1, attributes: {productName: T4}}]
  - name: dra-a100
    min: 0
    max: 2
    priority: 10
    pricePerHour: 3
    template:
      labels: {pool-kind: dra}
      capacity: {cpu: "8", memory: 32Gi, pods: "110"}
      devices: [{driver: gpu.example.com, count: 2, attributes: {productName: A100}}]
EOF
}
scenario_dra() {
  local cfg node port
  cfg=$(mktemp "$WORK/config.XXXX.yaml")
  { cat "$HERE/config.yaml"; dra_pools; } >"$cfg"
  port=$(free_port)
  LISTEN=127.0.0.1:$port start_tidepool tp "$cfg"
  dra_objects | k apply -f - >/dev/null || { fail "could not create the DRA objects"; return 1; }
  wait_until 90 pods_running app=dra-train 1 || { fail "the DRA pod is not Running within 90 s"; return 1; }
  [[ $(nodes_of dra-a100) -eq 1 ]] || { fail "expected 1 node in pool dra-a100, got $(nodes_of dra-a100)"; return 1; }
  [[ $(nodes_of dra-t4) -eq 0 ]] || { fail "pool dra-t4 grew"; return 1; }
  node=$(k get nodes -l tidepool.dev/pool=dra-a100 -o jsonpath='{.items[0].metadata.name}')
  [[ $(k get resourceslices -o jsonpath="{.items[?(@.spec.nodeName=='$node')].spec.devices[*].name}") == "gpu-0 gpu-1" ]] ||
    { fail "no ResourceSlice with the node's two devices"; return 1; }
  [[ -n $(k -n "$NS" get resourceclaims -o jsonpath='{.items[0].status.allocation.devices.results[0].device}') ]] ||
    { fail "the pod's claim is not allocated"; return 1; }
  # Three replicas: two share the node's two devices, the third opens a second node. Back to two,
  # the ReplicaSet deletes one of the pair (pods on the node with more of them go first), so each
  # node keeps one pod and one allocated device of two. One CPU of eight would make either node
  # removable; the allocated device keeps both (GPU utilization 1/2, threshold 0.5).
  k -n "$NS" scale deployment dra-train --replicas=3 >/dev/null
  wait_until 90 pods_running app=dra-train 3 || { fail "3 DRA pods not Running within 90 s"; return 1; }
  [[ $(nodes_of dra-a100) -eq 2 ]] || { fail "expected 2 dra-a100 nodes, got $(nodes_of dra-a100)"; return 1; }
  k -n "$NS" scale deployment dra-train --replicas=2 >/dev/null
  wait_until 30 bash -c "[[ \$(kubectl -n $NS get pods -l app=dra-train -o name | wc -l) -eq 2 ]]" ||
    { fail "the third replica did not go"; return 1; }
  [[ $(k -n "$NS" get pods -l app=dra-train -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort -u | wc -l) -eq 2 ]] ||
    { fail "the two replicas left do not run on two nodes"; return 1; }
  wait_until 30 bash -c "curl -s http://127.0.0.1:$port/status | grep -q 'gpu utilization 1/2 &gt;= threshold 0.5'" ||
    { fail "the status page does not say the devices keep the nodes"; return 1; }
  sleep 10  # unneededTime 6 s and delayAfterAdd 4 s have passed
  [[ $(nodes_of dra-a100) -eq 2 ]] || { fail "a node with an allocated device was removed"; return 1; }
  # The workload goes: its devices are free, the nodes are idle and go too.
  k -n "$NS" delete deployment dra-train --wait=true --timeout=30s >/dev/null
  wait_until 60 has_nodes dra-a100 0 || { fail "the idle nodes were not removed"; return 1; }
  k delete deviceclass gpu.example.com >/dev/null
  pass
}

# A claim for two devices on one PCIe root (constraints[].matchAttribute). dra-split is preferred
# and has two devices, but on two roots; only dra-paired can hold the pair. A ValidatingAdmission-
# Policy refuses ResourceSlices at first: the new node counts as starting (no second node) and the
# kwok provider keeps publishing until the policy goes; then the scheduler allocates.
dra_match_pools() {
  cat <<'EOF'
  - name: dra-split
    min: 0
    max: 2
    priority: 100
    pricePerHour: 1
    template:
      labels: {pool-kind: dra}
      capacity: {cpu: "8", memory: 32Gi, pods: "110"}
      devices:
      - {driver: gpu.example.com, attributes: {productName: A100, pcieRoot: pci0}}
      - {driver: gpu.example.com, attributes: {productName: A100, pcieRoot: pci1}}
  - name: dra-paired
    min: 0
    max: 2
    priority: 10
    pricePerHour: 2
    template:
      labels: {pool-kind: dra}
      capacity: {cpu: "8", memory: 32Gi, pods: "110"}
      devices: [{driver: gpu.example.com, count: 2, attributes: {productName: A100, pcieRoot: pci0}}]
EOF
}
dra_match_objects() {
  device_class
  cat <<EOF
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: pair, namespace: $NS}
spec:
  spec:
    devices:
      requests: [{name: gpus, exactly: {deviceClassName: gpu.example.com, count: 2}}]
      constraints: [{matchAttribute: gpu.example.com/pcieRoot}]
---
EOF
  claim_deployment dra-pair pair
}
no_slices_policy() {
  cat <<'EOF'
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: e2e-no-slices}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [resource.k8s.io], apiVersions: [v1], operations: [CREATE], resources: [resourceslices]}
  validations: [{expression: "false", message: "e2e: no ResourceSlices for now"}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: e2e-no-slices}
spec: {policyName: e2e-no-slices, validationActions: [Deny]}
EOF
}
slices_refused() {  # (kubectl fails when refused: its words, not its status, tell why)
  local said
  said=$(kubectl --request-timeout=20s create --dry-run=server -f - 2>&1 <<'EOF'
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: e2e-probe}
spec: {driver: gpu.example.com, pool: {name: probe, generation: 1, resourceSliceCount: 1}, nodeName: probe}
EOF
  )
  grep -q "no ResourceSlices for now" <<<"$said"
}
scenario_dra_match() {
  local cfg node
  cfg=$(mktemp "$WORK/config.XXXX.yaml")
  { cat "$HERE/config.yaml"; dra_match_pools; } >"$cfg"
  no_slices_policy | k apply -f - >/dev/null || { fail "could not create the policy"; return 1; }
  wait_until 20 slices_refused || { fail "the policy never refused a ResourceSlice"; return 1; }
  start_tidepool tp "$cfg"
  dra_match_objects | k apply -f - >/dev/null || { fail "could not create the DRA objects"; return 1; }
  wait_until 60 has_nodes dra-paired 1 || { fail "pool dra-paired did not grow"; return 1; }
  node=$(k get nodes -l tidepool.dev/pool=dra-paired -o jsonpath='{.items[0].metadata.name}')
  wait_until 30 grep -q "publishing the gpu.example.com devices of node $node" "$WORK/tp.log" ||
    { fail "no refused publication logged"; return 1; }
  sleep 8  # several passes while the node has no slices: it is starting, not a reason to grow
  [[ $(nodes_of dra-paired) -eq 1 ]] || { fail "a second dra-paired node while the first had no slices"; return 1; }
  k delete validatingadmissionpolicybinding e2e-no-slices >/dev/null
  k delete validatingadmissionpolicy e2e-no-slices >/dev/null
  wait_until 60 pods_running app=dra-pair 1 || { fail "the pair's pod is not Running"; return 1; }
  [[ $(k -n "$NS" get pods -l app=dra-pair -o jsonpath='{.items[0].spec.nodeName}') == "$node" ]] ||
    { fail "the pod does not run on $node"; return 1; }
  [[ $(k -n "$NS" get resourceclaims -o jsonpath='{.items[0].status.allocation.devices.results[*].device}') == "gpu-0 gpu-1" ]] ||
    { fail "the claim is not allocated both devices of $node"; return 1; }
  [[ $(nodes_of dra-split) -eq 0 ]] || { fail "pool dra-split grew"; return 1; }
  [[ $(nodes_of dra-paired) -eq 1 ]] || { fail "expected 1 dra-paired node, got $(nodes_of dra-paired)"; return 1; }
  k -n "$NS" delete deployment dra-pair --wait=true --timeout=30s >/dev/null
  wait_until 60 has_nodes dra-paired 0 || { fail "the idle node was not removed"; return 1; }
  k delete deviceclass gpu.example.com >/dev/null
  pass
}

# A gpu pool with scaleDown {mode: deallocate, maxStopped: 1}, boot 8 s, restart 1 s: of two
# idle nodes one is stopped (its Node deleted, kept in the kwok provider's state ConfigMap), the
# other deleted. A new pod gets the stopped node back under its old name, in less than the boot
# delay, and the status shows the stopped count.
status_says() { grep -qF -- "$1" <<<"$(k -n "$NS" get configmap tidepool-status -o jsonpath='{.data.status}')"; }
scenario_deallocate() {
  local cfg
  cfg=$(config_with 's/^  bootDelay: 2s/  bootDelay: 8s/' \
    '/^  - name: gpu$/a\    scaleDown: {mode: deallocate, maxStopped: 1}\n    restartDelay: 1s')
  start_tidepool tp "$cfg"
  gpu_pod a 1 | k apply -f - >/dev/null
  gpu_pod b 1 | k apply -f - >/dev/null
  wait_until 60 pod_running a || { fail "pod a not Running"; return 1; }
  wait_until 30 pod_running b || { fail "pod b not Running"; return 1; }
  local na nb
  na=$(k -n "$NS" get pod a -o jsonpath='{.spec.nodeName}')
  nb=$(k -n "$NS" get pod b -o jsonpath='{.spec.nodeName}')
  k -n "$NS" delete pod a b --wait=false >/dev/null
  wait_until 60 has_nodes gpu 0 || { fail "the idle gpu nodes were not removed within 60 s"; return 1; }
  local state stopped
  state=$(k -n "$NS" get configmap tidepool-kwok-provider -o jsonpath='{.data.state}')
  stopped=$(jq -r '.stopped.gpu[0].name // empty' <<<"$state")
  [[ $(jq '.stopped.gpu | length' <<<"$state") -eq 1 && ($stopped == "$na" || $stopped == "$nb") ]] ||
    { fail "expected one of $na, $nb stopped in the kwok state: $state"; return 1; }
  grep -q "deleted, not stopped: 1 stopped already (maxStopped 1)" "$WORK/tp.log" ||
    { fail "no removal said why it deleted rather than stopped"; return 1; }
  wait_until 10 status_says "stopped: 1 of maxStopped 1" ||
    { fail "the status does not show the stopped node"; return 1; }
  local t0=$SECONDS
  gpu_pod c 1 | k apply -f - >/dev/null
  wait_until 60 pod_running c || { fail "pod c not Running"; return 1; }
  local took=$((SECONDS - t0)) on
  on=$(k -n "$NS" get pod c -o jsonpath='{.spec.nodeName}')
  [[ $on == "$stopped" ]] || { fail "pod c runs on $on, not the restarted node $stopped"; return 1; }
  ((took < 8)) || { fail "the restart took $took s, not less than the 8 s boot"; return 1; }
  log "deallocate: pod c Running $took s after it was created, on restarted node $on"
  pass
}

# warm.stoppedNodes 2 on a deallocate gpu pool (boot 8 s, restart 1 s): with no pod at all the
# pool gets two nodes, they come up idle and are stopped (kept in the kwok provider's state, no
# gpu Node left), and nothing more is created. A pod then restarts one, faster than a boot.
kwok_stopped() {
  k -n "$NS" get configmap tidepool-kwok-provider -o jsonpath='{.data.state}' | jq ".stopped.$1 | length"
}
kwok_stopped_is() { [[ $(kwok_stopped "$1") -eq $2 ]]; }
scenario_stopped_stock() {
  local cfg
  cfg=$(config_with 's/^  bootDelay: 2s/  bootDelay: 8s/' \
    '/^  - name: gpu$/a\    scaleDown: {mode: deallocate, maxStopped: 2}\n    restartDelay: 1s\n    warm: {stoppedNodes: 2}')
  start_tidepool tp "$cfg"
  wait_until 60 has_nodes gpu 2 || { fail "the stock's two nodes did not come up: $(nodes_of gpu)"; return 1; }
  wait_until 60 kwok_stopped_is gpu 2 || { fail "the stock was not stopped: $(kwok_stopped gpu) stopped"; return 1; }
  wait_until 10 has_nodes gpu 0 || { fail "stopped nodes left Node objects: $(nodes_of gpu)"; return 1; }
  wait_until 10 status_says "stoppedNodes 2 (2 stopped, 0 up, 0 coming)" ||
    { fail "the status does not show the stock"; return 1; }
  sleep 10  # five periodic passes: a stock that is there is not made again
  kwok_stopped_is gpu 2 && has_nodes gpu 0 ||
    { fail "the stock changed: $(kwok_stopped gpu) stopped, $(nodes_of gpu) gpu nodes"; return 1; }
  [[ $(grep -c "node(s) to stop" "$WORK/tp.log") -eq 1 ]] ||
    { fail "expected one stock scale-up in the log: $(grep "to stop" "$WORK/tp.log")"; return 1; }
  local t0=$SECONDS
  gpu_pod c 1 | k apply -f - >/dev/null
  wait_until 60 pod_running c || { fail "pod c not Running"; return 1; }
  local took=$((SECONDS - t0))
  ((took < 8)) || { fail "pod c took $took s, not less than the 8 s boot"; return 1; }
  kwok_stopped_is gpu 1 || { fail "expected one machine still stopped: $(kwok_stopped gpu)"; return 1; }
  log "stopped_stock: pod c Running $took s after it was created, on a stocked machine"
  pass
}

# A CapacityBuffer (autoscaling.x-k8s.io/v1beta1, docs/capacity-buffers.md) of 2 pods of 1 GPU:
# pool gpu grows to 2 idle nodes and keeps them past unneededTime; the buffer's status says so and
# an Event on it tells the scale-up. A real pod taking one node's room makes the pool grow again;
# deleting the buffer (and the pod) lets every node go. The CRD comes from its upstream module
# (deploy/helm/capacitybuffer-crd.sh) and is installed before tidepool starts.
buffer_field() { k -n "$NS" get capacitybuffer gpu-room -o jsonpath="$1"; }
buffer_condition() {  # buffer_condition TYPE: "Status Reason"
  buffer_field "{range .status.conditions[?(@.type==\"$1\")]}{.status} {.reason}{end}"
}
buffer_condition_is() { [[ $(buffer_condition "$1") == "$2" ]]; }
buffer_replicas_are() { [[ $(buffer_field '{.status.replicas}') == "$1" ]]; }
scenario_capacity_buffer() {
  local crd
  crd=$("$ROOT/deploy/helm/capacitybuffer-crd.sh" "$WORK/capacitybuffer-crd.yaml" 2>"$WORK/crd.log" | tail -1) ||
    { fail "could not copy the CapacityBuffer CRD: $(cat "$WORK/crd.log")"; return 1; }
  k apply -f "$crd" >/dev/null || { fail "could not install the CapacityBuffer CRD"; return 1; }
  kubectl wait --for=condition=Established --timeout=30s crd/capacitybuffers.autoscaling.x-k8s.io \
    >/dev/null 2>&1 || { fail "the CapacityBuffer CRD is not established"; return 1; }
  start_tidepool tp "$(config_with)"
  cat <<EOF | k apply -f - >/dev/null || { fail "could not create the PodTemplate and the buffer"; return 1; }
apiVersion: v1
kind: PodTemplate
metadata: {name: gpu-trainer, namespace: $NS}
template:
  spec:
    nodeSelector: {pool-kind: gpu}
    containers:
    - name: train
      image: busybox
      resources: {requests: {cpu: "1", memory: 1Gi, nvidia.com/gpu: "1"}, limits: {nvidia.com/gpu: "1"}}
---
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata: {name: gpu-room, namespace: $NS}
spec:
  podTemplateRef: {name: gpu-trainer}
  replicas: 2
EOF
  wait_until 60 has_nodes gpu 2 || { fail "pool gpu did not grow to 2 nodes for the buffer: $(nodes_of gpu)"; return 1; }
  wait_until 20 buffer_replicas_are 2 || { fail "status.replicas is not 2: $(buffer_field '{.status}')"; return 1; }
  [[ $(buffer_field '{.status.podTemplateRef.name}') == gpu-trainer ]] ||
    { fail "status.podTemplateRef is not gpu-trainer: $(buffer_field '{.status}')"; return 1; }
  buffer_condition_is ReadyForProvisioning "True Resolved" ||
    { fail "ReadyForProvisioning is not True Resolved: $(buffer_field '{.status.conditions}')"; return 1; }
  wait_until 20 buffer_condition_is Provisioning "True FitsExistingCapacity" ||
    { fail "Provisioning is not True FitsExistingCapacity: $(buffer_field '{.status.conditions}')"; return 1; }
  wait_until 10 event_for TriggeredScaleUp gpu-room || { fail "no TriggeredScaleUp Event on the buffer"; return 1; }
  wait_until 10 status_says "buffer/$NS/gpu-room" || { fail "the status does not show the buffer"; return 1; }
  # Idle past unneededTime (6 s) and delayAfterAdd (4 s): kept, and nothing more added.
  sleep 15
  [[ $(nodes_of gpu) -eq 2 && $(node_count) -eq 2 ]] ||
    { fail "the buffer's room was not kept: $(nodes_of gpu) gpu nodes, $(node_count) in all"; return 1; }
  [[ $(tainted_nodes) -eq 0 ]] || { fail "a node of the buffer's room is being removed"; return 1; }
  # A real pod takes one node's room: the buffer grows the pool for its copy again.
  gpu_pod job 1 | k apply -f - >/dev/null
  wait_until 30 pod_running job || { fail "pod job not Running"; return 1; }
  wait_until 60 has_nodes gpu 3 || { fail "the buffer did not make its room again: $(nodes_of gpu) gpu nodes"; return 1; }
  # Deleted, with the pod: every node goes.
  k -n "$NS" delete capacitybuffer gpu-room >/dev/null || { fail "could not delete the buffer"; return 1; }
  k -n "$NS" delete pod job --wait=false >/dev/null
  wait_until 90 has_nodes gpu 0 || { fail "the nodes were not removed after the buffer was deleted: $(nodes_of gpu)"; return 1; }
  pass
}

ALL=(scale_from_zero two_pods_two_nodes spot_fallback zone_twins gang drain_honours_pdb job_keeps_node
  consolidation deallocate stopped_stock crash_during_scale_up leader_election dra dra_match capacity_buffer)
fresh_scenario() {
  rm -f "$WORK"/*.log
  reset_cluster
}
run_scenarios fresh_scenario ALL "$@"
stop_all_tidepool

scenario_summary
