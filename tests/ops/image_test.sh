#!/usr/bin/env bash
# The container image and the Helm chart together (no Docker daemon: buildah and podman with a
# private store, deploy/containers-conf.sh):
#   1. deploy/build-image.sh builds the FROM-scratch image from TIDEPOOL_BINARY; its config runs
#      as the chart's runAsUser, the entrypoint is the binary, and there is no shell.
#   2. `tidepool version` and `tidepool plan` on examples/seed run inside it, read-only root, no
#      capabilities, and print exactly what the binary prints outside it.
#   3. The chart (kwok values, image set to the built one, the ProvisioningRequest CRD copied from
#      its upstream module by deploy/helm/provisioningrequest-crd.sh into a copy of the chart) is
#      rendered and applied for real to testenv in its own namespace; the CRD is established; the
#      Deployment the API server stored names the image and carries a non-root, read-only-root,
#      no-capability security context.
#   4. The image runs as that pod would: the stored container's args and security context, the
#      ConfigMap at /etc/tidepool, a ServiceAccount token of the chart's ServiceAccount (so the
#      chart's RBAC is what it gets), /tmp an empty directory. It must scale up for a pending pod
#      and back down when the pod is gone, with no "forbidden" in its log, write its status and
#      Events, and leave /tmp empty (it writes nothing to its filesystem).
# Usage: image_test.sh TIDEPOOL_BINARY. Brings up its own testenv; always tears it down.
set -uo pipefail

TIDEPOOL=${1:?usage: image_test.sh TIDEPOOL_BINARY}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tidepool-image.XXXXXX")
source "$ROOT/tests/e2e/lib.sh"
NS=tidepool-image
APP_NS=image-workload
CONTAINER=tidepool-image-test-$$
passed=0 failed=0
ok() { passed=$((passed + 1)); }
bad() { echo "FAIL: $*" >&2; failed=$((failed + 1)); }
check() {  # check WHAT ACTUAL EXPECTED
  if [[ $2 == "$3" ]]; then ok; else bad "$1: got '$2', expected '$3'"; fi
}

cleanup() {
  podman rm -f -t 2 "$CONTAINER" >/dev/null 2>&1
  e2e_disconnect
  if [[ -n ${E2E_KEEP_LOGS:-} ]]; then mkdir -p "$E2E_KEEP_LOGS" && cp "$WORK"/*.log "$E2E_KEEP_LOGS"/; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
trap "exit 143" INT TERM

for tool in buildah podman runc; do
  command -v $tool >/dev/null || { echo "FAIL setup: $tool not found (scripts/setup.sh installs it)"; exit 1; }
done
eval "$("$ROOT/deploy/containers-conf.sh" "$WORK/containers")"
# The pod's security context as podman flags (checked against the stored Deployment in step 3).
SECURE=(--read-only --cap-drop ALL --security-opt no-new-privileges)

# 1. Build.
start=$(now_ms)
if ! IMAGE=$("$ROOT/deploy/build-image.sh" "$TIDEPOOL" --tag localhost/tidepool:test \
    --root "$WORK/containers" 2>"$WORK/build.log"); then
  cat "$WORK/build.log" >&2
  echo "FAIL: deploy/build-image.sh"
  exit 1
fi
log "image $IMAGE built in $(secs $(($(now_ms) - start))) s"
chart_uid=$(awk '/^podSecurityContext:/ {p = 1} p && /runAsUser:/ {print $2; exit}' \
  "$ROOT/deploy/helm/tidepool/values.yaml")
check "image user" "$(podman image inspect "$IMAGE" --format '{{.Config.User}}')" \
  "$chart_uid:$chart_uid"
check "image entrypoint" "$(podman image inspect "$IMAGE" --format '{{.Config.Entrypoint}}')" \
  "[/usr/local/bin/tidepool]"
if podman run --rm "${SECURE[@]}" --entrypoint /bin/sh "$IMAGE" -c true >/dev/null 2>&1; then
  bad "the image has a shell"
else
  ok
fi

# 2. version and plan inside the image.
check "tidepool version in the image" \
  "$(podman run --rm "${SECURE[@]}" "$IMAGE" version 2>&1)" "$("$TIDEPOOL" version)"
seed=$ROOT/examples/seed
"$TIDEPOOL" plan --config "$seed/config.yaml" --state "$seed/state.yaml" -o json >"$WORK/plan-host.json"
if podman run --rm "${SECURE[@]}" -v "$seed:/seed:ro" "$IMAGE" \
    plan --config /seed/config.yaml --state /seed/state.yaml -o json >"$WORK/plan-image.json" \
    2>"$WORK/plan-image.log" && [[ -s $WORK/plan-image.json ]] &&
    cmp -s "$WORK/plan-host.json" "$WORK/plan-image.json"; then
  ok
else
  bad "tidepool plan in the image differs from the host's: $(head -c 400 "$WORK/plan-image.log")"
fi

# 3. The chart on testenv, for real.
e2e_connect
source "$TESTENV_DIR/env"
api_port=${TESTENV_APISERVER##*:}
port=$(free_port)
go_bin=$(command -v go || echo /usr/local/go/bin/go)
if ! (cd "$ROOT/deploy/helm/render" && GOTOOLCHAIN=local GOFLAGS=-mod=readonly \
    "$go_bin" build -o "$WORK/render" . 2>"$WORK/render-build.log"); then
  cat "$WORK/render-build.log" >&2
  echo "FAIL setup: building deploy/helm/render"
  exit 1
fi
cp -R "$ROOT/deploy/helm/tidepool" "$WORK/chart"
if ! "$ROOT/deploy/helm/provisioningrequest-crd.sh" --chart "$WORK/chart" >"$WORK/crd.log" 2>&1; then
  cat "$WORK/crd.log" >&2
  echo "FAIL setup: deploy/helm/provisioningrequest-crd.sh"
  exit 1
fi
# replicaCount 0: testenv has no container runtime; the pod runs under podman in step 4.
"$WORK/render" --chart "$WORK/chart" --name tidepool --namespace "$NS" \
  -f "$ROOT/deploy/helm/tidepool/values-kwok.yaml" --set image.repository="${IMAGE%:*}" \
  --set image.tag="${IMAGE##*:}" --set replicaCount=0 --set listen=127.0.0.1:$port \
  --set config.scaleDown.unneededTime=5s --set config.scaleDown.delayAfterAdd=5s \
  --set provider.bootDelay=2s >"$WORK/chart.yaml" || { echo "FAIL: rendering the chart"; exit 1; }
k create namespace "$NS" >/dev/null
k create namespace "$APP_NS" >/dev/null
if out=$(kubectl apply --dry-run=server -f "$WORK/chart.yaml" 2>&1) &&
    out=$(kubectl apply -f "$WORK/chart.yaml" 2>&1); then
  ok
else
  bad "applying the chart: $out"
fi
if kubectl wait --for=condition=Established --timeout=30s \
    crd/provisioningrequests.autoscaling.x-k8s.io >/dev/null 2>&1; then
  ok
else
  bad "the chart's ProvisioningRequest CRD is not established"
fi
dep() { k -n "$NS" get deployment tidepool -o jsonpath="{.spec.template.spec.$1}"; }
check "Deployment image" "$(dep 'containers[0].image')" "$IMAGE"
check "runAsNonRoot" "$(dep 'securityContext.runAsNonRoot')" true
check "runAsUser" "$(dep 'securityContext.runAsUser')" "$chart_uid"
check "readOnlyRootFilesystem" "$(dep 'containers[0].securityContext.readOnlyRootFilesystem')" true
check "allowPrivilegeEscalation" \
  "$(dep 'containers[0].securityContext.allowPrivilegeEscalation')" false
check "capabilities dropped" "$(dep 'containers[0].securityContext.capabilities.drop')" '["ALL"]'
check "the one writable mount" "$(k -n "$NS" get deployment tidepool -o go-template='{{range (index .spec.template.spec.containers 0).volumeMounts}}{{if not .readOnly}}{{.mountPath}} {{end}}{{end}}')" "/tmp "
mapfile -t ARGS < <(k -n "$NS" get deployment tidepool \
  -o go-template='{{range (index .spec.template.spec.containers 0).args}}{{.}}{{"\n"}}{{end}}')

# 4. The image as the pod: the chart's ServiceAccount, ConfigMap and args.
sa=$WORK/serviceaccount
mkdir -p "$sa" "$WORK/etc" "$WORK/tmp"
chmod 1777 "$WORK/tmp"
k -n "$NS" create token tidepool --duration 1h >"$sa/token" || bad "kubectl create token tidepool"
cp "$TESTENV_CA" "$sa/ca.crt"
echo "$NS" >"$sa/namespace"
k -n "$NS" get configmap tidepool-config -o jsonpath='{.data.config\.yaml}' >"$WORK/etc/config.yaml"
[[ -s $WORK/etc/config.yaml ]] || bad "ConfigMap tidepool-config has no config.yaml"
chmod -R a+rX "$WORK/etc" "$sa"
podman run -d --name "$CONTAINER" "${SECURE[@]}" --user "$chart_uid:$chart_uid" \
  -v "$WORK/etc:/etc/tidepool:ro" -v "$sa:/var/run/secrets/kubernetes.io/serviceaccount:ro" \
  -v "$WORK/tmp:/tmp" -e KUBERNETES_SERVICE_HOST=127.0.0.1 -e KUBERNETES_SERVICE_PORT="$api_port" \
  -e POD_NAME=tidepool-image-0 -e POD_NAMESPACE="$NS" "$IMAGE" "${ARGS[@]}" >/dev/null ||
  { echo "FAIL: podman run the chart's container"; exit 1; }
ready() { [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz") == 200 ]]; }
wait_until 60 ready && ok || bad "/readyz not 200 within 60 s"

cat <<EOF | k apply -f - >/dev/null
apiVersion: v1
kind: Pod
metadata: {name: work, namespace: $APP_NS}
spec:
  containers:
  - {name: main, image: busybox, resources: {requests: {cpu: "1", memory: 1Gi}}}
EOF
pod_running_in() { [[ $(k -n "$1" get pod "$2" -o jsonpath='{.status.phase}') == Running ]]; }
wait_until 90 pod_running_in "$APP_NS" work && ok || bad "pod not Running within 90 s"
pool_nodes() { k get nodes -l tidepool.dev/pool -o name | wc -l; }
check "nodes after the scale-up" "$(pool_nodes)" 1
event_by_tidepool() {
  [[ -n $(k -n "$APP_NS" get events --field-selector reason=TriggeredScaleUp -o name) ]]
}
wait_until 20 event_by_tidepool && ok || bad "no TriggeredScaleUp Event for the pod"
status_written() { [[ -n $(k -n "$NS" get configmap tidepool-status -o name) ]]; }
wait_until 20 status_written && ok || bad "no status ConfigMap in $NS"
[[ -n $(k -n "$NS" get lease tidepool -o jsonpath='{.spec.holderIdentity}') ]] && ok ||
  bad "no Lease holder in $NS"
k -n "$APP_NS" delete pod work --wait=false >/dev/null
no_pool_nodes() { (($(pool_nodes) == 0)); }
wait_until 90 no_pool_nodes && ok || bad "the node was not removed within 90 s"

podman logs "$CONTAINER" >"$WORK/tidepool.log" 2>&1
if grep -qiE 'forbidden|\b403\b' "$WORK/tidepool.log"; then
  bad "RBAC refused a request: $(grep -iE 'forbidden|\b403\b' "$WORK/tidepool.log" | head -3)"
else
  ok
fi
check "files tidepool wrote to /tmp" "$(find "$WORK/tmp" -mindepth 1 | wc -l)" 0
check "container still running" "$(podman inspect "$CONTAINER" --format '{{.State.Running}}')" true
podman stop -t 10 "$CONTAINER" >/dev/null 2>&1
check "exit code after SIGTERM" "$(podman inspect "$CONTAINER" --format '{{.State.ExitCode}}')" 0

if ((failed)); then tail -40 "$WORK/tidepool.log" >&2; fi
echo "$passed passed, $failed failed"
((failed == 0))
