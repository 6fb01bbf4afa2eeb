#!/usr/bin/env bash
# Kill loop on the real control plane (testenv/): `tidepool run` with the kwok provider is
# SIGKILLed at random points of scale-ups, gang scale-ups, spot fallbacks and scale-downs and
# restarted, RUNS times; after each restart the cluster must converge with no duplicate node, no
# orphaned cordon or ToBeDeletedByClusterAutoscaler taint, and no PodDisruptionBudget violation.
#
# Usage: soak_kill_test.sh TIDEPOOL_BINARY [RUNS]      (RUNS default 50; ctest runs 5)
# Environment: SOAK_SEED (default: from the clock; printed, so a run can be replayed),
#   E2E_KEEP_LOGS (a folder to copy the logs to),
#   E2E_TESTENV_DIR (use that running testenv, e.g. the ctest fixture's; otherwise a private
#   one is brought up in a temporary directory and torn down on exit, also on failure).
#
# Workload (namespace soak). Pools: cpu (4 cpu), gpu (6 cpu, 1 GPU), gang (16 cpu, 4 GPUs,
# tainted dedicated=gang), and a fallback pair of one shape (8 cpu, 2 GPUs, tainted
# dedicated=fallback): spot (capacityType spot, priority 100, in provider.unavailablePools, so
# always out of stock) and on-demand (priority 50). Deployment guarded (3 pods of 2 cpu) has a
# PDB minAvailable 2, so scale-downs must evict through it. Runs cycle through four waves, one
# kill each:
#   grow    Deployments cpu-wave (2 cpu per pod) and gpu-wave (1 GPU per pod) grow to random
#           sizes (pending pods: a scale-up); killed 0-6 s after.
#   gang    Deployment gang-wave is created with N pods of G GPUs (G 1 or 2, N up to 8 or 6),
#           all of one gang: label scheduling.x-k8s.io/pod-group, annotation
#           tidepool.dev/gang-size N; only the gang pool takes them. Killed 0-6 s after.
#   spot    Deployment spot-wave (1 GPU per pod, tolerates spot, only the fallback pair takes
#           it) grows: the spot pool is out of stock, so tidepool must back it off and ask
#           on-demand. Killed 0-6 s after.
#   shrink  cpu-wave, gpu-wave and spot-wave shrink to random sizes and the gang is deleted
#           (empty or half-empty nodes: a scale-down); killed 2.5-7.5 s after (unneededTime
#           is 3 s).
#
# Figures, defined precisely:
#   converged   all Deployment pods Running, no Pending pod, no machine booting in the kwok
#               provider's state, and the node set (names, taints, cordons) unchanged for
#               STABLE seconds (longer than unneededTime + maxPodEvictionTime + scanInterval,
#               so any drain that is still meant to happen would have changed it).
#   duplicates  at convergence, per pool: nodes - need, where need is the fewest nodes of the
#               pool's allocatable that hold the pods bound to its nodes (an exact bin packing
#               over cpu, memory and GPUs). It used to be ceil(sum of requests / allocatable),
#               which counted fragmentation as duplicates: a 6-cpu 1-GPU node holding a 1-GPU
#               pod (1 cpu) has room for two 2-cpu pods, not 2.5 (run 39 of seed 20261125:
#               3 gpu nodes, all needed, counted as 3/2). Any positive difference is a node a
#               better placement would not need; its layout goes to layouts.log.
#               In a gang or spot wave the wave's own pools (gang; spot + on-demand) are
#               counted over the whole wave instead: every machine of those pools seen from
#               before the wave to convergence (Nodes and the provider's booting machines
#               before the wave, right after the kill and at convergence, and every node the
#               kwok provider logged as up in between), minus the fewest nodes of that shape
#               that hold all the wave's pods (the whole gang, all or nothing). So a machine
#               asked for twice and removed again as empty before convergence still counts,
#               and so does any spot machine (the spot pool has no stock).
#   orphaned    at convergence, nodes still tainted ToBeDeletedByClusterAutoscaler or cordoned.
#   pdb         sampled every second from the first time guarded is fully up: PDB
#   violations  status.currentHealthy < status.desiredHealthy, plus guarded pods bound to a node
#               that no longer exists (deleted without eviction).
# Exit 0 iff every run converged and all three counts are 0.
set -uo pipefail

TIDEPOOL=${1:?usage: soak_kill_test.sh TIDEPOOL_BINARY [RUNS]}
RUNS=${2:-50}
SEED=${SOAK_SEED:-$(date +%s)}
STABLE=${SOAK_STABLE:-12}
CONVERGE_TIMEOUT=${SOAK_CONVERGE_TIMEOUT:-150}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tidepool-soak.XXXXXX")
source "$HERE/lib.sh"
NS=soak
TP_PID=""
SAMPLER_PID=""
RANDOM=$((SEED % 32768))


cleanup() {
  stop_tidepool
  if [[ -n $SAMPLER_PID ]]; then kill "$SAMPLER_PID" 2>/dev/null; wait "$SAMPLER_PID" 2>/dev/null; fi
  e2e_teardown
}
trap cleanup EXIT
trap "exit 143" INT TERM

e2e_connect

# ---- cluster and workload --------------------------------------------------------------------

CONFIG=$WORK/config.yaml
cat >"$CONFIG" <<'EOF'
apiVersion: tidepool.dev/v1alpha1
kind: AutoscalerConfig
provider: {type: kwok, bootDelay: 3s, unavailablePools: [spot]}
scanInterval: 1s
scaleUp:
  expanders: [priority, least-waste]
  provisionTimeout: 60s
  batchIdle: 1s
  batchMax: 3s
  backoff: {initial: 60s, max: 120s}
scaleDown:
  enabled: true
  utilizationThreshold: 0.6
  gpuUtilizationThreshold: 0.6
  unneededTime: 3s
  delayAfterAdd: 2s
  maxPodEvictionTime: 6s
  maxNonEmptyPerPool: 1
pools:
  - name: cpu
    min: 0
    max: 8
    priority: 10
    template:
      labels: {pool-kind: cpu}
      capacity: {cpu: "4", memory: 16Gi, pods: "110"}
  - name: gpu
    min: 0
    max: 5
    priority: 10
    template:
      labels: {pool-kind: gpu}
      capacity: {cpu: "6", memory: 56Gi, nvidia.com/gpu: "1", pods: "110"}
  - name: gang
    min: 0
    max: 4
    priority: 10
    template:
      labels: {pool-kind: gang}
      taints: [{key: dedicated, value: gang, effect: NoSchedule}]
      capacity: {cpu: "16", memory: 64Gi, nvidia.com/gpu: "4", pods: "110"}
  - name: spot
    min: 0
    max: 4
    capacityType: spot
    priority: 100
    template:
      labels: {pool-kind: fallback, kubernetes.azure.com/scalesetpriority: spot}
      taints:
        - {key: dedicated, value: fallback, effect: NoSchedule}
        - {key: kubernetes.azure.com/scalesetpriority, value: spot, effect: NoSchedule}
      capacity: {cpu: "8", memory: 32Gi, nvidia.com/gpu: "2", pods: "110"}
  - name: on-demand
    min: 0
    max: 4
    priority: 50
    template:
      labels: {pool-kind: fallback}
      taints: [{key: dedicated, value: fallback, effect: NoSchedule}]
      capacity: {cpu: "8", memory: 32Gi, nvidia.com/gpu: "2", pods: "110"}
EOF

# deployment NAME REPLICAS REQUESTS_FLOW_MAP [POOL_KIND [POD_GROUP]]: with POOL_KIND, the pods
# select and tolerate that dedicated pool kind (and spot, for fallback); with POD_GROUP, they
# are one gang of REPLICAS members.
deployment() {
  local labels="{app: $1}" annotations="{}" placement=""
  if [[ -n ${5:-} ]]; then
    labels="{app: $1, scheduling.x-k8s.io/pod-group: $5}"
    annotations="{tidepool.dev/gang-size: \"$2\"}"
  fi
  if [[ -n ${4:-} ]]; then
    placement="      nodeSelector: {pool-kind: $4}
      tolerations:
      - {key: dedicated, operator: Equal, value: $4, effect: NoSchedule}"
    [[ $4 == fallback ]] && placement+="
      - {key: kubernetes.azure.com/scalesetpriority, operator: Equal, value: spot, effect: NoSchedule}"
  fi
  cat <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: $1, namespace: $NS}
spec:
  replicas: $2
  selector: {matchLabels: {app: $1}}
  template:
    metadata: {labels: $labels, annotations: $annotations}
    spec:
      terminationGracePeriodSeconds: 0
$placement
      containers:
      - name: main
        image: busybox
        resources: {requests: $3, limits: $3}
EOF
}

reset_cluster() {
  k delete namespace "$NS" --wait=true --timeout=90s >/dev/null
  k delete nodes --all --wait=false >/dev/null
  local deadline=$((SECONDS + 60))
  while ((SECONDS < deadline)) && [[ $(k get nodes -o name | wc -l) -ne 0 ]]; do sleep 0.5; done
  k create namespace "$NS" >/dev/null
  deadline=$((SECONDS + 30))
  while ((SECONDS < deadline)) && ! k -n "$NS" get serviceaccount default >/dev/null; do sleep 0.5; done
}

run_tidepool() {
  "$TIDEPOOL" run --config "$CONFIG" --kubeconfig "$KUBECONFIG" --namespace "$NS" \
    --identity soak --lease-duration 6s --renew-deadline 4s --retry-period 1s --listen "" \
    >>"$WORK/tidepool.log" 2>&1 &
  TP_PID=$!
}

# What was in flight when tidepool died: "booting" (kwok machines requested, not registered),
# "draining" (a node carries the ToBeDeleted taint), or "idle".
in_flight() {
  local booting tainted
  booting=$(k -n "$NS" get configmap tidepool-kwok-provider -o jsonpath='{.data.state}' | grep -o '"name"' | wc -l)
  tainted=$(k get nodes -o jsonpath='{range .items[*]}{.spec.taints[*].key}{"\n"}{end}' | grep -c ToBeDeletedByClusterAutoscaler || true)
  if ((tainted > 0)); then echo draining; elif ((booting > 0)); then echo booting; else echo idle; fi
}

# One line describing nodes with their taints and cordons (changes when anything relevant does).
node_fingerprint() {
  k get nodes -o jsonpath='{range .items[*]}{.metadata.name}:{.spec.unschedulable}:{.spec.taints[*].key};{end}'
}

# Prints "ok" when every Deployment pod runs, nothing is Pending and nothing is booting.
workload_settled() {
  k get -n "$NS" deployments,pods,configmaps -o json | python3 -c '
import json, sys
items = json.load(sys.stdin)["items"]
for o in items:
    if o["kind"] == "Deployment":
        want = o["spec"].get("replicas", 1)
        if o.get("status", {}).get("readyReplicas", 0) != want or o["status"].get("replicas", 0) != want:
            sys.exit(0)
    elif o["kind"] == "Pod":
        if o.get("status", {}).get("phase") != "Running" or o["metadata"].get("deletionTimestamp"):
            sys.exit(0)
    elif o["metadata"]["name"] == "tidepool-kwok-provider":
        state = json.loads(o.get("data", {}).get("state", "") or "{}")
        if any(state.get("pools", {}).values()):
            sys.exit(0)
print("ok")'
}

# wait_converged: waits until converged (see the header); returns 1 on timeout.
wait_converged() {
  local deadline=$((SECONDS + CONVERGE_TIMEOUT)) last="" since=$SECONDS fp
  while ((SECONDS < deadline)); do
    fp=$(node_fingerprint)
    if [[ $fp != "$last" ]]; then last=$fp; since=$SECONDS; fi
    if ((SECONDS - since >= STABLE)) && [[ $(workload_settled) == ok ]]; then return 0; fi
    sleep 1
  done
  return 1
}

# Machines of the pools given (Nodes and the kwok provider's booting machines), one name a line.
pool_machines() {
  local pools
  pools=$(IFS=,; echo "$*")
  k get nodes -l "tidepool.dev/pool in ($pools)" -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}'
  k -n "$NS" get configmap tidepool-kwok-provider -o jsonpath='{.data.state}' | python3 -c '
import json, sys
text = sys.stdin.read().strip()
pools = json.loads(text).get("pools", {}) if text else {}
for p in sys.argv[1:]:
    for m in pools.get(p, []): print(m["name"])' "$@"
}
# Nodes of the pools given that the kwok provider logged as up after line FROM of the log.
machines_logged_up() {  # machines_logged_up FROM POOL...
  local from=$1
  shift
  tail -n +"$((from + 1))" "$WORK/tidepool.log" |
    sed -n 's/.*kwok provider: node \([^ ]*\) of pool \([^ ]*\) is up.*/\2 \1/p' |
    while read -r pool name; do [[ " $* " == *" $pool "* ]] && echo "$name"; done
}

# Prints "DUPLICATES ORPHANED per-pool-detail" for the cluster as it is now. With WAVE_POOLS
# (comma-separated), WAVE_APP and EVER (machines of those pools seen over the wave), those pools
# count EVER against the fewest nodes that hold every pod of Deployment WAVE_APP instead.
measure() {  # measure [WAVE_POOLS WAVE_APP EVER]
  k get nodes,pods -A -o json | python3 -c '
import json, math, sys
items = json.load(sys.stdin)["items"]
def qty(s):
    s = str(s)
    for suf, m in (("m", 1e-3), ("Ki", 2**10), ("Mi", 2**20), ("Gi", 2**30), ("Ti", 2**40)):
        if s.endswith(suf): return float(s[:-len(suf)]) * m
    return float(s)
nodes = {o["metadata"]["name"]: o for o in items if o["kind"] == "Node"}
pools, orphaned = {}, 0
for n in nodes.values():
    pool = n["metadata"].get("labels", {}).get("tidepool.dev/pool", "")
    pools.setdefault(pool, []).append(n)
    keys = [t["key"] for t in n["spec"].get("taints", [])]
    if "ToBeDeletedByClusterAutoscaler" in keys or n["spec"].get("unschedulable"):
        orphaned += 1
RES = ("cpu", "memory", "nvidia.com/gpu")
def fewest_nodes(pods, cap):
    # The exact minimum of nodes of allocatable `cap` that hold `pods` (vectors over RES): a
    # depth-first search, biggest pods first, one branch per distinct node load (a pool holds a
    # few dozen pods at most here).
    pods = sorted(pods, reverse=True)
    best = [len(pods)]
    def go(i, loads):
        if len(loads) >= best[0] and i < len(pods): return
        if i == len(pods):
            best[0] = min(best[0], len(loads))
            return
        tried = set()
        for j, load in enumerate(loads):
            if load in tried: continue
            tried.add(load)
            new = tuple(a + b for a, b in zip(load, pods[i]))
            if all(n <= c * (1 + 1e-9) for n, c in zip(new, cap)):
                loads[j] = new
                go(i + 1, loads)
                loads[j] = load
        if len(loads) + 1 < best[0]:
            loads.append(pods[i])
            go(i + 1, loads)
            loads.pop()
    go(0, [])
    return best[0]
def requests(p):
    req = [0.0] * len(RES)
    for c in p["spec"]["containers"]:
        r = c.get("resources", {}).get("requests", {})
        for k, res in enumerate(RES): req[k] += qty(r.get(res, 0))
    return tuple(req)
def allocatable(n):
    return tuple(qty(n["status"]["allocatable"].get(r, 0)) for r in RES)
wave_pools = set(sys.argv[1].split(",")) if len(sys.argv) > 3 else set()
dup, detail = 0, []
for pool, ns in sorted(pools.items()):
    names = {n["metadata"]["name"] for n in ns}
    pods = [requests(p) for p in items if p["kind"] == "Pod" and p["spec"].get("nodeName") in names]
    need = fewest_nodes(pods, allocatable(ns[0]))
    if pool not in wave_pools: dup += max(0, len(ns) - need)
    label = pool or "unmanaged"
    detail.append(f"{label}={len(ns)}/{need}")
if wave_pools:
    # The wave pools share one shape; all pods of the wave, bound or not (a gang is needed
    # whole), on nodes of that shape.
    app, ever = sys.argv[2], int(sys.argv[3])
    pods = [requests(p) for p in items if p["kind"] == "Pod"
            and p["metadata"].get("labels", {}).get("app") == app]
    shape = [n for p in wave_pools for n in pools.get(p, [])]
    need = fewest_nodes(pods, allocatable(shape[0])) if shape else 0
    dup += max(0, ever - need)
    group = "+".join(sorted(wave_pools))
    detail.append(f"{group}-over-the-wave={ever}/{need}")
print(dup, orphaned, ",".join(detail))' "$@"
}

# Background PDB sampler: one line per violation in $WORK/pdb.log, a tick per sample.
pdb_sampler() {
  while true; do
    local line
    line=$(k -n "$NS" get pdb guarded -o jsonpath='{.status.currentHealthy} {.status.desiredHealthy}')
    # shellcheck disable=SC2086
    set -- $line
    if [[ $# -eq 2 && $1 -lt $2 ]]; then echo "$(date -u +%T) currentHealthy $1 < desiredHealthy $2" >>"$WORK/pdb.log"; fi
    local nodes lost
    nodes=" $(k get nodes -o jsonpath='{.items[*].metadata.name}') "
    lost=0
    for n in $(k -n "$NS" get pods -l app=guarded -o jsonpath='{.items[*].spec.nodeName}'); do
      [[ $nodes == *" $n "* ]] || lost=$((lost + 1))
    done
    if ((lost > 0)) && [[ $nodes != "  " ]]; then
      echo "$(date -u +%T) $lost guarded pod(s) on a node that no longer exists" >>"$WORK/pdb.log"
    fi
    echo . >>"$WORK/pdb.ticks"
    sleep 1
  done
}

# ---- the loop --------------------------------------------------------------------------------

log "soak: $RUNS run(s), seed $SEED (replay with SOAK_SEED=$SEED)"
reset_cluster
run_tidepool
deployment guarded 3 '{cpu: "2", memory: 1Gi}' | k apply -f - >/dev/null
deployment cpu-wave 0 '{cpu: "2", memory: 1Gi}' | k apply -f - >/dev/null
deployment gpu-wave 0 '{cpu: "1", memory: 1Gi, nvidia.com/gpu: "1"}' | k apply -f - >/dev/null
deployment gang-wave 0 '{cpu: "3", memory: 4Gi, nvidia.com/gpu: "1"}' gang | k apply -f - >/dev/null
deployment spot-wave 0 '{cpu: "2", memory: 4Gi, nvidia.com/gpu: "1"}' fallback | k apply -f - >/dev/null
cat <<EOF | k apply -f - >/dev/null
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: guarded, namespace: $NS}
spec:
  minAvailable: 2
  selector: {matchLabels: {app: guarded}}
EOF
wait_converged || { echo "FAIL setup: the initial workload did not converge"; tail -40 "$WORK/tidepool.log"; exit 1; }
touch "$WORK/pdb.log" "$WORK/pdb.ticks"
pdb_sampler &
SAMPLER_PID=$!

PHASES=(grow gang spot shrink)
declare -A kills=()
converged=0 not_converged=0 duplicates=0 orphaned=0
recovery_max=0 recovery_sum=0
cpu=0 gpu=0 spot=0 gang=""
for ((run = 1; run <= RUNS; run++)); do
  phase=${PHASES[(run - 1) % 4]}
  wave_pools=() wave_app=""
  case $phase in
    grow)
      cpu=$((cpu + 1 + RANDOM % 4)); ((cpu > 8)) && cpu=8
      gpu=$((gpu + RANDOM % 3)); ((gpu > 4)) && gpu=4
      delay_ms=$((RANDOM % 6000)) ;;
    gang)  # N pods of G GPUs, at most 3 of the gang pool's 4-GPU nodes
      gang_gpus=$((1 + RANDOM % 2))
      gang_size=$((2 + RANDOM % (gang_gpus == 1 ? 7 : 5)))
      gang="$gang_size x $gang_gpus GPU"
      wave_pools=(gang) wave_app=gang-wave
      delay_ms=$((RANDOM % 6000)) ;;
    spot)
      spot=$((spot + 1 + RANDOM % 3)); ((spot > 8)) && spot=8
      wave_pools=(spot on-demand) wave_app=spot-wave
      delay_ms=$((RANDOM % 6000)) ;;
    shrink)
      cpu=$((RANDOM % (cpu + 1))); gpu=$((RANDOM % (gpu + 1))); spot=$((RANDOM % (spot + 1)))
      gang=""
      delay_ms=$((2500 + RANDOM % 5000)) ;;
  esac
  # A wave's own pools are watched from before it starts: machines there now, at the kill,
  # at convergence, and every node the provider logs as up in between.
  log_from=$(wc -l <"$WORK/tidepool.log")
  if ((${#wave_pools[@]})); then pool_machines "${wave_pools[@]}" >"$WORK/ever"; fi
  case $phase in
    grow | shrink)
      k -n "$NS" scale deployment cpu-wave --replicas="$cpu" >/dev/null
      k -n "$NS" scale deployment gpu-wave --replicas="$gpu" >/dev/null
      k -n "$NS" scale deployment spot-wave --replicas="$spot" >/dev/null
      k -n "$NS" scale deployment gang-wave --replicas=0 >/dev/null ;;
    gang)
      deployment gang-wave "$gang_size" "{cpu: \"$((3 * gang_gpus))\", memory: 4Gi, nvidia.com/gpu: \"$gang_gpus\"}" \
        gang "gang-$run" | k apply -f - >/dev/null ;;
    spot) k -n "$NS" scale deployment spot-wave --replicas="$spot" >/dev/null ;;
  esac
  sleep "$((delay_ms / 1000)).$(printf %03d $((delay_ms % 1000)))"
  what=$(in_flight)
  kill -KILL "$TP_PID" 2>/dev/null
  wait "$TP_PID" 2>/dev/null
  TP_PID=""
  kills[$phase.$what]=$((${kills[$phase.$what]:-0} + 1))
  if ((${#wave_pools[@]})); then pool_machines "${wave_pools[@]}" >>"$WORK/ever"; fi
  t0=$SECONDS
  run_tidepool
  wave="$phase to cpu-wave=$cpu gpu-wave=$gpu spot-wave=$spot${gang:+ gang $gang}"
  if wait_converged; then
    converged=$((converged + 1))
    took=$((SECONDS - t0 - STABLE)); ((took < 0)) && took=0
    recovery_sum=$((recovery_sum + took)); ((took > recovery_max)) && recovery_max=$took
    over_wave=()
    if ((${#wave_pools[@]})); then
      { pool_machines "${wave_pools[@]}"; machines_logged_up "$log_from" "${wave_pools[@]}"; } >>"$WORK/ever"
      ever=$(sort -u "$WORK/ever" | grep -c .)
      over_wave=("$(IFS=,; echo "${wave_pools[*]}")" "$wave_app" "$ever")
    fi
    read -r d o detail <<<"$(measure "${over_wave[@]}")"
    duplicates=$((duplicates + d)); orphaned=$((orphaned + o))
    if ((d > 0 || o > 0)); then  # the layout, to tell a real duplicate from a packing limit
      {
        echo "== run $run ($wave, killed after ${delay_ms} ms, $what): $detail"
        k get nodes -o wide; k get pods -A -o wide
        if ((${#wave_pools[@]})); then echo "machines of ${wave_pools[*]} over the wave:" $(sort -u "$WORK/ever"); fi
        echo "tidepool log of the run (actions and the kwok provider):"
        tail -n +"$((log_from + 1))" "$WORK/tidepool.log" | grep -E 'IncreasePool|DecreaseTarget|DeleteNode|TaintNode|kwok provider|no capacity|backoff|acting as leader'
      } >>"$WORK/layouts.log" 2>&1
    fi
    log "run $run/$RUNS: $wave, killed after ${delay_ms} ms ($what); converged ${took} s after restart; nodes/need $detail; duplicates $d, orphaned $o"
  else
    not_converged=$((not_converged + 1))
    log "run $run/$RUNS: $wave, killed after ${delay_ms} ms ($what); DID NOT CONVERGE in ${CONVERGE_TIMEOUT} s: $(measure)"
    k get nodes -o wide >&2
    k -n "$NS" get pods -o wide >&2
  fi
done
kill "$SAMPLER_PID" 2>/dev/null
wait "$SAMPLER_PID" 2>/dev/null
SAMPLER_PID=""
pdb_violations=$(wc -l <"$WORK/pdb.log")
pdb_samples=$(wc -l <"$WORK/pdb.ticks")
stop_tidepool

echo "soak seed $SEED: runs $RUNS, converged $converged, not converged $not_converged"
for phase in "${PHASES[@]}"; do
  echo "kills in $phase waves: $((${kills[$phase.booting]:-0} + ${kills[$phase.draining]:-0} + ${kills[$phase.idle]:-0})): ${kills[$phase.booting]:-0} with machines booting, ${kills[$phase.draining]:-0} with a node tainted for removal, ${kills[$phase.idle]:-0} otherwise"
done
echo "duplicates $duplicates, orphaned taints/cordons $orphaned, PDB violations $pdb_violations (of $pdb_samples samples)"
if ((converged > 0)); then
  echo "recovery after restart: mean $((recovery_sum / converged)) s, max $recovery_max s (excluding the ${STABLE} s stability window)"
fi
if ((pdb_violations > 0)); then cat "$WORK/pdb.log"; fi
if [[ -s $WORK/layouts.log ]]; then echo "---- layouts of runs with a duplicate or orphan"; cat "$WORK/layouts.log"; fi
if ((not_converged > 0 || duplicates > 0 || orphaned > 0 || pdb_violations > 0)); then
  echo "---- tidepool log (last 60 lines)"
  tail -60 "$WORK/tidepool.log"
  echo "FAIL kill_loop"
  exit 1
fi
echo "PASS kill_loop"
