# Checks of `testenv/smoke-test --with kueue` (sourced by smoke-test: uses its
# check/pass/fail/k, $KUBECTL and $work). Kueue's webhooks accept a queue with
# a ProvisioningRequest admission check, suspend a Job sent to it, and Kueue
# asks for the Job's capacity with a ProvisioningRequest. Nothing serves that
# request here (that is tidepool's job), so the Job stays suspended.

cat >"$work/kueue.yaml" <<'EOF'
apiVersion: v1
kind: Namespace
metadata:
  name: kueue-smoke
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: smoke-flavor
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ProvisioningRequestConfig
metadata:
  name: smoke-atomic
spec:
  provisioningClassName: best-effort-atomic-scale-up.autoscaling.x-k8s.io
  managedResources: [nvidia.com/gpu]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata:
  name: smoke-provisioning
spec:
  controllerName: kueue.x-k8s.io/provisioning-request
  parameters:
    apiGroup: kueue.x-k8s.io
    kind: ProvisioningRequestConfig
    name: smoke-atomic
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: smoke-cq
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors:
    - name: smoke-flavor
      resources:
      - {name: cpu, nominalQuota: "64"}
      - {name: memory, nominalQuota: 256Gi}
      - {name: nvidia.com/gpu, nominalQuota: "8"}
  admissionChecksStrategy:
    admissionChecks:
    - name: smoke-provisioning
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: smoke-lq
  namespace: kueue-smoke
spec:
  clusterQueue: smoke-cq
EOF
check "Kueue: ResourceFlavor, ProvisioningRequestConfig, AdmissionCheck, ClusterQueue, LocalQueue created through its webhooks" \
  k apply -f "$work/kueue.yaml"

check "Kueue: the AdmissionCheck becomes Active (ProvisioningRequest controller running)" \
  k wait --for=condition=Active admissioncheck/smoke-provisioning --timeout=60s
check "Kueue: the ClusterQueue becomes Active" k wait --for=condition=Active clusterqueue/smoke-cq --timeout=60s
check "Kueue: the LocalQueue becomes Active" k -n kueue-smoke wait --for=condition=Active localqueue/smoke-lq --timeout=60s

# Created unsuspended: Kueue's mutating webhook suspends a Job of a queue.
cat >"$work/kueue-job.yaml" <<'EOF'
apiVersion: batch/v1
kind: Job
metadata:
  name: smoke-train
  namespace: kueue-smoke
  labels:
    kueue.x-k8s.io/queue-name: smoke-lq
spec:
  parallelism: 4
  completions: 4
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: train
        image: registry.invalid/train:1
        resources:
          requests: {cpu: "2", memory: 8Gi, nvidia.com/gpu: "1"}
          limits: {nvidia.com/gpu: "1"}
EOF
job_suspended_on_create() {
  local s
  s="$("$KUBECTL" create -f "$work/kueue-job.yaml" -o jsonpath='{.spec.suspend}')" || return 1
  echo "spec.suspend=$s"
  [[ "$s" == true ]]
}
check "Kueue: a Job of the LocalQueue is suspended by Kueue's webhook at creation" job_suspended_on_create
# Refused by Kueue's validating webhook alone (the API schema has no such
# rule): running with at least 9 of the Job's 4 pods. A server-side dry run.
check "Kueue: its validating webhook refuses job-min-parallelism 9 on a Job of 4 pods" \
  refused "denied the request.*job-min-parallelism.*should be between 0 and 3" \
  k -n kueue-smoke annotate --dry-run=server job smoke-train kueue.x-k8s.io/job-min-parallelism=9

# provreq_field JSONPATH: that field of the one ProvisioningRequest in kueue-smoke.
provreq_field() {
  "$KUBECTL" -n kueue-smoke get provisioningrequests.autoscaling.x-k8s.io -o jsonpath="{.items[*]$1}"
}
check "Kueue: a ProvisioningRequest appears for the Job's Workload" \
  poll 90 bash -c "[[ -n \"\$($KUBECTL -n kueue-smoke get provisioningrequests.autoscaling.x-k8s.io -o name)\" ]]"
provreq_ok() {
  local n class count tmpl gpu
  n="$("$KUBECTL" -n kueue-smoke get provisioningrequests.autoscaling.x-k8s.io -o name | wc -l)"
  class="$(provreq_field .spec.provisioningClassName)"
  count="$(provreq_field '.spec.podSets[*].count')"
  tmpl="$(provreq_field '.spec.podSets[*].podTemplateRef.name')"
  echo "requests=$n class=$class podSets.count=$count template=$tmpl"
  [[ $n == 1 && $class == best-effort-atomic-scale-up.autoscaling.x-k8s.io && $count == 4 && -n $tmpl ]] || return 1
  gpu="$("$KUBECTL" -n kueue-smoke get podtemplate "$tmpl" \
    -o jsonpath='{.template.spec.containers[0].resources.requests.nvidia\.com/gpu}')"
  echo "PodTemplate $tmpl requests nvidia.com/gpu=$gpu"
  [[ $gpu == 1 ]]
}
check "Kueue: the ProvisioningRequest is best-effort-atomic, one pod set of 4 pods, its PodTemplate asks 1 GPU" provreq_ok
still_queued() {
  local s admitted
  s="$("$KUBECTL" -n kueue-smoke get job smoke-train -o jsonpath='{.spec.suspend}')"
  admitted="$("$KUBECTL" -n kueue-smoke get workloads -o jsonpath='{.items[*].status.conditions[?(@.type=="Admitted")].status}')"
  echo "suspend=$s admitted=$admitted"
  [[ $s == true && $admitted != True ]]
}
check "Kueue: without a Provisioned request the Job stays suspended and its Workload unadmitted" still_queued
