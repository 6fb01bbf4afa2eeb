#!/usr/bin/env bash
# tidepool serving Kueue's ProvisioningRequests on testenv with real Kueue (issue 21,
# docs/kueue.md). Usage: kueue_test.sh TIDEPOOL_BINARY [SCENARIO...]   (no scenario: all)
#
# A testenv of its own (`testenv/up --with kueue`) unless E2E_TESTENV_DIR names one that runs
# Kueue. ClusterQueues with a ProvisioningRequest admission check (best-effort-atomic and
# check-capacity), a LocalQueue each, and Jobs of one-GPU pods sent to them; tidepool runs with
# tests/e2e/kueue_config.yaml (pools gpu, max 4, and gpu-small, max 3).
#   atomic          a Job of 4: Kueue's request makes tidepool grow gpu by 4 in one IncreasePool;
#                   the request is Provisioned, Kueue admits the Job, its 4 pods run on the new
#                   nodes and nothing more is added.
#   restart         the same with tidepool killed while the nodes boot: no duplicate node, the
#                   request still ends Provisioned and the pods run.
#   pool_max        a Job of 4 for gpu-small (max 3): the request is Failed naming the pool's max,
#                   no node is created, the Job stays suspended.
#   check_capacity  two unmanaged GPU nodes, a check-capacity Job of 2: Provisioned without a
#                   scale-up, the pods run there.
#   bad_template    a request naming a PodTemplate that does not exist: Failed, naming it;
#                   nothing is scaled.
#   bad_parameters  a request whose ValidUntilSeconds is not a number of seconds: Failed
#                   (InvalidParameters), naming the parameter and the value; nothing is scaled.
# (A malformed PodTemplate cannot be stored: the API server validates it; the loop's test covers
# tidepool's side, tests/autoscaler/provisioning_test.cc.)
# Each scenario starts from an empty cluster. Prints PASS/FAIL per scenario and a summary;
# exits 0 iff all passed.
set -uo pipefail

TIDEPOOL=${1:?usage: kueue_test.sh TIDEPOOL_BINARY [SCENARIO...]}
shift
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tidepool-kueue.XXXXXX")
source "$HERE/lib.sh"
NS=kueue-e2e
CONFIG=$HERE/kueue_config.yaml
PASSED=() FAILED=()

cleanup() {
  stop_all_tidepool
  e2e_teardown
}
trap cleanup EXIT
trap "exit 143" INT TERM

pass() { echo "PASS $CURRENT"; PASSED+=("$CURRENT"); }
fail() {
  echo "FAIL $CURRENT: $1"
  FAILED+=("$CURRENT")
  echo "---- tidepool log (last 25)"; tail -25 "$WORK"/tp.log 2>/dev/null
  k -n "$NS" get provisioningrequests.autoscaling.x-k8s.io -o yaml | grep -A30 '^    conditions:' | head -40
  k get nodes --show-labels
  k -n "$NS" get jobs,pods -o wide
  return 1
}

log "connecting to a testenv with Kueue"
e2e_connect --with kueue

# ---- Kueue's queues (cluster-scoped, once) -----------------------------------------------------
cat >"$WORK/queues.yaml" <<'YAML'
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: e2e-flavor}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ProvisioningRequestConfig
metadata: {name: e2e-atomic}
spec:
  provisioningClassName: best-effort-atomic-scale-up.autoscaling.x-k8s.io
  managedResources: [nvidia.com/gpu]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ProvisioningRequestConfig
metadata: {name: e2e-check}
spec:
  provisioningClassName: check-capacity.autoscaling.x-k8s.io
  managedResources: [nvidia.com/gpu]
YAML
for kind in atomic check; do
  cat >>"$WORK/queues.yaml" <<YAML
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {name: e2e-$kind}
spec:
  controllerName: kueue.x-k8s.io/provisioning-request
  parameters: {apiGroup: kueue.x-k8s.io, kind: ProvisioningRequestConfig, name: e2e-$kind}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: e2e-$kind}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors:
    - name: e2e-flavor
      resources:
      - {name: cpu, nominalQuota: "64"}
      - {name: memory, nominalQuota: 256Gi}
      - {name: nvidia.com/gpu, nominalQuota: "8"}
  admissionChecksStrategy:
    admissionChecks:
    - name: e2e-$kind
YAML
done
k apply -f "$WORK/queues.yaml" >/dev/null || { echo "FAIL setup: Kueue's queues not created"; exit 1; }
wait_until 60 k wait --for=condition=Active clusterqueue/e2e-atomic clusterqueue/e2e-check --timeout=5s ||
  { echo "FAIL setup: the ClusterQueues did not become Active"; exit 1; }

# ---- helpers -----------------------------------------------------------------------------------
reset_cluster() {
  e2e_reset_cluster
  for kind in atomic check; do
    printf 'apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: %s, namespace: %s}\nspec: {clusterQueue: e2e-%s}\n' \
      "$kind" "$NS" "$kind" | k apply -f - >/dev/null
  done
  wait_until 30 k -n "$NS" wait --for=condition=Active localqueue/atomic localqueue/check --timeout=5s || true
}

# job NAME QUEUE PODS POOL_KIND: a Job of PODS one-GPU pods for pool-kind POOL_KIND, queued.
job() {
  cat <<YAML | k apply -f - >/dev/null
apiVersion: batch/v1
kind: Job
metadata:
  name: $1
  namespace: $NS
  labels: {kueue.x-k8s.io/queue-name: $2}
spec:
  parallelism: $3
  completions: $3
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      nodeSelector: {pool-kind: $4}
      containers:
      - name: train
        image: registry.invalid/train:1
        resources:
          requests: {cpu: "2", memory: 8Gi, nvidia.com/gpu: "1"}
          limits: {nvidia.com/gpu: "1"}
YAML
}

# provreq_cond TYPE FIELD: FIELD (status, reason, message) of condition TYPE of the one request.
provreq_cond() {
  k -n "$NS" get provisioningrequests.autoscaling.x-k8s.io \
    -o jsonpath="{.items[*].status.conditions[?(@.type==\"$1\")].$2}"
}
provreq_is() { [[ $(provreq_cond "$1" status) == True ]]; }
job_suspended() { [[ $(k -n "$NS" get job "$1" -o jsonpath='{.spec.suspend}') == true ]]; }
job_pods_running() {
  [[ $(k -n "$NS" get pods -l "job-name=$1" --field-selector=status.phase=Running -o name | wc -l) -eq $2 ]]
}
increases() { grep -c "IncreasePool" "$WORK/tp.log"; }
# The nodes of the Job's pods, each once, all of them in pool POOL.
pods_on_pool() {
  local nodes n
  nodes=$(k -n "$NS" get pods -l "job-name=$1" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort -u)
  [[ $(wc -w <<<"$nodes") -eq $2 ]] || return 1
  for n in $nodes; do
    [[ $(k get node "$n" -o jsonpath='{.metadata.labels.tidepool\.dev/pool}') == "$3" ]] || return 1
  done
}

# ---- scenarios ---------------------------------------------------------------------------------
# The common end of atomic and restart: Provisioned, admitted, 4 pods running on 4 new gpu nodes,
# one increase by 4 and no machine more.
expect_provisioned_four() {
  wait_until 60 provreq_is Provisioned || { fail "the request was not Provisioned"; return 1; }
  [[ $(provreq_cond Provisioned reason) == CapacityIsProvisioned ]] ||
    { fail "Provisioned for reason $(provreq_cond Provisioned reason)"; return 1; }
  wait_until 60 bash -c "[[ \$(kubectl -n $NS get job train -o jsonpath='{.spec.suspend}') == false ]]" ||
    { fail "Kueue did not admit the Job"; return 1; }
  wait_until 60 job_pods_running train 4 || { fail "the Job's 4 pods are not Running"; return 1; }
  pods_on_pool train 4 gpu || { fail "the pods are not on 4 distinct gpu nodes"; return 1; }
  k -n "$NS" get pods -l job-name=train -o yaml | grep -q "consume-provisioning-request" ||
    { fail "the Job's pods do not name the request they consume"; return 1; }
  sleep 6  # a few passes with the pods running: nothing more may be added
  [[ $(requested) -eq 4 ]] || { fail "expected 4 machines, tidepool asked for $(requested)"; return 1; }
  [[ $(increases) -eq 1 ]] || { fail "expected 1 IncreasePool, got $(increases)"; return 1; }
  grep "IncreasePool" "$WORK/tp.log" | grep -q "gpu +4" || { fail "the increase was not gpu +4"; return 1; }
}

scenario_atomic() {
  start_tidepool tp "$CONFIG"
  job train atomic 4 gpu
  wait_until 30 job_suspended train || { fail "Kueue did not suspend the Job"; return 1; }
  expect_provisioned_four && pass
}

scenario_restart() {
  local cfg=$WORK/restart.yaml
  sed 's/^  bootDelay: 2s/  bootDelay: 10s/' "$CONFIG" >"$cfg"
  start_tidepool tp "$cfg"
  local pid=$LAST_PID
  job train atomic 4 gpu
  wait_until 30 grep -q "IncreasePool" "$WORK/tp.log" || { fail "tidepool never grew a pool"; return 1; }
  kill -KILL "$pid"
  wait "$pid" 2>/dev/null
  TP_PIDS=()
  provreq_is Provisioned && { fail "Provisioned before the nodes booted"; return 1; }
  log "killed tidepool with 4 nodes booting; restarting"
  start_tidepool tp "$cfg"
  expect_provisioned_four && pass
}

scenario_pool_max() {
  start_tidepool tp "$CONFIG"
  job train atomic 4 gpu-small
  wait_until 60 provreq_is Failed || { fail "the request did not become Failed"; return 1; }
  local msg
  msg=$(provreq_cond Failed message)
  log "Failed: $(provreq_cond Failed reason): $msg"
  [[ $msg == *"pool gpu-small:"*max* ]] || { fail "the message does not name gpu-small's max: $msg"; return 1; }
  sleep 4
  [[ $(requested) -eq 0 ]] || { fail "tidepool asked for $(requested) machines"; return 1; }
  [[ $(node_count) -eq 0 ]] || { fail "$(node_count) nodes were created"; return 1; }
  job_suspended train || { fail "the Job was admitted"; return 1; }
  pass
}

# unmanaged_gpu_node NAME: a Node of no pool, run by kwok, with one GPU.
unmanaged_gpu_node() {
  cat <<YAML | k apply -f - >/dev/null
apiVersion: v1
kind: Node
metadata:
  name: $1
  annotations: {kwok.x-k8s.io/node: fake}
  labels: {pool-kind: spare, kubernetes.io/hostname: $1}
status:
  capacity: {cpu: "6", memory: 56Gi, nvidia.com/gpu: "1", pods: "110"}
  allocatable: {cpu: "6", memory: 56Gi, nvidia.com/gpu: "1", pods: "110"}
YAML
}

scenario_check_capacity() {
  unmanaged_gpu_node spare-0
  unmanaged_gpu_node spare-1
  wait_until 30 bash -c "[[ \$(kubectl get nodes spare-0 spare-1 -o jsonpath='{.items[*].status.conditions[?(@.type==\"Ready\")].status}') == 'True True' ]]" ||
    { fail "the spare nodes did not become Ready"; return 1; }
  start_tidepool tp "$CONFIG"
  job train check 2 spare
  wait_until 60 provreq_is Provisioned || { fail "the request was not Provisioned"; return 1; }
  [[ $(provreq_cond Provisioned reason) == CapacityIsFound ]] ||
    { fail "Provisioned for reason $(provreq_cond Provisioned reason)"; return 1; }
  wait_until 60 job_pods_running train 2 || { fail "the Job's 2 pods are not Running"; return 1; }
  sleep 4
  [[ $(increases) -eq 0 ]] || { fail "check-capacity scaled up"; return 1; }
  [[ $(requested) -eq 2 ]] || { fail "expected only the 2 spare nodes, found $(requested) machines"; return 1; }
  pass
}

scenario_bad_template() {
  start_tidepool tp "$CONFIG"
  cat <<YAML | k apply -f - >/dev/null
apiVersion: autoscaling.x-k8s.io/v1
kind: ProvisioningRequest
metadata: {name: lost, namespace: $NS}
spec:
  provisioningClassName: best-effort-atomic-scale-up.autoscaling.x-k8s.io
  podSets:
  - podTemplateRef: {name: no-such-template}
    count: 2
YAML
  wait_until 60 provreq_is Failed || { fail "the request did not become Failed"; return 1; }
  [[ $(provreq_cond Failed reason) == PodTemplateNotFound ]] ||
    { fail "Failed for reason $(provreq_cond Failed reason)"; return 1; }
  [[ $(provreq_cond Failed message) == *"$NS/no-such-template"* ]] ||
    { fail "the message does not name the template: $(provreq_cond Failed message)"; return 1; }
  [[ $(requested) -eq 0 && $(increases) -eq 0 ]] || { fail "something was scaled"; return 1; }
  pass
}

scenario_bad_parameters() {
  start_tidepool tp "$CONFIG"
  cat <<YAML | k apply -f - >/dev/null
apiVersion: v1
kind: PodTemplate
metadata: {name: train, namespace: $NS}
template:
  spec:
    nodeSelector: {pool-kind: gpu}
    containers:
    - name: train
      image: registry.invalid/train:1
      resources: {requests: {cpu: "2", nvidia.com/gpu: "1"}, limits: {nvidia.com/gpu: "1"}}
---
apiVersion: autoscaling.x-k8s.io/v1
kind: ProvisioningRequest
metadata: {name: soon, namespace: $NS}
spec:
  provisioningClassName: best-effort-atomic-scale-up.autoscaling.x-k8s.io
  parameters: {ValidUntilSeconds: soon}
  podSets:
  - podTemplateRef: {name: train}
    count: 2
YAML
  wait_until 60 provreq_is Failed || { fail "the request did not become Failed"; return 1; }
  [[ $(provreq_cond Failed reason) == InvalidParameters ]] ||
    { fail "Failed for reason $(provreq_cond Failed reason)"; return 1; }
  [[ $(provreq_cond Failed message) == *'ValidUntilSeconds'*'"soon"'* ]] ||
    { fail "the message does not name the parameter and value: $(provreq_cond Failed message)"; return 1; }
  sleep 4
  [[ $(requested) -eq 0 && $(increases) -eq 0 ]] || { fail "something was scaled"; return 1; }
  pass
}

ALL=(atomic restart pool_max check_capacity bad_template bad_parameters)
fresh_scenario() {
  rm -f "$WORK"/*.log
  reset_cluster
}
run_scenarios fresh_scenario ALL "$@"
stop_all_tidepool

scenario_summary
