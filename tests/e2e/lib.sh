# Shared helpers of the end-to-end scripts (sourced, not run). The script sets ROOT (the
# repository), WORK (its scratch directory) and NS (its namespace) before sourcing.

log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }
k() { kubectl --request-timeout=20s "$@" 2>/dev/null; }

# e2e_connect [UP_OPTION...]: exports KUBECONFIG for the testenv in $E2E_TESTENV_DIR (a ctest
# fixture's) or, without it, for a private one brought up in $WORK/testenv (with the options
# passed on to testenv/up, e.g. --apiserver-arg=...); e2e_disconnect stops only the private one.
e2e_connect() {
  if [[ -n ${E2E_TESTENV_DIR:-} ]]; then
    export TESTENV_DIR=$E2E_TESTENV_DIR
    KUBECONFIG=$TESTENV_DIR/admin.kubeconfig
  else
    export TESTENV_DIR=$WORK/testenv
    E2E_OWN_TESTENV=1
    KUBECONFIG=$(TESTENV_SKIP_BUILD=${TESTENV_SKIP_BUILD:-1} "$ROOT/testenv/up" --timeout 180s \
      "$@" 2>"$WORK/up.log" | tail -1) || {
      cat "$WORK/up.log" >&2
      echo "FAIL setup: testenv did not come up" >&2
      exit 1
    }
  fi
  export KUBECONFIG
}
e2e_disconnect() {
  if [[ -n ${E2E_OWN_TESTENV:-} ]]; then "$ROOT/testenv/down" >/dev/null 2>&1; fi
}
# e2e_teardown: the end of a script's exit trap: namespace $NS and every Node deleted (when
# connected), the private testenv stopped, the logs copied to $E2E_KEEP_LOGS (when set), $WORK
# removed.
e2e_teardown() {
  if [[ -n ${KUBECONFIG:-} ]]; then
    kubectl --request-timeout=20s delete namespace "$NS" --wait=false >/dev/null 2>&1
    kubectl --request-timeout=20s delete nodes --all --wait=false >/dev/null 2>&1
  fi
  e2e_disconnect
  if [[ -n ${E2E_KEEP_LOGS:-} ]]; then mkdir -p "$E2E_KEEP_LOGS" && cp "$WORK"/*.log "$E2E_KEEP_LOGS"/; fi
  rm -rf "$WORK"
}

# e2e_reset_cluster: every `tidepool run` of the script stopped, namespace $NS and every Node
# deleted (waiting for the nodes to go), $NS created again with its default ServiceAccount.
e2e_reset_cluster() {
  stop_all_tidepool
  k delete namespace "$NS" --wait=true --timeout=60s >/dev/null
  k delete nodes --all --wait=false >/dev/null
  wait_until 60 bash -c "[[ \$(kubectl get nodes -o name 2>/dev/null | wc -l) -eq 0 ]]" || true
  k create namespace "$NS" >/dev/null
  wait_until 30 k -n "$NS" get serviceaccount default || true
}

# wait_until SECONDS CMD...: polls CMD every 0.5 s; fails after SECONDS.
wait_until() {
  local deadline=$((SECONDS + $1))
  shift
  while ((SECONDS < deadline)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.5
  done
  return 1
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start_tidepool NAME CONFIG [ARGS...]: `tidepool run` ($TIDEPOOL) in the background in $NS, log
# in $WORK/NAME.log, pid in LAST_PID and TP_PIDS (not for $(...): the list must stay in this
# shell); short lease timings; ops server on $LISTEN (default: off); the cluster model in mode
# $CLUSTER_MODEL (default: verify, so every scale-down pass on the model is checked against one
# on a built snapshot and tidepool stops on a difference: see tidepool_checks_failed).
TP_PIDS=()
start_tidepool() {
  local name=$1 config=$2
  shift 2
  "$TIDEPOOL" run --config "$config" --kubeconfig "$KUBECONFIG" --namespace "$NS" \
    --identity "$name" --lease-duration 6s --renew-deadline 4s --retry-period 1s \
    --listen "${LISTEN:-}" --cluster-model "${CLUSTER_MODEL:-verify}" "$@" \
    >>"$WORK/$name.log" 2>&1 &
  LAST_PID=$!
  TP_PIDS+=("$LAST_PID")
}
# tidepool_checks_failed: prints the first internal check that stopped a tidepool of this script
# (its logs in $WORK) and succeeds; fails when none did.
tidepool_checks_failed() {
  grep -h -m1 -A2 "check failed" "$WORK"/*.log 2>/dev/null
}
# stop_tidepool: SIGTERM the one `tidepool run` a script started itself (pid in TP_PID), wait.
stop_tidepool() {
  if [[ -n ${TP_PID:-} ]]; then kill -TERM "$TP_PID" 2>/dev/null; wait "$TP_PID" 2>/dev/null; TP_PID=""; fi
}
stop_all_tidepool() {
  local pid
  for pid in "${TP_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for pid in "${TP_PIDS[@]}"; do wait "$pid" 2>/dev/null; done
  TP_PIDS=()
}

node_count() { k get nodes -o name | wc -l; }
pod_phase() { k -n "$NS" get pod "$1" -o jsonpath='{.status.phase}'; }
pod_running() { [[ $(pod_phase "$1") == Running ]]; }
# apply_gpu_pod NAME: a bare pod in $NS asking for 1 GPU, created (or left as it is).
apply_gpu_pod() {
  cat <<EOF | k apply -f - >/dev/null
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: $NS}
spec:
  containers:
  - name: train
    image: busybox
    resources: {requests: {cpu: "1", memory: 1Gi, nvidia.com/gpu: "1"}, limits: {nvidia.com/gpu: "1"}}
EOF
}
# Nodes carrying the ToBeDeletedByClusterAutoscaler taint.
tainted_nodes() {
  k get nodes -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.spec.taints[*].key}{"\n"}{end}' |
    grep -c ToBeDeletedByClusterAutoscaler
}
event_for() {  # event_for REASON OBJECT_NAME
  [[ -n $(k get events -A --field-selector "reason=$1,involvedObject.name=$2" -o name) ]]
}

# run_scenarios BEFORE_EACH DEFAULT_LIST_NAME [SCENARIO...]: runs scenario_<name> for each
# SCENARIO (none: every name in the array named DEFAULT_LIST_NAME), with CURRENT set and after
# running the command BEFORE_EACH (":" for none). A failing scenario does not stop the others;
# they record themselves in PASSED / FAILED through the script's pass / fail.
run_scenarios() {
  local before=$1 list=$2 s
  shift 2
  local -n all_scenarios=$list
  local -a selected=("$@")
  ((${#selected[@]})) || selected=("${all_scenarios[@]}")
  for s in "${selected[@]}"; do
    CURRENT=$s
    if ! declare -F "scenario_$s" >/dev/null; then
      echo "FAIL $s: no such scenario (known: ${all_scenarios[*]})"
      FAILED+=("$s")
      continue
    fi
    $before
    log "scenario $s"
    "scenario_$s" || true
  done
}

# scenario_summary: "N passed, M failed: names"; false when any failed.
scenario_summary() {
  echo "${#PASSED[@]} passed, ${#FAILED[@]} failed${FAILED:+: ${FAILED[*]}}"
  ((${#FAILED[@]} == 0))
}

now_ms() { date +%s%3N; }
secs() { awk -v ms="$1" 'BEGIN { printf "%.1f", ms / 1000 }'; }  # secs MILLISECONDS

# Machines tidepool asked the kwok provider for in namespace $NS (its state ConfigMap), booting
# or registered, in any pool, each once: a machine whose Node is up may still be listed as
# booting when the provider could not save its state (a fault cut that write).
provider_machines() {
  k -n "$NS" get configmap tidepool-kwok-provider -o jsonpath='{.data.state}' |
    grep -o '"name": *"[^"]*"' | sed 's/.*"\([^"]*\)"$/\1/'
}
machines() { { provider_machines; k get nodes -o name | sed 's|^node/||'; } | sort -u; }
requested() { machines | wc -l; }
more_requested_than() { (($(requested) > $1)); }
