#!/usr/bin/env bash
# The load generator of the HPA test and demo on testenv (`up --with metrics`): keeps every pod
# matching SELECTOR in NAMESPACE at the CPU usage written in LOAD_FILE (a quantity such as 450m),
# by setting the pod annotation kwok.x-k8s.io/usage-cpu that kwok's emulated kubelet metrics
# report, once a second, on new pods too (the replicas an HPA adds work as hard as the others).
# Runs until killed. Usage: drive-cpu-usage.sh NAMESPACE SELECTOR LOAD_FILE
set -uo pipefail
ns=${1:?usage: drive-cpu-usage.sh NAMESPACE SELECTOR LOAD_FILE} selector=${2:?} load_file=${3:?}
k() { kubectl --request-timeout=20s "$@" 2>/dev/null; }
while true; do
  want=$(<"$load_file")
  k -n "$ns" get pods -l "$selector" -o \
    jsonpath='{range .items[*]}{.metadata.name}{" "}{.metadata.annotations.kwok\.x-k8s\.io/usage-cpu}{"\n"}{end}' |
    while read -r pod have; do
      [[ $have == "$want" ]] || k -n "$ns" annotate --overwrite pod "$pod" "kwok.x-k8s.io/usage-cpu=$want" >/dev/null
    done
  sleep 1
done
