#!/usr/bin/env bash
# End-to-end tests of `tidepool run` with provider azure-vmss on the real control plane (testenv/),
# against tidepool-fake-arm: ARM + Azure AD on 127.0.0.1, whose scale sets register and remove
# Node objects as real VMs would (kwok runs them). Scenarios: scale from zero, spot -> on-demand
# fallback on AllocationFailed, half of a scale-up failing, a spot eviction, scale down by
# instance id, a deallocate pool (stop, start before create, the cap, a failed start), and no
# credential in anything tidepool shows or writes.
# Usage: azure_e2e_test.sh TIDEPOOL FAKE_ARM SHARED_DIR [SCENARIO...]   (no scenario: all)
#
# Each scenario starts from an empty cluster and a fresh fake (scale sets at capacity 0), runs
# tidepool as a separate process, and checks both sides: the fake's scale sets and the ARM calls
# it received, and the cluster's Nodes and pods. Prints "PASS name" / "FAIL name: why" and a
# summary; exits 0 iff every scenario passed. Logs of a failed scenario are printed.
set -uo pipefail

TIDEPOOL=${1:?usage: azure_e2e_test.sh TIDEPOOL FAKE_ARM SHARED_DIR [SCENARIO...]}
FAKE_ARM=${2:?usage: azure_e2e_test.sh TIDEPOOL FAKE_ARM SHARED_DIR [SCENARIO...]}
SHARED_DIR=${3:?usage: azure_e2e_test.sh TIDEPOOL FAKE_ARM SHARED_DIR [SCENARIO...]}
shift 3
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tidepool-azure-e2e.XXXXXX")
source "$HERE/lib.sh"
NS=e2e
FAKE_PID=""
FAKE_URL=""

SUBSCRIPTION=8c1a2e7b-5d41-4f0e-9b3a-2f6d7c8e9a10
RESOURCE_GROUP=MC_mlcluster-rg
TENANT=72f988bf-86f1-41af-91ab-2d7cd011db47
CLIENT_ID=0f8d6a3c-2b1e-4d5f-9a7c-6e5b4d3c2a10
# A fresh secret per run, so finding it in a log can only mean it was logged.
SECRET="e2e-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
SECRET_FILE=$WORK/client-secret
printf '%s\n' "$SECRET" >"$SECRET_FILE"
chmod 600 "$SECRET_FILE"
SS_CPU=k8s-cpu-29744472-vmss
SS_SPOT=k8s-gpuspot-29744472-vmss
SS_GPU=k8s-gpu-29744472-vmss

cleanup() {
  stop_all_tidepool
  stop_fake
  e2e_disconnect
  rm -rf "$WORK"
}
trap cleanup EXIT

e2e_connect

# ---- helpers ---------------------------------------------------------------------------------

# start_fake [ARGS...]: tidepool-fake-arm with the three scale sets at capacity 0, registering
# Nodes 2 s after their VM succeeded; its log in $WORK/fake-arm.log, its URL in FAKE_URL.
start_fake() {
  "$FAKE_ARM" --shared-dir "$SHARED_DIR" --kubeconfig "$KUBECONFIG" --boot-delay 2s \
    --subscription "$SUBSCRIPTION" --resource-group "$RESOURCE_GROUP" --tenant "$TENANT" \
    --client-id "$CLIENT_ID" --client-secret-file "$SECRET_FILE" --retry-after 1s \
    --scale-set "name=$SS_CPU,sku=Standard_D2_v2,capacity=0,tag.poolName=cpu" \
    --scale-set "name=$SS_SPOT,sku=Standard_NC6,capacity=0,spot=true,tag.poolName=gpu-spot" \
    --scale-set "name=$SS_GPU,sku=Standard_NC6,capacity=0,tag.poolName=gpu" \
    "$@" >"$WORK/fake.out" 2>>"$WORK/fake-arm.log" &
  FAKE_PID=$!
  wait_until 10 grep -q '^listening http' "$WORK/fake.out" || return 1
  FAKE_URL=$(sed -n 's/^listening //p' "$WORK/fake.out" | head -1)
}

# stop_fake: SIGTERM; FAKE_RC is its exit code (0 when it stopped cleanly).
stop_fake() {
  FAKE_RC=""
  [[ -n $FAKE_PID ]] || return 0
  kill -TERM "$FAKE_PID" 2>/dev/null
  wait "$FAKE_PID" 2>/dev/null
  FAKE_RC=$?
  FAKE_PID=""
}

fake_get() { curl -s --max-time 5 "$FAKE_URL/_fake/$1"; }
fake_post() { curl -s --max-time 5 -d "" "$FAKE_URL/_fake/$1"; }
capacity_of() { fake_get scale-sets | jq -r --arg s "$1" '.[$s].capacity'; }
has_capacity() { [[ $(capacity_of "$1") == "$2" ]]; }
# requests_to METHOD PATH_PART: the ARM requests received, one JSON object per line.
requests_to() { fake_get "requests?method=$1&path=$2" | jq -c '.[]'; }
count_requests() { requests_to "$1" "$2" | grep -c .; }

# The azure-vmss config: pools cpu, gpu-spot (priority 100) and gpu (on-demand fallback) on the
# fake's scale sets, with timers short enough for a test run.
write_config() {
  cat >"$WORK/config.yaml" <<EOF
apiVersion: tidepool.dev/v1alpha1
kind: AutoscalerConfig
provider:
  type: azure-vmss
  subscriptionId: $SUBSCRIPTION
  resourceGroup: $RESOURCE_GROUP
  armEndpoint: $FAKE_URL
  authorityHost: $FAKE_URL
  requestTimeout: 10s
  stockoutHold: 3m
  auth:
    type: clientSecret
    tenantId: $TENANT
    clientId: $CLIENT_ID
    clientSecretFile: $SECRET_FILE
  scaleSets:
    cpu: $SS_CPU
    gpu-spot: $SS_SPOT
    gpu: $SS_GPU
scanInterval: 2s
scaleUp:
  expanders: [priority, least-waste]
  provisionTimeout: 60s
  batchIdle: 1s
  batchMax: 5s
  backoff: {initial: 60s, max: 120s}
scaleDown:
  enabled: true
  utilizationThreshold: 0.5
  gpuUtilizationThreshold: 0.5
  unneededTime: 6s
  delayAfterAdd: 4s
  maxPodEvictionTime: 12s
pools:
  - name: cpu
    min: 0
    max: 5
    priority: 10
    pricePerHour: 0.146
    instanceType: Standard_D2_v2
    template:
      capacity: {cpu: "2", memory: 7Gi, pods: "110"}
  - name: gpu-spot
    min: 0
    max: 4
    capacityType: spot
    priority: 100
    pricePerHour: 0.18
    instanceType: Standard_NC6
    template:
      labels: {kubernetes.azure.com/scalesetpriority: spot}
      taints:
        - {key: kubernetes.azure.com/scalesetpriority, value: spot, effect: NoSchedule}
      capacity: {cpu: "6", memory: 56Gi, nvidia.com/gpu: "1", pods: "110"}
  - name: gpu
    min: 0
    max: 4
    priority: 10
    pricePerHour: 0.90
    instanceType: Standard_NC6
    template:
      capacity: {cpu: "6", memory: 56Gi, nvidia.com/gpu: "1", pods: "110"}
EOF
  # GPU_SCALE_DOWN (e.g. "{mode: deallocate, maxStopped: 1}"): the gpu pool's scaleDown.
  [[ -z ${GPU_SCALE_DOWN:-} ]] || echo "    scaleDown: $GPU_SCALE_DOWN" >>"$WORK/config.yaml"
  echo "$WORK/config.yaml"
}




power_of() { fake_get scale-sets | jq -r --arg s "$1" --arg i "$2" '.[$s].instances[] | select(.id == $i) | .power'; }
has_power() { [[ $(power_of "$1" "$2") == "$3" ]]; }

# Nodes of a pool by the agentpool label the fake's VMs register with (as aks-engine's do).
nodes_of() { k get nodes -l "agentpool=$1" -o name | wc -l; }
has_nodes() { [[ $(nodes_of "$1") -eq $2 ]]; }
pod_node() { k -n "$NS" get pod "$1" -o jsonpath='{.spec.nodeName}'; }
node_gone() { ! kubectl --request-timeout=20s get node "$1" >/dev/null 2>&1; }

reset_cluster() {
  stop_all_tidepool
  stop_fake
  k delete namespace "$NS" --wait=true --timeout=60s >/dev/null
  k delete nodes --all --wait=false >/dev/null
  wait_until 60 bash -c "[[ \$(kubectl get nodes -o name 2>/dev/null | wc -l) -eq 0 ]]" || true
  k create namespace "$NS" >/dev/null
  wait_until 30 k -n "$NS" get serviceaccount default || true
}

# gpu_pod_spec GPUS [spot]: the spec of a training pod asking for GPUS GPUs (tolerating spot).
gpu_pod_spec() {
  local gpus=$1 spot=${2:-}
  if [[ $spot == spot ]]; then
    echo 'tolerations: [{key: kubernetes.azure.com/scalesetpriority, operator: Equal, value: spot, effect: NoSchedule}]'
  fi
  cat <<EOF
terminationGracePeriodSeconds: 0
containers:
- name: train
  image: tensorflow/tensorflow:latest-gpu
  resources:
    requests: {cpu: "1", memory: 1Gi, nvidia.com/gpu: "$gpus"}
    limits: {nvidia.com/gpu: "$gpus"}
EOF
}

# gpu_pod NAME GPUS [spot]: the manifest of a bare pod.
gpu_pod() {
  printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: %s, namespace: %s}\nspec:\n' "$1" "$NS"
  gpu_pod_spec "$2" "${3:-}" | sed 's/^/  /'
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
    tail -40 "$f" | sed "s/$SECRET/<the client secret>/g"
  done
  if [[ -n $FAKE_URL ]]; then
    echo "---- fake scale sets: $(fake_get scale-sets)"
    echo "---- ARM writes received (token requests left out):"
    fake_get requests | jq -r '.[] | select(.method != "GET" and (.path | contains("/oauth2/") | not)) |
      "\(.method) \(.path) \(.body)"' | sed "s/$SECRET/<the client secret>/g"
  fi
  k get nodes -o wide --show-labels
  k -n "$NS" get pods -o wide
  return 1
}
pass() {
  echo "PASS $CURRENT"
  PASSED+=("$CURRENT")
}

# The client secret reached the fake (tidepool authenticated) but no log line.
secret_not_logged() {
  if grep -qF -- "$SECRET" "$WORK"/tp.log; then
    fail "the client secret appears in tidepool's log"
    return 1
  fi
}

# start_both [FAKE_ARGS...]: a fresh fake and tidepool against it.
start_both() {
  start_fake "$@" || { fail "tidepool-fake-arm did not start"; return 1; }
  local cfg
  cfg=$(write_config)
  start_tidepool tp "$cfg"
}

# ---- scenarios -------------------------------------------------------------------------------

# One 1-GPU pod, no GPU VM anywhere: the on-demand scale set grows 0 -> 1 by a capacity PATCH, its
# VM registers a Node (labels and capacity from the scale set), the pod runs there, and nothing
# more is asked for.
scenario_scale_from_zero() {
  local port
  port=$(free_port)
  LISTEN=127.0.0.1:$port start_both || return 1
  local t0=$SECONDS
  gpu_pod train-1 1 | k apply -f - >/dev/null || { fail "could not create the pod"; return 1; }
  wait_until 30 has_capacity "$SS_GPU" 1 || { fail "scale set $SS_GPU not at capacity 1 within 30 s"; return 1; }
  wait_until 30 has_nodes gpu 1 || { fail "no Node of pool gpu within 30 s of the VM"; return 1; }
  wait_until 30 pod_running train-1 || { fail "pod not Running within 30 s of the Node"; return 1; }
  log "scale from zero: pod Running after $((SECONDS - t0)) s"
  local node want_pid
  node=$(pod_node train-1)
  want_pid="azure:///subscriptions/$SUBSCRIPTION/resourceGroups/$RESOURCE_GROUP/providers/Microsoft.Compute/virtualMachineScaleSets/$SS_GPU/virtualMachines/0"
  [[ $node == "${SS_GPU}000000" ]] || { fail "pod runs on $node, not the VM's node ${SS_GPU}000000"; return 1; }
  [[ $(k get node "$node" -o jsonpath='{.spec.providerID}') == "$want_pid" ]] ||
    { fail "node $node has providerID $(k get node "$node" -o jsonpath='{.spec.providerID}')"; return 1; }
  [[ $(k get node "$node" -o jsonpath='{.status.capacity.nvidia\.com/gpu}') == 1 ]] ||
    { fail "node $node does not have the NC6's one GPU"; return 1; }
  # The increase was one PATCH of sku.capacity to 1, with the ETag precondition.
  local patches
  patches=$(requests_to PATCH "/virtualMachineScaleSets/$SS_GPU")
  [[ $(grep -c . <<<"$patches") -eq 1 ]] || { fail "expected 1 PATCH of $SS_GPU, got: $patches"; return 1; }
  jq -e '.body | fromjson | .sku.capacity == 1' <<<"$patches" >/dev/null ||
    { fail "the PATCH did not set capacity 1: $patches"; return 1; }
  wait_until 10 event_for TriggeredScaleUp train-1 || { fail "no TriggeredScaleUp event"; return 1; }
  # Stable: no second VM in the next scan intervals.
  sleep 5
  [[ $(capacity_of "$SS_GPU") -eq 1 && $(capacity_of "$SS_SPOT") -eq 0 && $(capacity_of "$SS_CPU") -eq 0 ]] ||
    { fail "more VMs than needed: $(fake_get scale-sets)"; return 1; }
  [[ $(node_count) -eq 1 ]] || { fail "expected 1 node in all, got $(node_count)"; return 1; }
  # The ARM requests are counted by operation and status, the PATCH exactly once.
  local metrics
  metrics=$(curl -s "http://127.0.0.1:$port/metrics")
  grep -q '^tidepool_cloud_requests_total{provider="azure-vmss",operation="PATCH virtualMachineScaleSets",code="200"} 1$' <<<"$metrics" ||
    { fail "/metrics does not count the PATCH: $(grep '^tidepool_cloud_requests_total' <<<"$metrics")"; return 1; }
  grep -q '^tidepool_cloud_requests_total{provider="azure-vmss",operation="GET virtualMachineScaleSets/virtualMachines",code="200"} [1-9]' <<<"$metrics" ||
    { fail "/metrics does not count the instance reads"; return 1; }
  secret_not_logged || return 1
  stop_all_tidepool
  stop_fake
  [[ $FAKE_RC == 0 ]] || { fail "tidepool-fake-arm did not stop cleanly on SIGTERM (exit $FAKE_RC)"; return 1; }
  pass
}

# A spot-tolerating pod: tidepool tries the spot scale set first (priority 100); its new VM fails
# with AllocationFailed. tidepool must see the stockout, delete the failed VM, and scale the
# on-demand scale set instead, quickly, and the pod runs on the on-demand node.
scenario_spot_fallback() {
  start_both || return 1
  grep -q '"ok"' <<<"$(fake_post "fail-next-scale-up?code=AllocationFailed")" ||
    { fail "could not script the AllocationFailed"; return 1; }
  local t0=$SECONDS
  gpu_pod spotty 1 spot | k apply -f - >/dev/null || { fail "could not create the pod"; return 1; }
  wait_until 30 has_capacity "$SS_GPU" 1 || { fail "no on-demand VM within 30 s"; return 1; }
  local dt=$((SECONDS - t0))
  wait_until 30 pod_running spotty || { fail "pod not Running on the fallback node"; return 1; }
  log "spot fallback: on-demand capacity after $dt s, pod Running after $((SECONDS - t0)) s"
  [[ $(k get node "$(pod_node spotty)" -o jsonpath='{.metadata.labels.agentpool}') == gpu ]] ||
    { fail "the pod runs on $(pod_node spotty), not an on-demand gpu node"; return 1; }
  # The spot scale set was asked first, and its failed VM was deleted again.
  [[ $(count_requests PATCH "/virtualMachineScaleSets/$SS_SPOT") -ge 1 ]] ||
    { fail "the spot scale set was never asked (priority expander)"; return 1; }
  wait_until 15 has_capacity "$SS_SPOT" 0 || { fail "the spot scale set kept the failed VM: $(fake_get scale-sets)"; return 1; }
  [[ $(count_requests POST "/virtualMachineScaleSets/$SS_SPOT/delete") -ge 1 ]] ||
    { fail "the failed spot VM was not deleted with POST .../delete"; return 1; }
  [[ $(nodes_of gpu-spot) -eq 0 ]] || { fail "a spot node appeared"; return 1; }
  grep -q "AllocationFailed" "$WORK/tp.log" || { fail "tidepool's log does not name AllocationFailed"; return 1; }
  # Cancelling the request whose VM failed is no conflict: that VM is gone already.
  if grep -q "DecreaseTarget failed" "$WORK/tp.log"; then
    fail "cancelling the failed spot request failed: $(grep "DecreaseTarget failed" "$WORK/tp.log" | head -1)"
    return 1
  fi
  sleep 4
  [[ $(capacity_of "$SS_GPU") -eq 1 && $(capacity_of "$SS_SPOT") -eq 0 ]] ||
    { fail "capacity moved after the fallback: $(fake_get scale-sets)"; return 1; }
  secret_not_logged || return 1
  pass
}

# Half of a scale-up fails: two spot-tolerating pods make tidepool ask the spot scale set for
# two VMs; the first fails with AllocationFailed, the second comes up. tidepool must keep the
# good VM, delete the failed one, back the spot pool off and put the second pod on an on-demand
# VM: in the end spot capacity 1, on-demand capacity 1, both pods Running, nothing else.
scenario_partial_scale_up() {
  start_both || return 1
  grep -q '"ok"' <<<"$(fake_post "fail-next-scale-up?code=AllocationFailed&instances=1")" ||
    { fail "could not script the partial failure"; return 1; }
  local t0=$SECONDS
  gpu_pod p1 1 spot | k apply -f - >/dev/null
  gpu_pod p2 1 spot | k apply -f - >/dev/null
  wait_until 60 pod_running p1 || { fail "p1 not Running within 60 s"; return 1; }
  wait_until 60 pod_running p2 || { fail "p2 not Running within 60 s"; return 1; }
  log "partial scale-up: both pods Running after $((SECONDS - t0)) s"
  wait_until 15 has_capacity "$SS_SPOT" 1 || { fail "spot capacity is not 1: $(fake_get scale-sets)"; return 1; }
  [[ $(capacity_of "$SS_GPU") -eq 1 ]] || { fail "on-demand capacity is not 1: $(fake_get scale-sets)"; return 1; }
  [[ $(fake_get scale-sets | jq -r --arg s "$SS_SPOT" '[.[$s].instances[] | select(.state != "Succeeded")] | length') -eq 0 ]] ||
    { fail "a failed spot VM was kept: $(fake_get scale-sets)"; return 1; }
  [[ $(nodes_of gpu-spot) -eq 1 && $(nodes_of gpu) -eq 1 ]] ||
    { fail "expected 1 spot and 1 on-demand node, got $(nodes_of gpu-spot) and $(nodes_of gpu)"; return 1; }
  sleep 5  # stable: no further VM
  [[ $(capacity_of "$SS_SPOT") -eq 1 && $(capacity_of "$SS_GPU") -eq 1 && $(capacity_of "$SS_CPU") -eq 0 ]] ||
    { fail "capacity moved: $(fake_get scale-sets)"; return 1; }
  [[ $(node_count) -eq 2 ]] || { fail "expected 2 nodes, got $(node_count)"; return 1; }
  grep -q "AllocationFailed" "$WORK/tp.log" || { fail "tidepool's log does not name AllocationFailed"; return 1; }
  pass
}

# evictee_running: the node of the Deployment's Running pod in RUNNING_ON; false when none runs.
RUNNING_ON=""
evictee_running() {
  RUNNING_ON=$(k -n "$NS" get pods -l app=evictee \
    -o jsonpath='{range .items[?(@.status.phase=="Running")]}{.spec.nodeName}{"\n"}{end}' | head -1)
  [[ -n $RUNNING_ON ]]
}
evictee_moved_from() { evictee_running && [[ $RUNNING_ON != "$1" ]]; }

# A spot VM is evicted (evictionPolicy Delete: the VM, its capacity and its Node go, no API call
# by tidepool). The Deployment's pod is recreated and pending; tidepool must scale again and the
# GPU pools must end at exactly one VM for the one pod, no node left tainted.
scenario_spot_eviction() {
  start_both || return 1
  { cat <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: evictee, namespace: $NS}
spec:
  replicas: 1
  selector: {matchLabels: {app: evictee}}
  template:
    metadata: {labels: {app: evictee}}
    spec:
EOF
    gpu_pod_spec 1 spot | sed 's/^/      /'
  } | k apply -f - >/dev/null || { fail "could not create the Deployment"; return 1; }
  wait_until 60 evictee_running || { fail "the Deployment's pod is not Running within 60 s"; return 1; }
  local first=$RUNNING_ON
  [[ $(k get node "$first" -o jsonpath='{.metadata.labels.agentpool}') == gpu-spot ]] ||
    { fail "the pod runs on $first, not a spot node"; return 1; }
  local pid id
  pid=$(k get node "$first" -o jsonpath='{.spec.providerID}')
  id=${pid##*/virtualMachines/}
  grep -q '"ok"' <<<"$(fake_post "evict?scaleSet=$SS_SPOT&instanceId=$id")" ||
    { fail "could not evict $SS_SPOT/$id"; return 1; }
  local t0=$SECONDS
  log "spot eviction: evicted $SS_SPOT/$id (node $first)"
  wait_until 30 node_gone "$first" || { fail "the evicted VM's node $first is still there"; return 1; }
  wait_until 150 evictee_moved_from "$first" || { fail "the pod did not run again within 150 s of the eviction"; return 1; }
  log "spot eviction: the pod runs again on $RUNNING_ON, $((SECONDS - t0)) s after the eviction"
  sleep 5
  local spot od
  spot=$(capacity_of "$SS_SPOT") od=$(capacity_of "$SS_GPU")
  ((spot + od == 1)) || { fail "expected one GPU VM in all after the eviction: $(fake_get scale-sets)"; return 1; }
  [[ $(node_count) -eq 1 ]] || { fail "expected 1 node, got $(node_count)"; return 1; }
  [[ $(tainted_nodes) -eq 0 ]] || { fail "a node was left tainted"; return 1; }
  pass
}

# Two 1-GPU pods on two new VMs (instances 0 and 1). The pod on instance 0 is deleted: its node
# is unneeded, tidepool taints it and removes exactly that VM with POST .../delete naming the
# instance id from the node's providerID. (A capacity PATCH down would remove the newest VM,
# instance 1, which still runs a pod.) The capacity drops, the Node goes, the other node and its
# pod stay, and no node is left tainted.
scenario_scale_down_by_instance_id() {
  start_both || return 1
  gpu_pod a 1 | k apply -f - >/dev/null
  gpu_pod b 1 | k apply -f - >/dev/null
  wait_until 60 pod_running a || { fail "pod a not Running"; return 1; }
  wait_until 30 pod_running b || { fail "pod b not Running"; return 1; }
  wait_until 10 has_capacity "$SS_GPU" 2 || { fail "expected capacity 2: $(fake_get scale-sets)"; return 1; }
  local node="${SS_GPU}000000" victim keeper keep pid id
  if [[ $(pod_node a) == "$node" ]]; then victim=a keeper=b; else victim=b keeper=a; fi
  [[ $(pod_node $victim) == "$node" ]] || { fail "no pod runs on $node (a: $(pod_node a), b: $(pod_node b))"; return 1; }
  keep=$(pod_node $keeper)
  [[ -n $keep && $keep != "$node" ]] || { fail "pods a and b share node $node"; return 1; }
  pid=$(k get node "$node" -o jsonpath='{.spec.providerID}')
  id=${pid##*/virtualMachines/}
  [[ $id == 0 ]] || { fail "node $node has providerID $pid, not instance 0"; return 1; }
  local patches_before t0=$SECONDS
  patches_before=$(count_requests PATCH "/virtualMachineScaleSets/$SS_GPU")
  k -n "$NS" delete pod "$victim" --wait=false >/dev/null
  # unneededTime 6 s after delayAfterAdd 4 s: the node should go well within 45 s.
  wait_until 45 node_gone "$node" || { fail "node $node was not removed within 45 s"; return 1; }
  log "scale down: $node gone $((SECONDS - t0)) s after its pod was deleted"
  local deletes
  deletes=$(requests_to POST "/virtualMachineScaleSets/$SS_GPU/delete")
  [[ $(grep -c . <<<"$deletes") -eq 1 ]] || { fail "expected one POST .../delete, got: $deletes"; return 1; }
  jq -e --arg id "$id" '.body | fromjson | .instanceIds == [$id]' <<<"$deletes" >/dev/null ||
    { fail "POST .../delete did not name instance $id only: $deletes"; return 1; }
  [[ $(count_requests PATCH "/virtualMachineScaleSets/$SS_GPU") -eq $patches_before ]] ||
    { fail "capacity was PATCHed during the scale-down: $(requests_to PATCH "/virtualMachineScaleSets/$SS_GPU")"; return 1; }
  wait_until 10 has_capacity "$SS_GPU" 1 || { fail "capacity did not drop to 1: $(fake_get scale-sets)"; return 1; }
  [[ $(fake_get scale-sets | jq -r --arg s "$SS_GPU" '[.[$s].instances[].id] | join(",")') == 1 ]] ||
    { fail "expected only instance 1 left in $SS_GPU: $(fake_get scale-sets)"; return 1; }
  grep -q "TaintNode $node" "$WORK/tp.log" || { fail "tidepool did not taint $node before deleting it"; return 1; }
  grep -q "DeleteNode $node" "$WORK/tp.log" || { fail "no DeleteNode $node in tidepool's log"; return 1; }
  wait_until 5 grep -q "VM $SS_GPU/$id deleted" "$WORK/fake-arm.log" || { fail "the fake did not delete VM $id"; return 1; }
  wait_until 10 event_for ScaleDown "$node" || { fail "no ScaleDown event for $node"; return 1; }
  # The other node keeps its pod and its VM.
  sleep 4
  pod_running $keeper || { fail "pod $keeper is no longer Running"; return 1; }
  k get node "$keep" >/dev/null 2>&1 || { fail "node $keep of the running pod was removed"; return 1; }
  [[ $(capacity_of "$SS_GPU") -eq 1 ]] || { fail "capacity changed again: $(fake_get scale-sets)"; return 1; }
  [[ $(tainted_nodes) -eq 0 ]] || { fail "a node was left tainted"; return 1; }
  secret_not_logged || return 1
  pass
}

# A gpu pool with scaleDown {mode: deallocate, maxStopped: 1}. Two nodes go idle: one is
# deallocated (POST .../deallocate), the other deleted because one is stopped already (the cap).
# One pod then starts the stopped instance (POST .../start, no capacity PATCH: no create) and runs
# on the same node name. That node goes idle and is stopped again; its next start fails
# (scripted), the failed instance is deleted and the pod gets a new VM by a capacity PATCH
# (after the provision timeout and backoff, as for a failed create).
scenario_deallocate() {
  GPU_SCALE_DOWN="{mode: deallocate, maxStopped: 1}" start_both || return 1
  gpu_pod a 1 | k apply -f - >/dev/null
  gpu_pod b 1 | k apply -f - >/dev/null
  wait_until 60 pod_running a || { fail "pod a not Running"; return 1; }
  wait_until 30 pod_running b || { fail "pod b not Running"; return 1; }
  wait_until 10 has_capacity "$SS_GPU" 2 || { fail "expected capacity 2: $(fake_get scale-sets)"; return 1; }
  k -n "$NS" delete pod a b --wait=false >/dev/null
  wait_until 60 has_nodes gpu 0 || { fail "the two idle gpu nodes were not removed within 60 s"; return 1; }
  wait_until 10 has_capacity "$SS_GPU" 1 || { fail "capacity should keep the stopped instance only: $(fake_get scale-sets)"; return 1; }
  local dealloc stopped
  dealloc=$(requests_to POST "/virtualMachineScaleSets/$SS_GPU/deallocate")
  [[ $(grep -c . <<<"$dealloc") -eq 1 ]] || { fail "expected one POST .../deallocate, got: $dealloc"; return 1; }
  [[ $(count_requests POST "/virtualMachineScaleSets/$SS_GPU/delete") -eq 1 ]] ||
    { fail "expected one POST .../delete: $(requests_to POST "/$SS_GPU/delete")"; return 1; }
  stopped=$(jq -r '.body | fromjson | .instanceIds[0]' <<<"$dealloc")
  wait_until 10 has_power "$SS_GPU" "$stopped" deallocated || { fail "instance $stopped not deallocated: $(fake_get scale-sets)"; return 1; }
  grep -q "deleted, not stopped: 1 stopped already (maxStopped 1)" "$WORK/tp.log" ||
    { fail "no removal said why it deleted rather than stopped"; return 1; }

  # A burst of one: the stopped instance starts; nothing is created.
  local patches t0=$SECONDS
  patches=$(count_requests PATCH "/virtualMachineScaleSets/$SS_GPU")
  gpu_pod c 1 | k apply -f - >/dev/null
  wait_until 60 pod_running c || { fail "pod c not Running"; return 1; }
  log "deallocate: pod c Running $((SECONDS - t0)) s after it was created, on a restarted VM"
  [[ $(count_requests POST "/virtualMachineScaleSets/$SS_GPU/start") -eq 1 ]] ||
    { fail "expected one POST .../start: $(requests_to POST "/$SS_GPU/start")"; return 1; }
  jq -e --arg id "$stopped" '.body | fromjson | .instanceIds == [$id]' \
    <<<"$(requests_to POST "/$SS_GPU/start")" >/dev/null || { fail "the start did not name instance $stopped"; return 1; }
  [[ $(count_requests PATCH "/virtualMachineScaleSets/$SS_GPU") -eq $patches ]] ||
    { fail "capacity was PATCHed (a create) although a stopped instance was there"; return 1; }
  [[ $(pod_node c) == "${SS_GPU}$(printf '%06d' "$stopped")" ]] ||
    { fail "pod c runs on $(pod_node c), not the restarted VM"; return 1; }

  # Idle again: stopped again. Its next start fails; the pod gets a new VM.
  k -n "$NS" delete pod c --wait=false >/dev/null
  wait_until 60 has_power "$SS_GPU" "$stopped" deallocated || { fail "instance $stopped not deallocated again"; return 1; }
  wait_until 30 has_nodes gpu 0 || { fail "the stopped node's Node object is still there"; return 1; }
  fake_post "fail-next-start?code=VMStartTimedOut" >/dev/null
  patches=$(count_requests PATCH "/virtualMachineScaleSets/$SS_GPU")
  gpu_pod d 1 | k apply -f - >/dev/null
  # As after a failed create: the failed instance is deleted, the request runs into the pool's
  # provisionTimeout (60 s) and backoff (60 s), then the pod's next scale-up creates.
  wait_until 240 pod_running d || { fail "pod d not Running after the failed start"; return 1; }
  [[ $(count_requests POST "/virtualMachineScaleSets/$SS_GPU/start") -eq 2 ]] ||
    { fail "expected a second POST .../start"; return 1; }
  [[ $(count_requests PATCH "/virtualMachineScaleSets/$SS_GPU") -gt $patches ]] ||
    { fail "no capacity PATCH (create) after the failed start"; return 1; }
  [[ $(pod_node d) != "${SS_GPU}$(printf '%06d' "$stopped")" ]] ||
    { fail "pod d runs on the VM that failed to start"; return 1; }
  secret_not_logged || return 1
  pass
}

# Every credential tidepool holds stays out of everything it shows or writes, through a
# scale-up and a scale-down at --log-level trace: the client secret (read from its file), the
# ARM access tokens the fake issued (all "fake-token-N"), and the kubeconfig's client key.
# Looked for in the log, /status, /metrics, /healthz, /readyz, the status ConfigMap and every
# Event in the cluster.
scenario_credentials_hidden() {
  local port
  port=$(free_port)
  start_fake || { fail "tidepool-fake-arm did not start"; return 1; }
  LISTEN=127.0.0.1:$port start_tidepool tp "$(write_config)" --log-level trace
  gpu_pod hidden-1 1 | k apply -f - >/dev/null || { fail "could not create the pod"; return 1; }
  wait_until 40 pod_running hidden-1 || { fail "pod not Running within 40 s"; return 1; }
  wait_until 10 event_for TriggeredScaleUp hidden-1 || { fail "no TriggeredScaleUp event"; return 1; }
  local out=$WORK/shown
  mkdir -p "$out"
  curl -s "http://127.0.0.1:$port/status" >"$out/status.html"
  k -n "$NS" delete pod hidden-1 --wait=false >/dev/null
  wait_until 60 has_nodes gpu 0 || { fail "the GPU node was not removed within 60 s"; return 1; }
  for path in status metrics healthz readyz; do
    curl -s "http://127.0.0.1:$port/$path" >"$out/$path.after"
  done
  k -n "$NS" get configmap tidepool-status -o json >"$out/status-configmap.json"
  k get events -A -o json >"$out/events.json"
  stop_all_tidepool  # the log complete
  cp "$WORK/tp.log" "$out/tp.log"
  # What must be there for the search to mean anything.
  grep -q "$SS_GPU" "$out/status.html" || { fail "/status does not show the scale set"; return 1; }
  grep -q '^tidepool_cloud_requests_total' "$out/metrics.after" || { fail "/metrics is empty"; return 1; }
  grep -q '"TriggeredScaleUp"' "$out/events.json" || { fail "no Events read back"; return 1; }
  grep -q IncreasePool "$out/tp.log" && grep -q DeleteNode "$out/tp.log" ||
    { fail "the log does not show the scale-up and the scale-down"; return 1; }
  (($(count_requests POST "/$TENANT/oauth2/v2.0/token") > 0)) || { fail "no token was issued"; return 1; }
  (($(count_requests POST "/virtualMachineScaleSets/$SS_GPU/delete") > 0)) ||
    { fail "the GPU VM was not deleted through ARM"; return 1; }
  # The needles: the secret, the tokens' common prefix, the client key whole (base64, as in the
  # kubeconfig) and each line of its PEM body.
  local key_b64
  key_b64=$(kubectl config view --raw --minify -o jsonpath='{.users[0].user.client-key-data}')
  [[ -n $key_b64 ]] || { fail "the kubeconfig has no client key to look for"; return 1; }
  { echo "$SECRET"; echo "fake-token-"; echo "$key_b64"
    base64 -d <<<"$key_b64" | grep -v '^-----' | grep -E '.{40}'; } >"$WORK/needles"
  local hits
  hits=$(grep -l -F -f "$WORK/needles" "$out"/* | xargs -r -n1 basename | tr '\n' ' ')
  [[ -z $hits ]] || { fail "a credential appears in: $hits"; return 1; }
  log "credentials: $(wc -l <"$WORK/needles") needles, none in $(ls "$out" | wc -l) outputs"
  pass
}

ALL=(scale_from_zero spot_fallback partial_scale_up spot_eviction scale_down_by_instance_id
     deallocate credentials_hidden)
fresh_scenario() {
  rm -f "$WORK"/*.log
  reset_cluster
}
run_scenarios fresh_scenario ALL "$@"
stop_all_tidepool
stop_fake

scenario_summary
