#!/usr/bin/env bash
# `tidepool plan` as a whole process on the Cluster Autoscaler's BenchmarkRunOnceScaleUp shape:
# PODS pending pods without an owner (200m, 100Mi), no nodes, one pool whose 10-cpu template
# holds 50 of them. Writes the state as kubectl's JSON List, then prints wall time and peak RSS.
# Usage: bench/plan_ca_shape.sh [TIDEPOOL_BINARY] [PODS=50000]
# TIDEPOOL_ARGS adds flags to `tidepool plan` (e.g. "--threads 1"); REPEAT=N plans N times on the
# same state, each with its own line.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TIDEPOOL=${1:-$ROOT/build/src/cli/tidepool}
PODS=${2:-50000}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tidepool-plan.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

cat >"$WORK/config.yaml" <<YAML
apiVersion: tidepool.dev/v1alpha1
kind: AutoscalerConfig
provider: {type: kwok}
limits: {maxNodes: 5000}
scaleUp: {maxNodesPerScaleUp: 5000}
pools:
  - name: cpu
    min: 0
    max: 5000
    pricePerHour: 0.5
    instanceType: d10
    template:
      capacity: {cpu: "10", memory: 64Gi, pods: "50"}
YAML

awk -v n="$PODS" 'BEGIN {
  printf "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":["
  for (i = 0; i < n; i++) {
    if (i > 0) printf ","
    printf "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p-%05d\",", i
    printf "\"namespace\":\"default\",\"uid\":\"u%d\",\"creationTimestamp\":\"2026-11-26T10:00:00Z\"},", i
    printf "\"spec\":{\"schedulerName\":\"default-scheduler\",\"containers\":[{\"name\":\"main\","
    printf "\"image\":\"busybox\",\"resources\":{\"requests\":{\"cpu\":\"200m\",\"memory\":\"100Mi\"}}}]},"
    printf "\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\","
    printf "\"status\":\"False\",\"reason\":\"Unschedulable\"}]}}"
  }
  printf "]}\n"
}' >"$WORK/state.json"

echo "state: $PODS pods, $(wc -c <"$WORK/state.json") bytes"
for _ in $(seq 1 "${REPEAT:-1}"); do
  # shellcheck disable=SC2086  # TIDEPOOL_ARGS: extra flags, split on spaces
  /usr/bin/time -f 'wall %e s, CPU %U+%S s, peak RSS %M KB' "$TIDEPOOL" plan \
    --config "$WORK/config.yaml" --state "$WORK/state.json" --now 2026-11-26T10:05:00Z \
    ${TIDEPOOL_ARGS:-} | grep -E '^ *cpu'
done
