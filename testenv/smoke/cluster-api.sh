# Checks of `testenv/smoke-test --with cluster-api` (sourced by smoke-test:
# uses its check/pass/fail/k/poll, $KUBECTL and $work). A Cluster of
# testenv's own provider (the workload cluster is this API server), a
# MachineDeployment scaled 0 -> 2 through the scale subresource: two Machines,
# two kwok Nodes with the Machines' providerIDs, Machines Running with a
# nodeRef. Then 2 -> 3 and back to 2 with cluster.x-k8s.io/delete-machine on
# the newest Machine while the MachineDeployment deletes the oldest first:
# the marked Machine and its Node go, the two others stay.

cj() { "$KUBECTL" -n capi-smoke get "$@"; }

cat >"$work/capi.yaml" <<'EOF'
apiVersion: v1
kind: Namespace
metadata:
  name: capi-smoke
---
apiVersion: infrastructure.testenv.tidepool.dev/v1alpha1
kind: TestenvCluster
metadata:
  name: smoke
  namespace: capi-smoke
---
apiVersion: controlplane.testenv.tidepool.dev/v1alpha1
kind: TestenvControlPlane
metadata:
  name: smoke
  namespace: capi-smoke
spec:
  version: v1.36.3
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata:
  name: smoke
  namespace: capi-smoke
spec:
  controlPlaneRef:
    apiGroup: controlplane.testenv.tidepool.dev
    kind: TestenvControlPlane
    name: smoke
  infrastructureRef:
    apiGroup: infrastructure.testenv.tidepool.dev
    kind: TestenvCluster
    name: smoke
---
apiVersion: infrastructure.testenv.tidepool.dev/v1alpha1
kind: TestenvMachineTemplate
metadata:
  name: gpu
  namespace: capi-smoke
spec:
  template:
    spec:
      bootDelay: 3s
      capacity: {cpu: "8", memory: 64Gi, pods: "110", nvidia.com/gpu: "2"}
      nodeLabels: {smoke.tidepool.dev/pool: gpu}
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineDeployment
metadata:
  name: gpu
  namespace: capi-smoke
spec:
  clusterName: smoke
  replicas: 0
  deletion:
    order: Oldest
  selector:
    matchLabels: {smoke.tidepool.dev/md: gpu}
  template:
    metadata:
      labels: {smoke.tidepool.dev/md: gpu}
    spec:
      clusterName: smoke
      version: v1.36.3
      bootstrap:
        dataSecretName: smoke-no-bootstrap
      infrastructureRef:
        apiGroup: infrastructure.testenv.tidepool.dev
        kind: TestenvMachineTemplate
        name: gpu
EOF
check "Cluster API: Cluster, TestenvCluster, TestenvControlPlane, TestenvMachineTemplate, MachineDeployment created" \
  k apply -f "$work/capi.yaml"

# Refused by Cluster API's validating webhook: template labels that no longer
# match the selector (which its defaulting webhook extended with
# cluster.x-k8s.io/cluster-name). A server-side dry run.
check "Cluster API: its webhook refuses MachineDeployment template labels that miss its selector" \
  refused "must match spec.selector" k -n capi-smoke patch --dry-run=server machinedeployment gpu --type=merge \
  -p '{"spec":{"template":{"metadata":{"labels":{"smoke.tidepool.dev/md":"other"}}}}}'

# Bad input to testenv's provider is refused when written, not found later.
cat >"$work/capi-bad-template.yaml" <<'EOF'
apiVersion: infrastructure.testenv.tidepool.dev/v1alpha1
kind: TestenvMachineTemplate
metadata:
  name: bad
  namespace: capi-smoke
spec:
  template:
    spec:
      bootDelay: soon
      capacity: {cpu: lots}
EOF
for bad in 'bootDelay: Invalid value: "soon"' 'capacity.cpu: Invalid value: "lots"'; do
  check "Cluster API: a TestenvMachineTemplate with bootDelay soon, cpu lots is refused: ${bad%%:*}" \
    refused "spec.template.spec.$bad" "$KUBECTL" create -f "$work/capi-bad-template.yaml"
done

cluster_initialized() {
  local s
  s="$(cj cluster smoke -o jsonpath='{.status.initialization.infrastructureProvisioned}/{.status.initialization.controlPlaneInitialized}')"
  echo "infrastructureProvisioned/controlPlaneInitialized: $s"
  [[ $s == true/true ]]
}
check "Cluster API: the Cluster's infrastructure is provisioned and its control plane initialized" \
  poll 60 cluster_initialized
check "Cluster API: the kubeconfig Secret smoke-kubeconfig exists (written by the testenv control plane)" \
  cj secret smoke-kubeconfig
check "Cluster API: the TestenvMachineTemplate publishes status.capacity (nvidia.com/gpu=2)" \
  k -n capi-smoke wait testenvmachinetemplate/gpu --timeout=30s --for=jsonpath='{.status.capacity.nvidia\.com/gpu}'=2
check "Cluster API: scale the MachineDeployment 0 -> 2 through the scale subresource" \
  k -n capi-smoke scale machinedeployment/gpu --replicas=2

machines() { cj machines -l smoke.tidepool.dev/md=gpu -o jsonpath='{range .items[*]}{.metadata.name}{" "}{end}'; }
# machines_running N: N Machines, each Running with a nodeRef to a Node that
# carries the Machine's providerID.
machines_running() {
  local m phase node pid npid ok=0 n=0
  for m in $(machines); do
    n=$((n + 1))
    phase="$(cj machine "$m" -o jsonpath='{.status.phase}')"
    node="$(cj machine "$m" -o jsonpath='{.status.nodeRef.name}')"
    pid="$(cj machine "$m" -o jsonpath='{.spec.providerID}')"
    npid="$("$KUBECTL" get node "$node" -o jsonpath='{.spec.providerID}' 2>/dev/null)"
    echo "$m: phase=$phase nodeRef=$node providerID=$pid node.providerID=$npid"
    [[ $phase == Running && -n $node && $pid == testenv://capi-smoke/* && $npid == "$pid" ]] && ok=$((ok + 1))
  done
  [[ $n == "$1" && $ok == "$1" ]]
}
check "Cluster API: two Machines Running, each with a nodeRef to a kwok Node carrying its providerID" \
  poll 120 machines_running 2
nodes_ready() {
  local s
  s="$("$KUBECTL" get nodes -l smoke.tidepool.dev/pool=gpu \
    -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}/{.status.allocatable.nvidia\.com/gpu} {end}')"
  echo "$s"
  [[ $s == "True/2 True/2 " ]]
}
check "Cluster API: both Nodes are Ready (kwok) with the template's 2 GPUs" poll 60 nodes_ready

read -r -a first <<<"$(machines)"
first_uids="$(cj machines -l smoke.tidepool.dev/md=gpu -o jsonpath='{.items[*].metadata.uid}')"
check "Cluster API: scale the MachineDeployment 2 -> 3" k -n capi-smoke scale machinedeployment/gpu --replicas=3
check "Cluster API: three Machines Running with Nodes" poll 120 machines_running 3
victim="$(for m in $(machines); do [[ " ${first[*]} " == *" $m "* ]] || echo "$m"; done)"
victim_node="$(cj machine "$victim" -o jsonpath='{.status.nodeRef.name}')"
check "Cluster API: mark the newest Machine ($victim) with cluster.x-k8s.io/delete-machine" \
  k -n capi-smoke annotate machine "$victim" cluster.x-k8s.io/delete-machine=yes
check "Cluster API: scale the MachineDeployment 3 -> 2 (deletion order Oldest)" \
  k -n capi-smoke scale machinedeployment/gpu --replicas=2
check "Cluster API: the marked Machine is deleted" k -n capi-smoke wait --for=delete "machine/$victim" --timeout=120s
check "Cluster API: its Node $victim_node is deleted" k wait --for=delete "node/$victim_node" --timeout=60s
others_kept() {
  local uids phases
  uids="$(cj machines -l smoke.tidepool.dev/md=gpu -o jsonpath='{.items[*].metadata.uid}')"
  phases="$(cj machines -l smoke.tidepool.dev/md=gpu -o jsonpath='{.items[*].status.phase}')"
  echo "machines: $(machines); uids $uids (were $first_uids); phases $phases"
  [[ $uids == "$first_uids" && $phases == "Running Running" ]]
}
# Give the MachineSet time to do something wrong (delete or replace another).
sleep 5
check "Cluster API: the two older Machines are untouched and Running, no replacement made" others_kept
