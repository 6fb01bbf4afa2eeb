#!/usr/bin/env bash
# End-to-end checks of the tidepool binary: exit codes, the plan JSON contract (docs/architecture.md, Interfaces),
# explain output and error messages for bad input. Usage: cli_test.sh TIDEPOOL SOURCE_DIR
# [ALLOCATOR]: with ALLOCATOR (tcmalloc or system, CMake's choice), `version` must name it.
set -u
tp=$1
src=$2
allocator=${3:-}
seed_cfg=$src/examples/seed/config.yaml
seed_state=$src/examples/seed/state.yaml
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0

check() {  # check NAME CONDITION-COMMAND...
  local name=$1
  shift
  if "$@"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL: $name"
  fi
}

run() {  # run ARGS...: sets out, err, rc
  "$tp" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  out=$(cat "$tmp/out")
  err=$(cat "$tmp/err")
}

run version
check "version exits 0" test "$rc" -eq 0
check "version prints the name" grep -q '^tidepool ' "$tmp/out"
if [[ -n $allocator ]]; then
  check "version names the $allocator allocator the build chose" \
    grep -q "^allocator: $allocator " "$tmp/out"
fi

run plan --config "$seed_cfg" --state "$seed_state" --now 2026-11-22T00:00:00Z -o json
check "plan json exits 0" test "$rc" -eq 0
check "plan json is JSON with the contract keys" python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
for k in ("scaleUp", "unschedulable", "scaleDown", "keep"):
    assert k in p, k
assert p["scaleUp"] == [dict(p["scaleUp"][0], pool="gpupool", add=1)], p["scaleUp"]
assert p["scaleUp"][0]["pods"] == ["default/tensorflow-5d9f8b7c6d-k4lmn"]
' "$tmp/out"

run plan --config "$seed_cfg" --state "$seed_state" --now 2026-11-22T00:00:00Z
check "plan text exits 0" test "$rc" -eq 0
check "plan text has the scale-up table" grep -q '^gpupool *+1' "$tmp/out"

run explain default/tensorflow-5d9f8b7c6d-k4lmn --config "$seed_cfg" --state "$seed_state"
check "explain exits 0" test "$rc" -eq 0
check "explain names the pool that grows" grep -q 'scale-up: pool gpupool grows for it' "$tmp/out"
check "explain says what blocks the spot pool" grep -q 'gpupool-spot: pool gpupool-spot lacks a toleration for taint kubernetes.azure.com/scalesetpriority=spot:NoSchedule' "$tmp/out"

# explain of a pod whose ResourceClaim no pool's devices satisfy (docs/dra.md): the selector.
dra="$src/tests/scenarios/dra-unsatisfiable"
run explain ml/wants-h100 --config "$dra/config.yaml" --state "$dra/state.yaml"
check "explain of a DRA pod exits 0" test "$rc" -eq 0
check "explain names the selector no device matches" grep -q 'gpu: a new node of pool gpu cannot hold the pod.s claims: cannot allocate all claims: claim gpu (template h100): request "gpu": no device matches selector device.attributes\["gpu.example.com"\].productName == "H100"' "$tmp/out"
check "explain says a pool without devices has none" grep -q 'cpu: a new node of pool cpu has no devices' "$tmp/out"
run plan --config "$dra/config.yaml" --state "$dra/state.yaml" -o json
check "plan reports the unsupported CEL with its position" grep -q 'at position 37: unsupported function' "$tmp/out"

# explain --pool: warm capacity of a pool, from one decision pass.
sed 's/^  - name: gpuheavy$/  - name: gpuheavy\n    warm: {spareNodes: 1}/' "$seed_cfg" >"$tmp/warm.yaml"
run explain --pool gpuheavy --config "$tmp/warm.yaml" --state "$seed_state" --now 2026-03-01T12:00:00Z
check "explain --pool exits 0" test "$rc" -eq 0
check "explain --pool shows the spare target" grep -q '^warm: spareNodes 1' "$tmp/out"
check "explain --pool says what it would add and why" grep -q '^would add 1 node(s): warm: spareNodes 1$' "$tmp/out"
run explain --pool gpupool --config "$seed_cfg" --state "$seed_state"
check "explain --pool of a pool without warm says so" grep -q 'no warm capacity configured' "$tmp/out"
# explain --pool with a CapacityBuffer in the state (docs/capacity-buffers.md): the buffer as the
# pass resolved it and the nodes of the pool its copies grow.
mkdir -p "$tmp/buffer-state"
cp "$seed_state" "$tmp/buffer-state/state.yaml"
cat >"$tmp/buffer-state/buffer.yaml" <<'EOF'
apiVersion: v1
kind: PodTemplate
metadata: {name: gpu-trainer, namespace: default}
template:
  spec:
    containers:
    - name: train
      image: busybox
      resources: {requests: {cpu: "1", nvidia.com/gpu: "1"}}
---
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata: {name: gpu-room, namespace: default}
spec:
  podTemplateRef: {name: gpu-trainer}
  replicas: 2
EOF
run explain --pool gpupool --config "$seed_cfg" --state "$tmp/buffer-state"
check "explain --pool with a buffer exits 0" test "$rc" -eq 0
check "explain --pool shows the buffer resolved" grep -q '^capacity buffer/default/gpu-room: 2 pod(s) of PodTemplate default/gpu-trainer; ReadyForProvisioning True Resolved' "$tmp/out"
check "explain --pool shows the nodes its copies grow" grep -q '^  would add 3 node(s) of pool gpupool (2 of its pod(s) among them)$' "$tmp/out"
run explain --pool nope --config "$seed_cfg" --state "$seed_state"
check "explain --pool of an unknown pool exits 2" test "$rc" -eq 2
check "explain --pool of an unknown pool names it" grep -q 'explain --pool nope: not a pool of the config' "$tmp/err"
# explain provreq/NS/NAME: what the loop would write on a ProvisioningRequest and grow for it
# (docs/kueue.md), with the Kueue e2e test's pools (gpu-small: max 3).
mkdir -p "$tmp/provreq"
cat >"$tmp/provreq/state.yaml" <<'EOF'
apiVersion: v1
kind: PodTemplate
metadata: {name: ppt, namespace: team}
template:
  spec:
    nodeSelector: {pool-kind: gpu-small}
    containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]
---
apiVersion: autoscaling.x-k8s.io/v1
kind: ProvisioningRequest
metadata: {name: fits, namespace: team}
spec:
  provisioningClassName: best-effort-atomic-scale-up.autoscaling.x-k8s.io
  podSets: [{podTemplateRef: {name: ppt}, count: 3}]
EOF
kueue_cfg=$src/tests/e2e/kueue_config.yaml
run explain provreq/team/fits --config "$kueue_cfg" --state "$tmp/provreq" --now 2026-11-25T10:00:00Z
check "explain provreq exits 0" test "$rc" -eq 0
check "explain provreq says it would accept" grep -q '^would set: Accepted=True' "$tmp/out"
check "explain provreq names the growth" grep -q '^would grow: gpu-small +3$' "$tmp/out"
sed -i 's/count: 3/count: 4/' "$tmp/provreq/state.yaml"
run explain provreq/team/fits --config "$kueue_cfg" --state "$tmp/provreq" --now 2026-11-25T10:00:00Z
check "explain provreq beyond the max says Failed with the pool's max" \
  grep -q '^would set: Failed=True CapacityIsNotFound: .*pool gpu-small: pool gpu-small at max 3' "$tmp/out"
check "explain provreq beyond the max grows nothing" bash -c "! grep -q '^would grow' '$tmp/out'"
run explain provreq/team/none --config "$kueue_cfg" --state "$tmp/provreq"
check "explain provreq of an unknown request exits 1" test "$rc" -eq 1

echo '{"version": 99}' >"$tmp/bad-warm.json"
run explain --pool gpuheavy --config "$tmp/warm.yaml" --state "$seed_state" --warm-state "$tmp/bad-warm.json"
check "explain --pool with a bad --warm-state exits 2" test "$rc" -eq 2
check "explain --pool with a bad --warm-state names the file" grep -q -- "--warm-state $tmp/bad-warm.json: warm state: version" "$tmp/err"

printf 'apiVersion: tidepool.dev/v1alpha1\nkind: AutoscalerConfig\nprovider: {type: clusterapi}\n' >"$tmp/capi.yaml"
run plan --config "$tmp/capi.yaml" --state "$seed_state"
check "plan with a clusterapi config exits 2" test "$rc" -eq 2
check "plan with a clusterapi config says the pools live in the cluster" grep -q "$tmp/capi.yaml: provider.type clusterapi: the pools are the management cluster's node groups" "$tmp/err"
run simulate --config "$tmp/capi.yaml"
check "simulate with a clusterapi config exits 2" test "$rc" -eq 2

run explain default/no-such-pod --config "$seed_cfg" --state "$seed_state"
check "explain of an unknown pod exits 1" test "$rc" -eq 1
check "explain of an unknown pod says so" grep -q 'not found' "$tmp/out"

run explain --node k8s-cpupool-29744472-0 --config "$seed_cfg" --state "$seed_state"
check "explain --node exits 0" test "$rc" -eq 0
check "explain --node names the pool minimum" grep -qi 'min' "$tmp/out"

# Bad input: a clear error naming the file and key, exit code 2.
printf 'apiVersion: tidepool.dev/v1alpha1\nkind: AutoscalerConfig\npools:\n  - name: a\n    min: 3\n    max: 1\n    template: {capacity: {cpu: "1", memory: 1Gi}}\n' >"$tmp/minmax.yaml"
run plan --config "$tmp/minmax.yaml" --state "$seed_state"
check "min > max exits 2" test "$rc" -eq 2
check "min > max names file and key" grep -q 'minmax.yaml:[0-9]*: pools\[0\]' "$tmp/err"

run plan --config "$src/does/not/exist.yaml" --state "$seed_state"
check "missing config exits 2" test "$rc" -eq 2
check "missing config is named" grep -q 'does/not/exist.yaml' "$tmp/err"

printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: web-1, namespace: default}\nspec:\n  containers:\n  - name: c\n    resources: {requests: {cpu: lots}}\n' >"$tmp/badpod.yaml"
run plan --config "$seed_cfg" --state "$tmp/badpod.yaml"
check "bad state exits 2" test "$rc" -eq 2
check "bad state names object and field" grep -q 'Pod default/web-1: spec.containers\[0\].resources.requests.cpu' "$tmp/err"

run plan --config "$seed_cfg" --state "$seed_state" --now yesterday
check "bad --now exits 2" test "$rc" -eq 2

run plan --config "$seed_cfg" --state "$seed_state" --backoff nosuchpool=2026-11-22T00:00:00Z
check "backoff for an unknown pool exits 2" test "$rc" -eq 2

run plan --config "$seed_cfg"
check "missing --state exits 2" test "$rc" -eq 2

run plan --config "$seed_cfg" --state "$seed_state" --backoff gpupool=2099-01-01T00:00:00Z -o json
check "light GPU pool in backoff: falls back to the heavy pool at once" python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
assert [u["pool"] for u in p["scaleUp"]] == ["gpuheavy"], p["scaleUp"]
' "$tmp/out"

run plan --config "$seed_cfg" --state "$seed_state" --backoff gpupool=2099-01-01T00:00:00Z --backoff gpuheavy=2099-01-01T00:00:00Z -o json
check "every GPU pool the pod tolerates in backoff: unschedulable with the reason" python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
assert p["scaleUp"] == [], p["scaleUp"]
r = {x["pod"]: x["reasons"] for x in p["unschedulable"]}["default/tensorflow-5d9f8b7c6d-k4lmn"]
assert r["gpupool"] == "pool gpupool in backoff until 2099-01-01T00:00:00Z", r
assert "untolerated taint" in r["gpupool-spot"], r
' "$tmp/out"

# simulate: --compare in JSON, the HTML report, the config's simulation: section and
# --sim-config replacing it.
run simulate --config "$seed_cfg" --compare --report "$tmp/report.html" --losses "$tmp/losses.csv" -o json
check "simulate --compare exits 0" test "$rc" -eq 0
check "simulate --losses lists every restart of every policy" python3 -c '
import csv, json, sys
p = json.load(open(sys.argv[1]))
rows = list(csv.DictReader(open(sys.argv[2])))
for x in p["policies"]:
    mine = [r for r in rows if r["policy"] == x["policy"]]
    assert len(mine) == x["restarts"], (x["policy"], len(mine), x["restarts"])
    lost = sum(float(r["work_lost_gpu_hours"]) for r in mine)
    assert abs(lost - x["workLostGpuHours"]) < 1e-3 * max(1, len(mine)), (x["policy"], lost)
assert any(r["policy"] == "ca-like" for r in rows), "ca-like evicts on the built-in scenario"
' "$tmp/out" "$tmp/losses.csv"
check "simulate --compare json lists the three policies" python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
assert [x["policy"] for x in p["policies"]] == ["tidepool", "ca-like", "static"], p
for x in p["policies"]:
    for k in ["cost", "lowerBoundCost", "waitP95", "jobsCompleted", "scaleUps"]:
        assert k in x, (x["policy"], k)
' "$tmp/out"
check "simulate --report writes a self-contained page" python3 -c '
import sys
h = open(sys.argv[1]).read()
assert h.startswith("<!DOCTYPE html>") and h.count("<svg ") == 7, h[:200]  # + cost-wait frontier
assert "http://" not in h and "https://" not in h and "<script" not in h
' "$tmp/report.html"

run simulate --config "$seed_cfg" --losses "$tmp/no-such-dir/losses.csv"
check "simulate --losses to an unwritable path exits 2" test "$rc" -eq 2

run simulate --config "$seed_cfg" --scenario periodic --warm-eval -o json
check "simulate --warm-eval exits 0" test "$rc" -eq 0
check "simulate --warm-eval json lists the warm policies" python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
assert [x["policy"] for x in p["policies"]] == ["off", "spare", "headroom", "predictive", "predict-50", "deallocate",
        "dealloc+pred", "stocked"], p
for x in p["policies"]:
    assert "waitP95Gpu" in x and "waitP95GpuByNamespace" in x, x["policy"]
' "$tmp/out"
run simulate --config "$seed_cfg" --compare --warm-eval
check "simulate --compare with --warm-eval exits 2" test "$rc" -eq 2

# simulate --scheduler-eval: tidepool with least- and most-allocated scoring, typed JSON.
run simulate --config "$seed_cfg" --scheduler-eval -o json
check "simulate --scheduler-eval exits 0" test "$rc" -eq 0
check "simulate --scheduler-eval json has both runs and the typed saving" python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
assert [x["policy"] for x in p["policies"]] == ["least-allocated", "most-allocated"], p
for x in p["policies"]:
    for k in ["cost", "lowerBoundCost", "nodeHours", "gpuHoursPaid", "waitP95", "evictions", "workLostGpuHours"]:
        assert k in x, (x["policy"], k)
s = p["saving"]
assert isinstance(s["mostAllocatedSaves"], bool), s
for k in ["leastAllocatedCost", "mostAllocatedCost", "saving", "savingPercent"]:
    assert isinstance(s[k], (int, float)) and not isinstance(s[k], bool), (k, s)
assert abs(s["saving"] - (s["leastAllocatedCost"] - s["mostAllocatedCost"])) < 1e-9, s
' "$tmp/out"
run simulate --config "$seed_cfg" --scheduler-eval
check "simulate --scheduler-eval text has the table and the saving" \
  grep -q "^  most-allocated \(saves\|costs\) \$[0-9.]*" "$tmp/out"
run simulate --config "$seed_cfg" --scheduler-eval --compare
check "simulate --scheduler-eval with --compare exits 2" test "$rc" -eq 2

# explain --cluster: the state's pods replayed with both scorings (tests/cli/testdata).
sched=$src/tests/cli/testdata
run explain --cluster --config "$sched/scheduler-config.yaml" --state "$sched/scheduler-saves.yaml" \
  --now 2026-11-26T12:00:00Z
check "explain --cluster exits 0" test "$rc" -eq 0
check "explain --cluster says what MostAllocated would save" grep -q \
  '^a MostAllocated scoring profile would have cost \$6.48 instead of \$12.10 on these 4 pod(s) (-46.4%)' "$tmp/out"
check "explain --cluster shows the scheduler configuration" grep -q '^            type: MostAllocated$' "$tmp/out"
check "explain --cluster counts the skipped pods" grep -q '^skipped 5 pod(s):$' "$tmp/out"
check "explain --cluster names why a DaemonSet pod is skipped" grep -q '^  1 DaemonSet or static pod$' "$tmp/out"
run explain --cluster --config "$sched/scheduler-config.yaml" --state "$sched/scheduler-saves.yaml" \
  --now 2026-11-26T12:00:00Z -o json
check "explain --cluster json" python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
assert p["pods"] == 4 and p["running"] == 4 and p["pending"] == 0, p
assert {x["reason"] for x in p["skipped"]} == {"finished", "daemonSetOrStatic", "unboundSystem", "noRequests", "noRuntimeKnown"}, p["skipped"]
assert [x["policy"] for x in p["policies"]] == ["least-allocated", "most-allocated"]
assert p["saving"]["mostAllocatedSaves"] is True and round(p["saving"]["saving"], 2) == 5.62, p["saving"]
assert "type: MostAllocated" in p["kubeSchedulerConfiguration"]
' "$tmp/out"
run explain --cluster --config "$sched/scheduler-config.yaml" --state "$sched/scheduler-same.yaml" \
  --now 2026-11-26T12:00:00Z
check "explain --cluster without a saving exits 0" test "$rc" -eq 0
check "explain --cluster says there is no saving" grep -q '^no saving: a MostAllocated scoring profile would have cost \$2.82 against \$2.82 on these 4 pod(s) (+0.0%' "$tmp/out"
check "explain --cluster without a saving shows no configuration" bash -c '! grep -q "KubeSchedulerConfiguration\|MostAllocated$" "$1"' _ "$tmp/out"
run explain --cluster --config "$sched/scheduler-config.yaml" --state "$sched/scheduler-same.yaml" \
  --now 2026-11-26T12:00:00Z -o json
check "explain --cluster json without a saving has no configuration" python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
assert p["saving"]["mostAllocatedSaves"] is False and p["kubeSchedulerConfiguration"] is None, p
' "$tmp/out"
run explain --cluster --node n1 --config "$sched/scheduler-config.yaml" --state "$sched/scheduler-same.yaml"
check "explain --cluster with --node exits 2" test "$rc" -eq 2
sed 's/expected-runtime: "1h"/expected-runtime: "soon"/' "$sched/scheduler-same.yaml" >"$tmp/bad-runtime.yaml"
run explain --cluster --config "$sched/scheduler-config.yaml" --state "$tmp/bad-runtime.yaml" \
  --now 2026-11-26T12:00:00Z
check "explain --cluster with a bad annotation exits 2" test "$rc" -eq 2
check "the error names the pod and the annotation" grep -q \
  'pod ml/one: annotation tidepool.dev/expected-runtime="soon" is not a positive duration' "$tmp/err"

# The progress line: on a terminal by default (stderr is a file here: none), always on request.
# The Alibaba trace runs for seconds, long enough for the line to appear.
alibaba=$src/../shared/traces/alibaba-gpu-v2023/openb_pod_list_default.csv
run simulate --config "$src/examples/alibaba/config.yaml" --trace "$alibaba" -o json
check "simulate on the Alibaba trace exits 0" test "$rc" -eq 0
check "simulate without a terminal writes no progress" test -z "$err"
run simulate --config "$src/examples/alibaba/config.yaml" --trace "$alibaba" -o json --progress always
check "simulate --progress always exits 0" test "$rc" -eq 0
check "simulate --progress always shows jobs done and an ETA" grep -q "simulate: [0-9]*/8152 jobs done, day [0-9.]* of [0-9.]*, ETA " "$tmp/err"
check "the progress line is erased at the end" bash -c 'tail -c 4 "$1" | od -c | grep -q "033   \[   K"' _ "$tmp/err"
run simulate --config "$seed_cfg" --progress sometimes
check "simulate --progress sometimes exits 2" test "$rc" -ne 0

# plan and explain: a line while a JSON List state is read (`--progress always` shows it from the
# first item, however quick the reading; auto waits half a second, which a test cannot count on).
python3 - "$tmp/big-state.json" <<'PY'
import json, sys
pod = lambda i: {"apiVersion": "v1", "kind": "Pod",
                 "metadata": {"name": f"p-{i:06d}", "namespace": "default"},
                 "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]},
                 "status": {"phase": "Pending"}}
json.dump({"apiVersion": "v1", "kind": "List", "items": [pod(i) for i in range(20000)]},
          open(sys.argv[1], "w"))
PY
run plan --config "$seed_cfg" --state "$tmp/big-state.json" --progress always -o json
check "plan --progress always exits 0" test "$rc" -eq 0
check "plan --progress always shows how far the state is read" grep -q \
  "reading $tmp/big-state.json: [0-9]*% of [0-9.]* MB, [0-9]* objects" "$tmp/err"
check "the reading line is erased before the plan" bash -c 'tail -c 4 "$1" | od -c | grep -q "033   \[   K"' _ "$tmp/err"
run plan --config "$seed_cfg" --state "$tmp/big-state.json" -o json
check "plan without a terminal writes no progress" test -z "$err"
run plan --config "$seed_cfg" --state "$tmp/big-state.json" --progress sometimes
check "plan --progress sometimes exits 2" test "$rc" -eq 2

# --threads 2 decodes the List beside parsing it; the plan is the one read with one thread.
run plan --config "$seed_cfg" --state "$tmp/big-state.json" --threads 1 -o json
cp "$tmp/out" "$tmp/plan-one-thread.json"
run plan --config "$seed_cfg" --state "$tmp/big-state.json" --threads 2 -o json
check "plan --threads 2 exits 0" test "$rc" -eq 0
check "plan --threads 2 plans what --threads 1 plans" cmp -s "$tmp/out" "$tmp/plan-one-thread.json"
check "the plan scales up for the List's pods" grep -q '"scaleUp": \[$' "$tmp/out"
run plan --config "$seed_cfg" --state "$tmp/big-state.json" --threads 3
check "plan --threads 3 exits 2, naming the flag" bash -c '[ "$1" -eq 2 ] && grep -q -- "--threads" "$2"' _ "$rc" "$tmp/err"

sed -e '$a simulation:\n  bootDelay: {cpu: [1m, 1m], gpu: [1m, 1m]}' "$seed_cfg" >"$tmp/with-sim.yaml"
run simulate --config "$tmp/with-sim.yaml" -o json
check "simulation: section is read" python3 -c '
import json, sys
a = json.load(open(sys.argv[1]))
assert a["waitP95"] < 300, a["waitP95"]   # one-minute boots
' "$tmp/out"
printf 'seed: 1\n' >"$tmp/sim.yaml"
run simulate --config "$tmp/with-sim.yaml" --sim-config "$tmp/sim.yaml" -o json
check "--sim-config replaces the section" python3 -c '
import json, sys
a = json.load(open(sys.argv[1]))
assert a["waitP95"] > 480, a["waitP95"]   # default GPU boots of 8-15 minutes
' "$tmp/out"
run plan --config "$tmp/with-sim.yaml" --state "$seed_state" -o json
check "plan ignores the simulation: section" test "$rc" -eq 0
sed -e '$a simulation:\n  bootDelay: {cpu: [4m, 3m]}' "$seed_cfg" >"$tmp/bad-sim.yaml"
run simulate --config "$tmp/bad-sim.yaml"
check "a bad simulation: key exits 2" test "$rc" -eq 2
check "the error names the file, line and key path" \
  grep -q "bad-sim.yaml:[0-9]*: simulation.bootDelay.cpu: expected min <= max" "$tmp/err"

echo "$passed passed, $failed failed"
test "$failed" -eq 0
