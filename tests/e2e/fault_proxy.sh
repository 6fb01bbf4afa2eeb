#!/usr/bin/env bash
# API faults on the real control plane (testenv/): tidepool talks to the API server through
# fault_proxy.py, which injects 429, 500 and slow responses, cuts watch streams, and simulates an
# API server restart (every connection refused and every open stream cut for a while).
#
# Usage: fault_proxy.sh TIDEPOOL_BINARY [SCENARIO...]   (faults outage restart token_not_logged; none:
# all). Environment: E2E_TESTENV_DIR (a running testenv, e.g. the ctest fixture's; otherwise a
# private one is brought up and torn down on exit), FAULT_OUTAGE (seconds, default 10),
# E2E_KEEP_LOGS (a folder to copy tidepool's and the proxy's logs to).
#
#   faults            429 20%, 500 10%, 1 s delays 10%, watches cut after 0.5-4 s, all the time:
#                     one pending 1-GPU pod gets exactly one node, and no second one follows.
#   outage            the "API server" goes away for FAULT_OUTAGE s while a second pod is
#                     created; after it comes back, tidepool must ask for a node within 5 s.
#   restart           the real kube-apiserver is killed and started again (testenv restart);
#                     a pod created once it is ready must get a node requested within 5 s.
#   token_not_logged  tidepool runs at --log-level trace with a bearer token (through the proxy,
#                     and straight to the API server with a real ServiceAccount token) through a
#                     scale-up (5% 429 and 500 on the proxy path); neither token may be logged,
#                     nor appear in an Event or the status ConfigMap.
# Prints figures ("resumed N.N s after the API came back") and PASS/FAIL per scenario.
set -uo pipefail

TIDEPOOL=${1:?usage: fault_proxy.sh TIDEPOOL_BINARY [SCENARIO...]}
shift
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tidepool-faults.XXXXXX")
source "$HERE/lib.sh"
OUTAGE=${FAULT_OUTAGE:-10}
NS=faults
TP_PID=""
PROXY_PID=""

stop_proxy() {
  if [[ -n $PROXY_PID ]]; then kill -TERM "$PROXY_PID" 2>/dev/null; wait "$PROXY_PID" 2>/dev/null; PROXY_PID=""; fi
}
cleanup() {
  stop_tidepool
  stop_proxy
  if [[ -n ${KUBECONFIG:-} ]]; then
    kubectl --request-timeout=20s delete clusterrolebinding tidepool-faults-token >/dev/null 2>&1
  fi
  e2e_teardown
}
trap cleanup EXIT
trap "exit 143" INT TERM

e2e_connect
PKI=$TESTENV_DIR/pki
APISERVER=$(k config view --minify -o jsonpath='{.clusters[0].cluster.server}')


CONFIG=$WORK/config.yaml
cp "$HERE/config.yaml" "$CONFIG"

# kubeconfig_for SERVER TOKEN FILE: a kubeconfig with a bearer token, verifying the server
# against testenv's CA (TLS verification stays on).
kubeconfig_for() {
  cat >"$3" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "$1", certificate-authority: "$PKI/ca.crt"}
users:
- name: u
  user: {token: "$2"}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
EOF
}

start_proxy() {
  PROXY_PORT=$(free_port)
  CONTROL_PORT=$(free_port)
  python3 "$HERE/fault_proxy.py" --listen "$PROXY_PORT" --control "$CONTROL_PORT" \
    --upstream "$APISERVER" --cert "$PKI/apiserver.crt" --key "$PKI/apiserver.key" \
    --client-cert "$PKI/admin.crt" --client-key "$PKI/admin.key" --ca "$PKI/ca.crt" \
    >>"$WORK/proxy.log" 2>&1 &
  PROXY_PID=$!
  local deadline=$((SECONDS + 10))
  while ((SECONDS < deadline)) && ! curl -s "http://127.0.0.1:$CONTROL_PORT/stats" >/dev/null; do sleep 0.2; done
}
faults() { curl -s "http://127.0.0.1:$CONTROL_PORT/set?$1"; }
stat() { curl -s "http://127.0.0.1:$CONTROL_PORT/stats" | python3 -c "import json,sys; print(int(json.load(sys.stdin)['stats']['$1']))"; }

run_tidepool() {  # run_tidepool KUBECONFIG [ARGS...]
  local kc=$1
  shift
  "$TIDEPOOL" run --config "$CONFIG" --kubeconfig "$kc" --namespace "$NS" --identity faults \
    --lease-duration 15s --renew-deadline 10s --retry-period 1s --listen "" "$@" >>"$WORK/tidepool.log" 2>&1 &
  TP_PID=$!
}

reset_cluster() {
  stop_tidepool
  k delete namespace "$NS" --wait=true --timeout=90s >/dev/null
  k delete nodes --all --wait=false >/dev/null
  local deadline=$((SECONDS + 60))
  while ((SECONDS < deadline)) && [[ $(k get nodes -o name | wc -l) -ne 0 ]]; do sleep 0.5; done
  k create namespace "$NS" >/dev/null
  deadline=$((SECONDS + 30))
  while ((SECONDS < deadline)) && ! k -n "$NS" get serviceaccount default >/dev/null; do sleep 0.5; done
}


FAILED=()
PASSED=()
fail() {
  echo "FAIL $CURRENT: $*"
  FAILED+=("$CURRENT")
  # What tidepool did, without the retry warnings that fill an outage; then the raw tail.
  echo "---- tidepool.log (info and errors, last 60)"
  grep -v -E ' W (informer|leader election: .*renewing|writing the status)' "$WORK/tidepool.log" | tail -60
  echo "---- tidepool.log (last 15 lines)"; tail -15 "$WORK/tidepool.log"
  echo "---- proxy stats: $(curl -s "http://127.0.0.1:${CONTROL_PORT:-1}/stats")"
  k get nodes
  k -n "$NS" get pods -o wide
  return 1
}
pass() { echo "PASS $CURRENT"; PASSED+=("$CURRENT"); }

TOKEN=fake-bearer-$RANDOM$RANDOM-$(date +%s%N)

scenario_faults() {
  start_proxy
  kubeconfig_for "https://127.0.0.1:$PROXY_PORT" "$TOKEN" "$WORK/proxy.kubeconfig"
  faults 'p429=0.2&p500=0.1&pslow=0.1&slow=1&cut=4' >/dev/null
  run_tidepool "$WORK/proxy.kubeconfig"
  sleep 3
  apply_gpu_pod f-0
  local t0=$SECONDS
  wait_until 90 pod_running f-0 || { fail "pod not Running within 90 s under faults"; return 1; }
  log "faults: pod Running after $((SECONDS - t0)) s"
  sleep 12
  # One node in all. Which GPU pool it comes from may vary: an injected 500 on the kwok
  # provider's write fails that pool's increase, which backs it off and falls back to the next.
  [[ $(k get nodes -o name | wc -l) -eq 1 ]] ||
    { fail "expected exactly 1 node, got: $(k get nodes -o name | tr '\n' ' ')"; return 1; }
  # The node the pod runs on must still be there (not removed on a stale view of its pods).
  local bound
  bound=$(k -n "$NS" get pod f-0 -o jsonpath='{.spec.nodeName}')
  k get node "$bound" >/dev/null || { fail "f-0 runs on node $bound, which tidepool deleted"; return 1; }
  local s429 s500 cut
  s429=$(stat injected_429) s500=$(stat injected_500) cut=$(stat watches_cut)
  echo "faults: $(stat requests) requests, $s429 injected 429, $s500 injected 500, $(stat slowed) slowed, $cut watches cut; 1 node for 1 pod"
  ((s429 > 0 && s500 > 0 && cut > 0)) || { fail "the proxy injected too little to mean anything"; return 1; }
  pass
}

scenario_outage() {
  reset_cluster  # a node left by an earlier scenario could hold the pods of this one
  [[ -n $PROXY_PID ]] || start_proxy
  kubeconfig_for "https://127.0.0.1:$PROXY_PORT" "$TOKEN" "$WORK/proxy.kubeconfig"
  faults 'p429=0&p500=0&pslow=0&cut=0&down=0' >/dev/null
  run_tidepool "$WORK/proxy.kubeconfig"
  apply_gpu_pod o-0
  wait_until 60 pod_running o-0 || { fail "o-0 not Running before the outage"; return 1; }
  local before
  before=$(requested)
  faults 'down=1' >/dev/null
  log "outage: API down for $OUTAGE s"
  sleep 1
  apply_gpu_pod o-1  # created straight at the API server while tidepool cannot see it
  sleep $((OUTAGE - 1))
  local t0
  t0=$(now_ms)
  faults 'down=0' >/dev/null
  wait_until 30 more_requested_than "$before" ||
    { fail "no node requested within 30 s of the API coming back"; return 1; }
  local took=$(( $(now_ms) - t0 ))
  echo "outage: ${OUTAGE} s down; node requested $((took / 1000)).$(printf %03d $((took % 1000))) s after the API came back (refused $(stat refused_down) connections, cut $(stat cut_by_down) streams)"
  wait_until 60 pod_running o-1 || { fail "o-1 not Running after the outage"; return 1; }
  sleep 8
  local want=$((before + 1))
  [[ $(k get nodes -o name | wc -l) -eq $want ]] ||
    { fail "expected $want nodes, got: $(k get nodes -o name | tr '\n' ' ')"; return 1; }
  ((took <= 5000)) || { fail "resumed after $took ms, more than 5 s"; return 1; }
  pass
}

# A real kube-apiserver restart (testenv restart: SIGKILL, down RESTART_DOWN s, started again
# with the same flags, a fresh watch cache). tidepool talks to it directly. After it is ready
# again a pod is created: tidepool must ask for its node within 5 s, with no duplicate and no
# node left tainted.
scenario_restart() {
  reset_cluster
  run_tidepool "$KUBECONFIG"
  apply_gpu_pod r-0
  wait_until 60 pod_running r-0 || { fail "r-0 not Running before the restart"; return 1; }
  local before
  before=$(requested)
  log "restart: kube-apiserver killed, down ${RESTART_DOWN:-3} s"
  "$ROOT/testenv/bin/testenv" restart --dir "$TESTENV_DIR" --kill --down "${RESTART_DOWN:-3}s" \
    kube-apiserver >>"$WORK/restart.log" 2>&1 ||
    { fail "testenv restart failed: $(tail -3 "$WORK/restart.log")"; return 1; }
  local t0
  t0=$(now_ms)
  apply_gpu_pod r-1
  wait_until 30 more_requested_than "$before" ||
    { fail "no node requested within 30 s of the restarted API server being ready"; return 1; }
  local took=$(( $(now_ms) - t0 ))
  echo "restart: $(grep -o 'ready again, [0-9.]*s' "$WORK/restart.log" | tail -1) after the kill; node requested $((took / 1000)).$(printf %03d $((took % 1000))) s after that (pod created then)"
  wait_until 60 pod_running r-1 || { fail "r-1 not Running after the restart"; return 1; }
  sleep 8
  [[ $(k get nodes -o name | wc -l) -eq $((before + 1)) ]] ||
    { fail "expected $((before + 1)) nodes, got: $(k get nodes -o name | tr '\n' ' ')"; return 1; }
  [[ $(tainted_nodes) -eq 0 ]] || { fail "$(tainted_nodes) node(s) left tainted ToBeDeleted"; return 1; }
  grep -q "lost leadership" "$WORK/tidepool.log" && log "restart: tidepool lost and regained the Lease"
  ((took <= 5000)) || { fail "resumed after $took ms, more than 5 s"; return 1; }
  pass
}

scenario_token_not_logged() {
  [[ -n $PROXY_PID ]] || start_proxy
  faults 'p429=0.05&p500=0.05&pslow=0&cut=0&down=0' >/dev/null
  kubeconfig_for "https://127.0.0.1:$PROXY_PORT" "$TOKEN" "$WORK/proxy.kubeconfig"
  : >"$WORK/tidepool.log"
  run_tidepool "$WORK/proxy.kubeconfig" --log-level trace
  apply_gpu_pod t-0
  wait_until 90 pod_running t-0 || { fail "t-0 not Running"; return 1; }
  stop_tidepool
  # A real ServiceAccount token, straight to the API server.
  k -n "$NS" create serviceaccount tidepool-faults >/dev/null
  k create clusterrolebinding tidepool-faults-token --clusterrole=cluster-admin \
    --serviceaccount="$NS:tidepool-faults" >/dev/null
  local real
  real=$(k -n "$NS" create token tidepool-faults --duration=1h)
  [[ -n $real ]] || { fail "could not create a ServiceAccount token"; return 1; }
  kubeconfig_for "$APISERVER" "$real" "$WORK/direct.kubeconfig"
  run_tidepool "$WORK/direct.kubeconfig" --log-level trace
  apply_gpu_pod t-1
  wait_until 60 pod_running t-1 || { fail "t-1 not Running with the ServiceAccount token"; return 1; }
  stop_tidepool
  local lines hits_fake hits_real
  lines=$(wc -l <"$WORK/tidepool.log")
  hits_fake=$(grep -c -F "$TOKEN" "$WORK/tidepool.log")
  hits_real=$(grep -c -F "$real" "$WORK/tidepool.log")
  # The signature part of the JWT alone must not appear either.
  local sig=${real##*.}
  local hits_sig
  hits_sig=$(grep -c -F "$sig" "$WORK/tidepool.log")
  # Nor in what tidepool writes to the cluster: its Events and its status ConfigMap.
  local shown=$WORK/shown.json hits_shown
  { k get events -A -o json; k -n "$NS" get configmap tidepool-status -o json; } >"$shown"
  hits_shown=$(grep -c -F -e "$TOKEN" -e "$real" -e "$sig" "$shown")
  echo "token_not_logged: $lines log lines at trace level, proxy token found $hits_fake times, ServiceAccount token $hits_real times, its signature $hits_sig times, in Events and status $hits_shown times; proxy saw the bearer header on $(stat bearer_seen) requests"
  ((lines > 20)) || { fail "the log is too short to mean anything"; return 1; }
  grep -q '"TriggeredScaleUp"' "$shown" || { fail "no Events read back"; return 1; }
  (($(stat bearer_seen) > 0)) || { fail "tidepool did not send the token at all"; return 1; }
  ((hits_fake == 0 && hits_real == 0 && hits_sig == 0)) || { fail "a bearer token is in the log"; return 1; }
  ((hits_shown == 0)) || { fail "a bearer token is in an Event or the status ConfigMap"; return 1; }
  pass
}

ALL=(faults outage restart token_not_logged)
reset_cluster
run_scenarios : ALL "$@"
stop_tidepool
stop_proxy
scenario_summary
