#!/usr/bin/env bash
# Controller reaction time on testenv: pod created -> the provider's node request, minus the
# batch window, with NODES nodes and PODS pods in tidepool's caches.
# Usage: bench/controller_latency.sh [TIDEPOOL_BINARY] [NODES=1000] [PODS=20000] [SAMPLES=10]
#
# The cluster: NODES kwok nodes of pool `filled` (4 CPU each), every one full with PODS/NODES
# pods bound to it. Each sample creates one pending pod that fits no existing node; tidepool
# (batchIdle 1s) asks pool `fresh` for a node. Latency = time of tidepool's IncreasePool log
# line - time its POST was sent - batchIdle. Prints each sample and p50/max.
# The nodes and pods are POSTed to the API server by LOAD_WORKERS (24) concurrent connections
# (bench/latency_cluster.py), which reports the load rates on stderr and fails, naming the
# object, if one cannot be created. PROFILE=FILE records tidepool with `perf record` during
# the samples (flags in PERF_ARGS, default -g). The samples start once kwok has started every
# pod, or at once with WAIT_STARTED=0 (kwok starts only 40-100 pods/s on a busy 2-core machine;
# READY_TIMEOUT, default 600 s, bounds the wait: 100,000 pods need about 2,400).
# TIDEPOOL_ARGS adds flags to `tidepool run` (e.g. "--cluster-model off", to compare).
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TIDEPOOL=${1:-$ROOT/build/src/cli/tidepool}
NODES=${2:-1000}
PODS=${3:-20000}
SAMPLES=${4:-10}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tidepool-latency.XXXXXX")
export TESTENV_DIR=$WORK/testenv TESTENV_SKIP_BUILD=${TESTENV_SKIP_BUILD:-1}
TP_PID=""
PERF_PID=""
cleanup() {
  [[ -n $PERF_PID ]] && kill -INT "$PERF_PID" 2>/dev/null && wait "$PERF_PID" 2>/dev/null
  [[ -n $TP_PID ]] && kill -TERM "$TP_PID" 2>/dev/null && wait "$TP_PID" 2>/dev/null
  "$ROOT/testenv/down" >/dev/null 2>&1
  rm -rf "$WORK"
}
trap cleanup EXIT

KUBECONFIG=$("$ROOT/testenv/up" 2>"$WORK/up.log" | tail -1) || { cat "$WORK/up.log"; exit 1; }
export KUBECONFIG
PER_NODE=$(((PODS + NODES - 1) / NODES))
MILLI=$((4000 / PER_NODE))

cat >"$WORK/config.yaml" <<EOF
apiVersion: tidepool.dev/v1alpha1
kind: AutoscalerConfig
provider: {type: kwok, bootDelay: 1h}
scanInterval: 10s
scaleUp: {batchIdle: 1s, batchMax: 10s}
scaleDown: {enabled: false}
pools:
  - name: filled
    min: 0
    max: $((NODES + 10))
    template:
      labels: {bench: filled}
      capacity: {cpu: "4", memory: 64Gi, pods: "$((PER_NODE + 10))"}
  - name: fresh
    min: 0
    max: 1000
    template:
      labels: {bench: fresh}
      capacity: {cpu: "8", memory: 64Gi, pods: "110"}
EOF

echo "creating $NODES nodes and $PODS pods ($PER_NODE per node, ${MILLI}m CPU each)..." >&2
# The loader talks to the API server itself, with the kubeconfig's credentials.
CREDS=$WORK/credentials
mkdir -m 700 "$CREDS"
kc() { kubectl config view --raw --minify -o jsonpath="{$1}"; }
kc '.clusters[0].cluster.server' >"$CREDS/server"
kc '.clusters[0].cluster.certificate-authority-data' | base64 -d >"$CREDS/ca.crt"
if [[ -n $(kc '.users[0].user.client-certificate-data') ]]; then
  kc '.users[0].user.client-certificate-data' | base64 -d >"$CREDS/client.crt"
  kc '.users[0].user.client-key-data' | base64 -d >"$CREDS/client.key"
else
  kc '.users[0].user.token' >"$CREDS/token"
fi
start=$SECONDS
wait_started=()
[[ ${WAIT_STARTED:-1} == 0 ]] && wait_started=(--no-wait-started)
python3 "$ROOT/bench/latency_cluster.py" "${wait_started[@]}" "$CREDS" "$NODES" "$PODS" \
  "$PER_NODE" "$MILLI" "${LOAD_WORKERS:-24}" || exit 1
echo "created in $((SECONDS - start)) s${wait_started[*]:+, kwok still starting pods}" >&2

: >"$WORK/tidepool.log"  # exists before the background job opens it, for the grep below
# shellcheck disable=SC2086  # TIDEPOOL_ARGS: extra flags, split on spaces
"$TIDEPOOL" run --config "$WORK/config.yaml" --namespace default --listen "" --no-leader-elect \
  ${TIDEPOOL_ARGS:-} >"$WORK/tidepool.log" 2>&1 &
TP_PID=$!
for _ in $(seq 1 240); do grep -q "caches synced" "$WORK/tidepool.log" && break; sleep 0.5; done
grep -q "caches synced" "$WORK/tidepool.log" || { echo "tidepool did not sync" >&2; tail "$WORK/tidepool.log"; exit 1; }
sleep 12  # let the first passes settle

now_ms() { date +%s%3N; }
log_ms() {  # the time of the first IncreasePool line naming pod $1
  local line
  line=$(grep -m1 "IncreasePool.*default/$1\b" "$WORK/tidepool.log") || return 1
  date -d "${line%% *}" +%s%3N
}
if [[ -n ${PROFILE:-} ]]; then
  # shellcheck disable=SC2086  # PERF_ARGS is a list of perf flags
  perf record ${PERF_ARGS:--g} -o "$PROFILE" -p "$TP_PID" >"$WORK/perf.log" 2>&1 &
  PERF_PID=$!
fi
post_probe() {  # creates pending pod $1; prints the ms from the call until its POST was sent
  local auth=(--cert "$CREDS/client.crt" --key "$CREDS/client.key") secs
  [[ -f $CREDS/token ]] && auth=(-H "Authorization: Bearer $(cat "$CREDS/token")")
  secs=$(curl -sS --fail-with-body --cacert "$CREDS/ca.crt" "${auth[@]}" \
    -H 'Content-Type: application/json' -o "$WORK/probe.json" -w '%{time_pretransfer}' \
    --data-binary @- "$(cat "$CREDS/server")/api/v1/namespaces/default/pods" <<EOF
{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "$1", "namespace": "default"},
 "spec": {"nodeSelector": {"bench": "fresh"}, "containers": [{"name": "c", "image": "busybox",
          "resources": {"requests": {"cpu": "6"}}}]}}
EOF
  ) || { cat "$WORK/probe.json" >&2; return 1; }
  awk -v s="$secs" 'BEGIN { printf "%d\n", s * 1000 }'
}
results=()
echo "load average before the samples: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for i in $(seq 1 "$SAMPLES"); do
  name=probe-$i
  t0=$(now_ms)
  sent=$(post_probe "$name") || { echo "sample $i: creating $name failed" >&2; continue; }
  t0=$((t0 + sent))
  echo "sample $i: POST sent $sent ms after the call" >&2
  for _ in $(seq 1 100); do log_ms "$name" >/dev/null && break; sleep 0.2; done
  t1=$(log_ms "$name") || { echo "sample $i: no scale-up for $name" >&2; continue; }
  lat=$((t1 - t0 - 1000))
  results+=("$lat")
  echo "sample $i: ${lat} ms (created -> IncreasePool $((t1 - t0)) ms, minus batchIdle 1000 ms)"
  sleep 11  # past batchMax, so every sample opens its own batch
done
echo "load average after the samples: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
if [[ -n $PERF_PID ]]; then
  kill -INT "$PERF_PID" && wait "$PERF_PID"
  PERF_PID=""
  echo "profile of tidepool during the samples: $PROFILE (perf report -i $PROFILE)" >&2
fi
sorted=$(printf '%s\n' "${results[@]}" | sort -n)
n=${#results[@]}
echo "nodes=$NODES pods=$PODS samples=$n p50=$(sed -n "$(((n + 1) / 2))p" <<<"$sorted") ms max=$(tail -1 <<<"$sorted") ms"
