#!/usr/bin/env bash
# `make demo-hpa`: the source document's HPA beside tidepool, on real metrics. testenv with
# metrics-server (`testenv/up --with metrics`), tidepool on a pool of small nodes (one replica per
# node: tests/e2e/hpa_config.yaml), the document's Deployment and HPA
# (examples/seed/workloads/ai-model-training-hpa.yaml, scale-down window shortened to 10 s), and a
# load that rises and falls; prints the same timeline as `make demo`, then stops everything.
# Usage: scripts/hpa-demo.sh [TIDEPOOL_BINARY]
set -uo pipefail
export LC_ALL=C

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TIDEPOOL=${1:-$ROOT/build/src/cli/tidepool}
source "$ROOT/scripts/demo-lib.sh"
demo_start hpa-demo

say "starting a Kubernetes control plane with metrics-server (testenv --with metrics; HPA sync every 5 s)"
demo_testenv --with metrics --controller-manager-arg=--horizontal-pod-autoscaler-sync-period=5s
"$TIDEPOOL" run --config "$ROOT/tests/e2e/hpa_config.yaml" --namespace default --listen "" \
  >"$WORK/tidepool.log" 2>&1 &
TP_PID=$!
say "tidepool run started (pool small: 1 CPU / 2 GiB nodes, 900m allocatable, min 1; unneededTime 45s)"
DEMO_HPA=ai-model-hpa
timeline &
BG_PIDS+=($!)

echo 1m >"$WORK/load"
"$ROOT/scripts/drive-cpu-usage.sh" default app=ai-model-training "$WORK/load" &
BG_PIDS+=($!)
load() { echo "$1" >"$WORK/load"; }
replicas() { k get deployment ai-model-deployment -o jsonpath='{.status.readyReplicas}/{.spec.replicas}'; }
nodes() { k get nodes -o name | wc -l; }

sleep 2
say "== the document's Deployment (2 replicas, 500m CPU each) and HPA (min 2, max 5, 50% CPU)"
k apply -f "$ROOT/examples/seed/workloads/ai-model-training-hpa.yaml" >/dev/null
k patch hpa ai-model-hpa --type=merge -p '{"spec":{"behavior":{"scaleDown":{"stabilizationWindowSeconds":10}}}}' >/dev/null
wait_until 90 bash -c "[[ \$(kubectl get deployment ai-model-deployment -o jsonpath='{.status.readyReplicas}' 2>/dev/null) == 2 ]]" ||
  say "!! the 2 replicas did not start"
wait_until 60 bash -c "[[ -n \$(kubectl get hpa ai-model-hpa -o jsonpath='{.status.currentMetrics[0].resource.current.averageUtilization}' 2>/dev/null) ]]" ||
  say "!! the HPA reads no CPU utilization"
say "== the load rises: each replica uses 900m CPU (180% of its request)"
load 900m
wait_until 120 bash -c "[[ \$(kubectl get deployment ai-model-deployment -o jsonpath='{.status.readyReplicas}' 2>/dev/null) == 5 ]]" ||
  say "!! not 5 replicas ready: $(replicas)"
sleep 5
say "== the load falls: 100m per replica (20%)"
load 100m
wait_until 150 bash -c "[[ \$(kubectl get nodes -o name 2>/dev/null | wc -l) -eq 2 ]]" ||
  say "!! not back to 2 nodes: $(nodes) nodes"
sleep 2
say "== back to 2 replicas on 2 nodes; $(replicas) ready. tidepool's status ConfigMap:"
k get configmap tidepool-status -o jsonpath='{.data.status}' | sed 's/^/          /'
echo
say "done; stopping tidepool and the control plane"
