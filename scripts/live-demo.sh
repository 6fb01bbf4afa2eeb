#!/usr/bin/env bash
# The live demo (`make demo`): a real control plane (testenv/), tidepool running against it with
# the example cluster's pools (examples/seed/config.yaml, timers shortened so it takes minutes),
# and the source documents' workloads; prints a timeline, then stops everything.
# Usage: scripts/live-demo.sh [TIDEPOOL_BINARY]
set -uo pipefail
export LC_ALL=C

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TIDEPOOL=${1:-$ROOT/build/src/cli/tidepool}
source "$ROOT/scripts/demo-lib.sh"
demo_start demo

say "starting a Kubernetes control plane (testenv: etcd, kube-apiserver, scheduler, controllers, kwok)"
demo_testenv

# The example config with demo timers: GPU nodes "boot" in 20 s (real ones take 8-15 min),
# CPU nodes in 10 s; idle nodes go after 30 s instead of 10 min.
CONFIG=$WORK/config.yaml
sed -e 's/^  type: kwok$/  type: kwok\n  bootDelay: 20s/' \
  -e 's/unneededTime: 10m/unneededTime: 30s/' \
  -e 's/delayAfterAdd: 10m/delayAfterAdd: 20s/' \
  "$ROOT/examples/seed/config.yaml" >"$CONFIG"
for want in 'bootDelay: 20s' 'unneededTime: 30s' 'delayAfterAdd: 20s'; do
  grep -q "$want" "$CONFIG" || { echo "live demo: could not set $want in the config" >&2; exit 1; }
done
sed -i '/^  - name: cpupool$/,/^  - name:/ s/^    max: 10$/    max: 10\n    bootDelay: 10s/' "$CONFIG"

"$TIDEPOOL" run --config "$CONFIG" --namespace default --listen "" >"$WORK/tidepool.log" 2>&1 &
TP_PID=$!
say "tidepool run started (pools: cpupool, gpupool, gpupool-spot, gpuheavy, gpuheavy-spot; GPU pools at 0 nodes)"

timeline &
BG_PIDS+=($!)

running() { [[ $(k get pods -l "$1" --field-selector=status.phase=Running -o name | wc -l) -ge 1 ]]; }
gpu_nodes() { k get nodes -l accelerator=nvidia -o name | wc -l; }

sleep 2
say "== a 1-GPU TensorFlow training Deployment (tolerates spot)"
k apply -f "$ROOT/examples/seed/workloads/tensorflow-1.yaml" >/dev/null
wait_until 120 running app=tensorflow-1 || say "!! tensorflow-1 did not start"
sleep 3
say "== a second one: the first GPU node is full"
k apply -f "$ROOT/examples/seed/workloads/tensorflow-2.yaml" >/dev/null
wait_until 120 running app=tensorflow-2 || say "!! tensorflow-2 did not start"
sleep 3
say "== a CPU batch Job: 4 pods of 1.5 CPU, 40 s each"
k apply -f "$ROOT/examples/seed/workloads/cpu-batch-job.yaml" >/dev/null
wait_until 180 bash -c "[[ \$(kubectl get job cpu-batch -o jsonpath='{.status.succeeded}' 2>/dev/null) == 4 ]]" ||
  say "!! the batch job did not finish"
say "== training done: the Deployments are deleted"
k delete deployment tensorflow-1 tensorflow-2 --wait=false >/dev/null
k delete job cpu-batch --wait=false >/dev/null
# Back to the pools' minimums: the GPU pools at zero, cpupool at its min of 1 (it keeps one
# node for system pods, so that one node stays).
back_to_min() {
  [[ $(gpu_nodes) -eq 0 && $(k get nodes -l tidepool.dev/pool=cpupool -o name | wc -l) -le 1 ]]
}
wait_until 240 back_to_min || say "!! not back to the minimums: $(k get nodes -o name | tr '\n' ' ')"
# The status ConfigMap is rewritten at tidepool's next passes: wait until it shows the removals
# finished rather than the pass that started them.
status_settled() {
  ! kubectl get configmap tidepool-status -o jsonpath='{.data.status}' 2>/dev/null | grep -q 'removing:'
}
wait_until 60 status_settled || say "!! the status still lists removals in progress"
say "== GPU pools back to zero nodes, cpupool at its minimum. tidepool's status ConfigMap:"
k get configmap tidepool-status -o jsonpath='{.data.status}' | sed 's/^/          /'
echo
say "done; stopping tidepool and the control plane"
