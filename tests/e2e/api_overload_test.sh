#!/usr/bin/env bash
# API server overload (reliability issue): kube-apiserver with very low in-flight limits answers
# 429 to tidepool, to kube-scheduler and to the client creating a burst of 2,000 pending pods;
# tidepool backs off and carries on, nothing is lost, every pod ends Running, and the cluster
# grows to about the nodes the pods need, no more.
#
# Usage: api_overload_test.sh TIDEPOOL_BINARY. Environment: E2E_KEEP_LOGS (a folder to copy
# tidepool's, the creators' and the components' logs to), OVERLOAD_PODS (default 2000),
# OVERLOAD_INFLIGHT / OVERLOAD_MUTATING (the apiserver limits, default 2 / 1) and OVERLOAD_APF
# (true: keep API Priority and Fairness on), for experiments.
# Needs bin/testenv with `up --apiserver-arg` (testenv/build). Not in `make test` (ctest label
# soak): `make overload`. 2.5-4.5 minutes on 2 cores.
#
# How the API server is overloaded. Its own testenv (in its own work directory, always torn
# down on exit), kube-apiserver started with
#   --enable-priority-and-fairness=false --max-requests-inflight=2 --max-mutating-requests-inflight=1
# With API Priority and Fairness (the default) the two limits only set APF's total concurrency
# (3 seats here), shared out among its priority levels, and a request over its level's share
# waits in a queue for up to 15 s before it gets a 429. Tried with APF on at 2 / 1: the exempt
# level (system:masters, i.e. kwok and the admin client, see below) borrowed every seat, the
# levels of kube-scheduler, the controller manager and every ServiceAccount were left with 0,
# and their requests only timed out in the queues: after 14 minutes 805 of the 2,000 pods
# existed and 373 ran, and tidepool had lost its Lease after a minute and could not take it back
# (every GET of it timed out). That tests APF's seat borrowing, not tidepool. With APF on at
# 20 / 10 nothing got a 429 at all (tidepool 0 of 1,652 requests, the creators 0): APF queued
# and served. With APF off, the classic max-inflight filter applies: at most 2 non-mutating and
# 1 mutating request at a time (watches and other long-running requests are not counted), and
# one more gets 429 with Retry-After: 1 at once. That is the overload the issue asks about; with
# these values testenv still comes up, and tidepool gets one to two hundred 429s per run.
# Both filters exempt the group system:masters from rejection (a request of that group takes a
# free slot, but never gets a 429). The admin kubeconfig and kwok are system:masters, so tidepool
# and the burst creator each run as a ServiceAccount of their own (bound to cluster-admin: the
# permissions are not what is tested here, the identity is), with a token kubeconfig. The
# scheduler and the controller manager run with identities of their own and are throttled too.
# The test's own polling uses the admin kubeconfig (never rejected) every few seconds.
#
#   1. tidepool run (kwok provider, leader election with the default timings, ops server on a
#      free port): one pool `cpu`, nodes of 32 CPU / 128Gi / 110 pods, boot 2 s, max 60, backoff
#      30 s doubling to 60 s (a throttled write of the kwok provider's state fails the increase
#      and backs the pool off: see docs/reliability.md).
#   2. the burst: 2,000 bare pods of 400m CPU / 64Mi, created by 4 `kubectl create` in parallel
#      (500 pods each; kubectl retries a 429 after its Retry-After up to 10 times); any pod a
#      creator gave up on is created again until all 2,000 exist.
#   3. asserts: within 420 s of the start of the burst all 2,000 pods exist and every one is
#      Running. Then, after a 15 s settle: still 2,000 pods, all Running; every machine the
#      provider was asked for is a registered Node; nodes <= minimum + 2; none tainted
#      ToBeDeletedByClusterAutoscaler; tidepool alive and holding the Lease; and it did get 429s
#      (its tidepool_kube_api_requests_total{code="429"}).
# The minimum is ceil(2000 / 80) = 25 nodes: 80 pods of 400m fill a node's 32 CPU before its 110
# pod slots; the pods are identical, so any placement fills 25 nodes exactly. The slack of 2
# (8%) allows for a planning pass made on a pod cache that lags kube-scheduler's bindings by a
# moment near the end of the burst; a runaway (scale-ups repeated for pods already served, or
# machines replaced because a throttled Node create was taken for a failed boot) shows as many
# more, up to the pool's max of 60.
# Prints figures (429s per client, time to all Running, nodes vs the minimum) and PASS/FAIL;
# exits 0 iff it passed.
set -uo pipefail

TIDEPOOL=${1:?usage: api_overload_test.sh TIDEPOOL_BINARY}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tidepool-overload.XXXXXX")
source "$HERE/lib.sh"
NS=overload
PODS=${OVERLOAD_PODS:-2000}
INFLIGHT=${OVERLOAD_INFLIGHT:-2}
MUTATING=${OVERLOAD_MUTATING:-1}
CREATORS=4
POD_CPU_M=400                                # millicores per pod
NODE_CPU=32 NODE_PODS=110                    # the pool's node shape
PER_NODE=$((NODE_CPU * 1000 / POD_CPU_M))    # 80 pods by CPU (memory: 64Mi x 80 << 128Gi)
((PER_NODE > NODE_PODS)) && PER_NODE=$NODE_PODS
MIN_NODES=$(((PODS + PER_NODE - 1) / PER_NODE))
SLACK=2
RUNNING_WITHIN=420  # seconds from the start of the burst
SETTLE=15
TP_PID=""
CREATOR_PIDS=()

cleanup() {
  local pid
  for pid in "${CREATOR_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  stop_tidepool
  if [[ -n ${E2E_KEEP_LOGS:-} ]]; then
    mkdir -p "$E2E_KEEP_LOGS" && cp "$WORK"/*.log "$E2E_KEEP_LOGS"/ 2>/dev/null
    [[ -d ${TESTENV_DIR:-}/logs ]] && cp -r "$TESTENV_DIR/logs" "$E2E_KEEP_LOGS/testenv-logs"
  fi
  e2e_disconnect
  rm -rf "$WORK"
}
trap cleanup EXIT
trap "exit 143" INT TERM


fail() {
  echo "FAIL api_overload: $*"
  # What tidepool did, without the per-pod event lines and the 429 warnings that repeat.
  echo "---- tidepool.log (info and errors, last 60; per-pod events and 429s left out)"
  grep -v -E ' I (TriggeredScaleUp|NotTriggerScaleUp) |429 Too Many Requests' "$WORK/tidepool.log" |
    sed -E 's/ for \[[^]]*\]/ for [...]/' | tail -60
  echo "---- tidepool.log (last 10 lines)"; tail -10 "$WORK/tidepool.log" | cut -c1-400
  echo "---- kube-scheduler.log (last 10 lines)"
  tail -10 "$TESTENV_DIR/logs/kube-scheduler.log" | cut -c1-400
  k get nodes
  echo "pods by phase: $(phases)"
  exit 1
}

# ---- cluster -----------------------------------------------------------------------------------
unset E2E_TESTENV_DIR  # always a testenv of its own: the fixture's has no in-flight limits
APISERVER_ARGS=(--enable-priority-and-fairness="${OVERLOAD_APF:-false}"
                --max-requests-inflight="$INFLIGHT" --max-mutating-requests-inflight="$MUTATING")
log "bringing up a testenv with kube-apiserver ${APISERVER_ARGS[*]}"
e2e_connect "${APISERVER_ARGS[@]/#/--apiserver-arg=}"
for a in "${APISERVER_ARGS[@]}"; do
  grep -q -- "$a" "$TESTENV_DIR/launch/kube-apiserver.json" ||
    fail "kube-apiserver was not started with $a"
done
APISERVER=$(k config view --minify -o jsonpath='{.clusters[0].cluster.server}')

k create namespace "$NS" >/dev/null || fail "cannot create namespace $NS"
wait_until 30 k -n "$NS" get serviceaccount default ||
  fail "namespace $NS has no default ServiceAccount"

# kubeconfig_for NAME: a ServiceAccount NAME bound to cluster-admin and a kubeconfig with its
# token in $WORK/NAME.kubeconfig (TLS verified against testenv's CA). Not system:masters, so the
# API server may answer it 429.
kubeconfig_for() {
  local token
  k -n "$NS" create serviceaccount "$1" >/dev/null || fail "cannot create ServiceAccount $1"
  k create clusterrolebinding "overload-$1" --clusterrole=cluster-admin \
    --serviceaccount="$NS:$1" >/dev/null || fail "cannot bind ServiceAccount $1"
  token=$(k -n "$NS" create token "$1" --duration=1h)
  [[ -n $token ]] || fail "cannot create a token for ServiceAccount $1"
  cat >"$WORK/$1.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "$APISERVER", certificate-authority: "$TESTENV_DIR/pki/ca.crt"}
users:
- name: u
  user: {token: "$token"}
contexts:
- name: x
  context: {cluster: c, user: u, namespace: $NS}
current-context: x
EOF
}
kubeconfig_for tidepool
kubeconfig_for burst
KUBECONFIG=$WORK/tidepool.kubeconfig kubectl auth whoami -o jsonpath='{.status.userInfo.groups}' \
  2>/dev/null | grep -q system:masters && fail "tidepool's identity is in system:masters"

# ---- tidepool ----------------------------------------------------------------------------------
CONFIG=$WORK/config.yaml
cat >"$CONFIG" <<EOF
# As tests/e2e/config.yaml, with one pool big enough for the burst.
apiVersion: tidepool.dev/v1alpha1
kind: AutoscalerConfig
provider:
  type: kwok
  bootDelay: 2s
scanInterval: 2s
scaleUp:
  expanders: [priority, least-waste]
  provisionTimeout: 120s
  batchIdle: 1s
  batchMax: 5s
  backoff: {initial: 30s, max: 60s}
scaleDown:
  enabled: true
  utilizationThreshold: 0.5
  unneededTime: 30s
  delayAfterAdd: 30s
  maxPodEvictionTime: 12s
pools:
  - name: cpu
    min: 0
    max: 60
    priority: 10
    pricePerHour: 0.2
    template:
      labels: {pool-kind: cpu}
      capacity: {cpu: "$NODE_CPU", memory: 128Gi, pods: "$NODE_PODS"}
EOF
PORT=$(free_port)
"$TIDEPOOL" run --config "$CONFIG" --kubeconfig "$WORK/tidepool.kubeconfig" --namespace "$NS" \
  --identity overload --listen "127.0.0.1:$PORT" >>"$WORK/tidepool.log" 2>&1 &
TP_PID=$!
wait_until 30 grep -q "caches synced" "$WORK/tidepool.log" || fail "tidepool did not sync its caches"
wait_until 30 grep -q "became leader" "$WORK/tidepool.log" || fail "tidepool did not take the Lease"

metrics() { curl -s --max-time 10 "http://127.0.0.1:$PORT/metrics"; }
# count429 METRIC_NAME < metrics text: the sum of METRIC_NAME{...code="429"...}.
count429() { awk -v m="$1" 'index($0, m "{") == 1 && /code="429"/ { s += $NF } END { print s + 0 }'; }
phases() {
  k -n "$NS" get pods -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' |
    sort | uniq -c | awk '{printf "%s%s %s", sep, $1, $2; sep = ", "}'
}
pod_count() { k -n "$NS" get pods --no-headers | wc -l; }
running_count() { k -n "$NS" get pods --field-selector=status.phase=Running --no-headers | wc -l; }
# Machines in the provider's state that are not a Node (machines(): lib.sh).
unregistered() {
  comm -23 <(provider_machines | sort -u) <(k get nodes -o name | sed 's|^node/||' | sort)
}

# ---- the burst ---------------------------------------------------------------------------------
# pods_yaml FIRST LAST: pods o-FIRST .. o-LAST (4 digits) as a multi-document YAML.
POD_FORMAT='---
apiVersion: v1
kind: Pod
metadata: {name: o-%04d, namespace: %s, labels: {app: overload}}
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - name: c
    image: busybox
    resources: {requests: {cpu: %dm, memory: 64Mi}}
'
pods_yaml() {
  local i
  # shellcheck disable=SC2059  # the format is ours
  for ((i = $1; i <= $2; i++)); do printf -- "$POD_FORMAT" "$i" "$NS" "$POD_CPU_M"; done
}
per=$(((PODS + CREATORS - 1) / CREATORS))
for ((c = 0; c < CREATORS; c++)); do
  first=$((c * per)) last=$(((c + 1) * per - 1))
  ((last >= PODS)) && last=$((PODS - 1))
  pods_yaml "$first" "$last" >"$WORK/pods-$c.yaml"
done
# create FILE LOG: kubectl create as the burst ServiceAccount; -v=6 logs each request with its
# status, so the 429s it got (and retried) can be counted.
create() { kubectl --kubeconfig "$WORK/burst.kubeconfig" create -f "$1" -v=6 >>"$2" 2>&1; }

log "burst: $PODS pods of ${POD_CPU_M}m CPU from $CREATORS creators;" \
  "minimum $MIN_NODES nodes of $NODE_CPU CPU"
burst_at=$(now_ms)
for ((c = 0; c < CREATORS; c++)); do
  kubectl --kubeconfig "$WORK/burst.kubeconfig" create -f "$WORK/pods-$c.yaml" -v=6 \
    >>"$WORK/creator-$c.log" 2>&1 &
  CREATOR_PIDS+=($!)
done
# Sample progress every 5 s while the creators run, and afterwards until every pod runs.
peak=0
sample() {
  local t n r m
  t=$(($(now_ms) - burst_at)) n=$(pod_count) r=$(running_count) m=$(requested)
  ((m > peak)) && peak=$m
  log "$(secs "$t") s: $n pods created, $r Running, $m machines requested"
  [[ $r -ge $PODS ]]
}
while :; do
  alive=0
  for pid in "${CREATOR_PIDS[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
  ((alive)) || break
  (($(now_ms) < burst_at + RUNNING_WITHIN * 1000)) ||
    fail "the creators still run $RUNNING_WITHIN s after the burst started ($(pod_count) pods exist)"
  sample
  sleep 5
done
for pid in "${CREATOR_PIDS[@]}"; do wait "$pid"; done
CREATOR_PIDS=()
created_at=$(now_ms)
gave_up=$(cat "$WORK"/creator-*.log | grep -c '^Error from server')
# Whatever a creator gave up on (10 retries, each answered 429), created again.
rounds=0
while (($(pod_count) < PODS)); do
  ((rounds++ < 10)) ||
    fail "only $(pod_count) of $PODS pods exist after 10 rounds of re-creating"
  comm -13 <(k -n "$NS" get pods -o name | sed 's|^pod/||' | sort) \
    <(for ((i = 0; i < PODS; i++)); do printf 'o-%04d\n' "$i"; done) >"$WORK/missing"
  log "$(wc -l <"$WORK/missing") pods missing; creating them again"
  while read -r name; do pods_yaml $((10#${name#o-})) $((10#${name#o-})); done \
    <"$WORK/missing" >"$WORK/pods-again.yaml"
  create "$WORK/pods-again.yaml" "$WORK/creator-again.log"
  created_at=$(now_ms)
done
creator_429=$(cat "$WORK"/creator-*.log | grep -c ' 429 Too Many Requests')
log "all $PODS pods exist $(secs $((created_at - burst_at))) s after the burst started" \
  "($creator_429 answers 429 to the creators, $gave_up creates given up, $rounds rounds again)"

deadline=$((burst_at + RUNNING_WITHIN * 1000))
until sample; do
  (($(now_ms) < deadline)) || fail "$(running_count) of $PODS pods Running after $RUNNING_WITHIN s"
  kill -0 "$TP_PID" 2>/dev/null || fail "tidepool exited"
  sleep 5
done
running_at=$(now_ms)
at_running=$(requested)

# ---- settle and check --------------------------------------------------------------------------
sleep "$SETTLE"
kill -0 "$TP_PID" 2>/dev/null || fail "tidepool exited"
m=$(metrics)
[[ -n $m ]] || fail "tidepool's /metrics does not answer"
grep -q '^tidepool_leader 1' <<<"$m" || fail "tidepool does not hold the Lease at the end"
tp_429=$(count429 tidepool_kube_api_requests_total <<<"$m")
tp_requests=$(awk '/^tidepool_kube_api_requests_total\{/ { s += $NF } END { print s + 0 }' <<<"$m")
tp_429_by=$(awk '/^tidepool_kube_api_requests_total\{/ && /code="429"/ {
    match($0, /verb="[^"]*"/); v = substr($0, RSTART + 6, RLENGTH - 7)
    match($0, /resource="[^"]*"/); r = substr($0, RSTART + 10, RLENGTH - 11)
    printf "%s%s %s %d", sep, v, r, $NF; sep = ", " }' <<<"$m")
apiserver_429=$(k get --raw /metrics | count429 apiserver_request_terminations_total)
lost=$(grep -c "lost the Lease" "$WORK/tidepool.log")
increase_failed=$(grep -c " W IncreasePool failed" "$WORK/tidepool.log")
increase_429=$(grep " W IncreasePool failed" "$WORK/tidepool.log" | grep -c "429 Too Many")
# Seconds the pool spent in the backoff that followed a failed increase: each distinct "in
# backoff until T" of tidepool's NotTriggerScaleUp lines, from the failure before it to T.
backoff_s=$(awk '
  function sod(ts,  a) { split(substr(ts, 12, 12), a, ":"); return a[1] * 3600 + a[2] * 60 + a[3] }
  / W IncreasePool failed/ { failed = sod($1) }
  match($0, /in backoff until [0-9T:.-]+Z/) {
    u = substr($0, RSTART + 17, RLENGTH - 17)
    if (!(u in seen) && failed != "") {
      seen[u] = 1; d = sod(u) - failed; if (d < 0) d += 86400; s += d
    }
  }
  END { printf "%.0f", s }' "$WORK/tidepool.log")
final_phases=$(phases)
nodes=$(node_count)
total=$(requested)

((tp_429 > 0)) ||
  fail "tidepool got no 429 (of $tp_requests requests): the API server was not overloaded"
[[ $(running_count) -eq $PODS && $(pod_count) -eq $PODS ]] ||
  fail "after ${SETTLE} s: $(pod_count) pods ($final_phases), expected $PODS Running"
[[ -z $(unregistered) ]] ||
  fail "machines requested but never registered: $(unregistered | tr '\n' ' ')"
((total == at_running)) || fail "$at_running machines when every pod ran, $total ${SETTLE} s later"
((total <= MIN_NODES + SLACK)) ||
  fail "$total machines for $PODS pods, minimum $MIN_NODES (+ $SLACK allowed)"
((nodes >= MIN_NODES)) || fail "$nodes nodes, fewer than the $MIN_NODES the pods need"
[[ $(tainted_nodes) -eq 0 ]] || fail "$(tainted_nodes) node(s) left tainted ToBeDeleted"

echo "api server: ${APISERVER_ARGS[*]}; $apiserver_429 requests answered 429 in all"
echo "tidepool: $tp_429 of $tp_requests API requests answered 429 ($tp_429_by);" \
  "$increase_failed IncreasePool failed ($increase_429 on a 429; pool in backoff ${backoff_s} s in" \
  "all), Lease lost $lost times, leader at the end"
echo "burst: $PODS pods in $(secs $((created_at - burst_at))) s by $CREATORS creators" \
  "($creator_429 answers 429 retried by kubectl, $gave_up creates given up and made again)"
echo "all $PODS Running $(secs $((running_at - burst_at))) s after the burst started" \
  "($(secs $((running_at - created_at))) s after the last pod was created)"
echo "nodes: $nodes for $PODS pods, minimum $MIN_NODES (peak $peak machines requested);" \
  "none tainted and no new node after ${SETTLE} s"
echo "PASS api_overload"
