#!/usr/bin/env bash
# The committed manifests (deploy/manifests/) against a real API server (testenv/): every object
# passes `kubectl apply --dry-run=server`; then the RBAC objects are applied for real and
# `kubectl auth can-i --as=system:serviceaccount:kube-system:tidepool` must allow every verb the
# controller uses and refuse what it must not have (Secrets, pod deletion, changing or reading
# single Deployments, node creation unless the provider is kwok).
# Usage: deploy_rbac_testenv_test.sh SOURCE_DIR
# Uses $TESTENV_DIR when set (else a fresh directory of its own) and always tears its cluster down.
set -euo pipefail

src=${1:?usage: $0 SOURCE_DIR}
# testenv/up creates the directory itself (it refuses an existing one without its marker).
dir=${TESTENV_DIR:-${TMPDIR:-/tmp}/tidepool-ops-testenv.$$}
export TESTENV_DIR=$dir
work=$(mktemp -d)
cleanup() {
  "$src/testenv/down" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

if ! KUBECONFIG=$("$src/testenv/up" 2>"$work/up.log"); then
  echo "FAIL: testenv/up failed:" >&2
  tail -30 "$work/up.log" >&2
  exit 1
fi
export KUBECONFIG

passed=0 failed=0
ok() { passed=$((passed + 1)); }
bad() { echo "FAIL: $*" >&2; failed=$((failed + 1)); }

# 1. Every object of both variants is accepted by the API server (schema, defaults, admission).
for m in tidepool.yaml tidepool-kwok.yaml; do
  if out=$(kubectl apply --dry-run=server -f "$src/deploy/manifests/$m" 2>&1); then
    ok
    # PodDisruptionBudget, ServiceAccount, ConfigMap, ClusterRole(Binding), Role(Binding),
    # Service, Deployment.
    n=$(grep -c '(server dry run)$' <<<"$out" || true)
    ((n == 9)) && ok || bad "$m: $n objects in the dry run, expected 9: $out"
  else
    bad "kubectl apply --dry-run=server -f deploy/manifests/$m: $out"
  fi
done

# The RBAC documents of a manifest file (ServiceAccount, ClusterRole(Binding), Role(Binding)).
rbac_of() {
  awk '
    /^---$/ { if (keep) printf "%s", doc; doc = ""; keep = 0; next }
    { doc = doc $0 "\n" }
    /^kind: (ServiceAccount|ClusterRole|ClusterRoleBinding|Role|RoleBinding)$/ { keep = 1 }
    END { if (keep) printf "%s", doc }
  ' "$1" | sed 's/^# Source:.*$/---/'
}

sa=system:serviceaccount:kube-system:tidepool
# can VERB RESOURCE [kubectl auth can-i flags...]: must be allowed.
can() {
  local verb=$1 resource=$2
  shift 2
  local answer
  answer=$(kubectl auth can-i "$verb" "$resource" --as="$sa" "$@" 2>/dev/null || true)
  [[ $answer == yes ]] && ok || bad "expected allowed: $verb $resource $* (got '$answer')"
}
cannot() {
  local verb=$1 resource=$2
  shift 2
  local answer
  answer=$(kubectl auth can-i "$verb" "$resource" --as="$sa" "$@" 2>/dev/null || true)
  [[ $answer == no ]] && ok || bad "expected refused: $verb $resource $* (got '$answer')"
}

check_common() {
  for v in get list watch; do can "$v" pods --all-namespaces; done
  can create pods --subresource=eviction -n default
  can create pods --subresource=eviction -n ml-team
  for v in get list watch patch update delete; do can "$v" nodes; done
  for v in list watch; do can "$v" poddisruptionbudgets.policy --all-namespaces; done
  for v in list watch; do can "$v" daemonsets.apps --all-namespaces; done
  for v in create patch; do
    can "$v" events -n default
    can "$v" events -n ml-team
    can "$v" events.events.k8s.io -n default
  done
  for v in get create update patch; do can "$v" configmaps -n kube-system; done
  for v in get create update; do can "$v" leases.coordination.k8s.io -n kube-system; done
  for v in list watch; do can "$v" podgroups.scheduling.x-k8s.io --all-namespaces; done
  for v in list watch; do
    can "$v" provisioningrequests.autoscaling.x-k8s.io --all-namespaces
    can "$v" podtemplates --all-namespaces
  done
  for v in get update; do
    can "$v" provisioningrequests.autoscaling.x-k8s.io --subresource=status -n ml-team
  done
  for v in list watch; do
    can "$v" capacitybuffers.autoscaling.x-k8s.io --all-namespaces
    can "$v" deployments.apps --all-namespaces
  done
  for v in get update; do
    can "$v" capacitybuffers.autoscaling.x-k8s.io --subresource=status -n ml-team
  done

  # Must be refused.
  cannot get secrets --all-namespaces
  cannot list secrets -n kube-system
  cannot get secrets -n kube-system
  cannot delete pods -n default
  cannot create pods -n default
  cannot update pods -n default
  cannot patch deployments.apps -n kube-system
  cannot get deployments.apps -n default
  cannot delete configmaps -n kube-system
  cannot get configmaps -n default
  cannot update configmaps -n default
  cannot delete leases.coordination.k8s.io -n kube-system
  cannot get leases.coordination.k8s.io -n default
  cannot list configmaps -n kube-system
  cannot delete poddisruptionbudgets.policy -n default
  cannot update daemonsets.apps -n kube-system
  cannot create clusterroles.rbac.authorization.k8s.io
  cannot create pods --subresource=exec -n default
  cannot create serviceaccounts --subresource=token -n kube-system
  cannot delete events -n default
  cannot update provisioningrequests.autoscaling.x-k8s.io -n ml-team
  cannot create podtemplates -n ml-team
  cannot update capacitybuffers.autoscaling.x-k8s.io -n ml-team
  cannot update deployments.apps --subresource=scale -n ml-team
}

# kubectl auth can-i resolves a resource through discovery; without the scheduler-plugins
# PodGroup CRD it would ask about resource "podgroups.scheduling.x-k8s.io" in the core group.
# Minimal CRDs (PodGroup, ProvisioningRequest, CapacityBuffer) make the names resolve as the controller's
# requests will.
# minimal_crd GROUP VERSION KIND PLURAL: a namespaced CRD of any content, with a status subresource.
minimal_crd() {
  cat <<CRD
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: $4.$1
spec:
  group: $1
  scope: Namespaced
  names: {plural: $4, singular: ${3,,}, kind: $3}
  versions:
    - name: $2
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
CRD
}
{
  minimal_crd scheduling.x-k8s.io v1alpha1 PodGroup podgroups
  minimal_crd autoscaling.x-k8s.io v1 ProvisioningRequest provisioningrequests
  minimal_crd autoscaling.x-k8s.io v1beta1 CapacityBuffer capacitybuffers
} >"$work/podgroup-crd.yaml"
if out=$(kubectl apply -f "$work/podgroup-crd.yaml" 2>&1) &&
   kubectl wait --for=condition=Established --timeout=60s \
     crd/podgroups.scheduling.x-k8s.io crd/provisioningrequests.autoscaling.x-k8s.io \
     crd/capacitybuffers.autoscaling.x-k8s.io \
     >/dev/null 2>&1; then
  ok
else
  bad "PodGroup CRD: $out"
fi

# 2. The default variant (provider aks): no node creation.
rbac_of "$src/deploy/manifests/tidepool.yaml" >"$work/rbac.yaml"
kinds=$(grep -c '^kind: ' "$work/rbac.yaml" || true)
((kinds == 5)) && ok || bad "expected 5 RBAC objects in tidepool.yaml, found $kinds"
if out=$(kubectl apply -f "$work/rbac.yaml" 2>&1); then ok; else bad "apply RBAC: $out"; fi
check_common
cannot create nodes

# 3. The kwok variant: the same, plus creating nodes.
rbac_of "$src/deploy/manifests/tidepool-kwok.yaml" >"$work/rbac-kwok.yaml"
if out=$(kubectl apply -f "$work/rbac-kwok.yaml" 2>&1); then ok; else bad "apply kwok RBAC: $out"; fi
check_common
can create nodes

echo "$passed passed, $failed failed"
((failed == 0))
