# Shared by the live demos (scripts/live-demo.sh, scripts/hpa-demo.sh; sourced, not run, after
# setting ROOT): their scratch folder, control plane and cleanup, and the timeline they print.
# tidepool's log is $WORK/tidepool.log; DEMO_HPA=NAME adds that HPA's scale changes to it.

TP_PID=""    # tidepool run, stopped with SIGTERM at exit
BG_PIDS=()   # background loops, killed at exit

# demo_start NAME: WORK (a new scratch folder), TESTENV_DIR in it, T0, and the exit trap that stops
# everything and removes WORK.
demo_start() {
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/tidepool-$1.XXXXXX")
  export TESTENV_DIR=$WORK/testenv
  T0=$SECONDS
  trap demo_cleanup EXIT
  trap 'exit 130' INT TERM
}
demo_cleanup() {
  local pid
  for pid in "${BG_PIDS[@]}"; do kill "$pid" 2>/dev/null; done
  [[ -n $TP_PID ]] && kill -TERM "$TP_PID" 2>/dev/null && wait "$TP_PID" 2>/dev/null
  "$ROOT/testenv/down" >/dev/null 2>&1
  rm -rf "$WORK"
}

# demo_testenv [UP_OPTION...]: starts testenv (options passed to testenv/up), exports KUBECONFIG.
demo_testenv() {
  KUBECONFIG=$("$ROOT/testenv/up" "$@" 2>"$WORK/up.log" | tail -1) || {
    cat "$WORK/up.log" >&2
    echo "demo: testenv did not start" >&2
    exit 1
  }
  export KUBECONFIG
}

say() { printf '%6s  %s\n' "+$((SECONDS - T0))s" "$*"; }
k() { kubectl --request-timeout=20s "$@" 2>/dev/null; }

wait_until() {
  local deadline=$((SECONDS + $1))
  shift
  while ((SECONDS < deadline)); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 1
  done
  return 1
}

# The timeline, polled every second: tidepool's decisions from its log, node and pod changes
# (namespace default) from the API server, and the HPA's replica count when DEMO_HPA is set. One
# background loop, so stopping it is one kill.
timeline() {
  local seen=0 prev_nodes="" prev_pods="" prev_hpa="" nodes pods hpa
  while true; do
    if [[ -n ${DEMO_HPA:-} ]]; then  # desired replicas, once the HPA has computed them
      hpa=$(k get hpa "$DEMO_HPA" -o jsonpath='{.status.desiredReplicas} {.status.currentMetrics[0].resource.current.averageUtilization}')
      if [[ ${hpa% *} =~ ^[1-9] ]]; then
        [[ -n $prev_hpa && ${hpa% *} != "${prev_hpa% *}" ]] &&
          say "hpa $DEMO_HPA: ${prev_hpa% *} -> ${hpa% *} replicas (CPU at ${hpa#* }% of requests)"
        prev_hpa=$hpa
      fi
    fi
    mapfile -t lines < <(tail -n +$((seen + 1)) "$WORK/tidepool.log" 2>/dev/null)
    seen=$((seen + ${#lines[@]}))
    for line in "${lines[@]}"; do
      [[ $line =~ (IncreasePool|TaintNode|EvictPods|DeleteNode|ScaleDownFailed|kwok\ provider:\ node) ]] || continue
      msg=${line#* * }
      msg=${msg%% (*}
      say "tidepool: ${msg/kwok provider: /provider: }"
    done
    nodes=$(k get nodes -o name | sed 's|^node/||' | sort)
    pods=$(k get pods -o custom-columns=N:.metadata.name,P:.status.phase,NODE:.spec.nodeName --no-headers | sort)
    comm -13 <(echo "$prev_nodes") <(echo "$nodes") | while read -r n; do
      [[ -n $n ]] && say "node $n registered"
    done
    comm -23 <(echo "$prev_nodes") <(echo "$nodes") | while read -r n; do
      [[ -n $n ]] && say "node $n deleted"
    done
    comm -13 <(echo "$prev_pods") <(echo "$pods") | while read -r n p node; do
      [[ -n $n ]] || continue
      if [[ $node == "<none>" ]]; then say "pod $n $p"; else say "pod $n $p on $node"; fi
    done
    prev_nodes=$nodes
    prev_pods=$pods
    sleep 1
  done
}
