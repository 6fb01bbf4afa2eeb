// Pod: the scheduling-relevant part of a v1 Pod, and the effective requests the scheduler uses.
// Decoded by kube/codec; read by sched/ and planner/.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/meta.h"
#include "model/resources.h"
#include "model/selector.h"
#include "model/sparse.h"

namespace tidepool::model {

struct ContainerPort {
  int32_t container_port = 0;
  int32_t host_port = 0;  // 0: no host port
  std::string protocol = "TCP";
  std::string host_ip;  // empty or "0.0.0.0": all addresses
  friend bool operator==(const ContainerPort&, const ContainerPort&) = default;
};

struct Container {
  std::string name;
  Resources requests;  // from resources.requests (limits are used when requests are absent)
  std::vector<ContainerPort> ports;
  // Only for init containers: restartPolicy "Always" makes it a sidecar (KEP-753).
  bool restartable = false;
  friend bool operator==(const Container&, const Container&) = default;
};

// The volume kinds that matter for scale-down (local storage) and nothing else.
struct Volume {
  enum class Kind { kEmptyDir, kHostPath, kPersistentVolumeClaim, kOther };
  std::string name;
  Kind kind = Kind::kOther;
  bool empty_dir_in_memory = false;  // emptyDir.medium == "Memory"
  std::string claim_name;            // for PVCs
  friend bool operator==(const Volume&, const Volume&) = default;
};

// v1.PodAffinityTerm.
struct PodAffinityTerm {
  LabelSelector label_selector;
  bool has_label_selector = false;      // a term without a selector matches no pods
  std::vector<std::string> namespaces;  // empty and no namespace selector: the pod's namespace
  std::optional<LabelSelector> namespace_selector;
  std::string topology_key;
  friend bool operator==(const PodAffinityTerm&, const PodAffinityTerm&) = default;
};

struct Affinity {
  std::optional<NodeSelector> node_required;  // requiredDuringSchedulingIgnoredDuringExecution
  std::vector<PodAffinityTerm> pod_affinity_required;
  std::vector<PodAffinityTerm> pod_anti_affinity_required;
  friend bool operator==(const Affinity&, const Affinity&) = default;
};

enum class WhenUnsatisfiable { kDoNotSchedule, kScheduleAnyway };
enum class InclusionPolicy { kHonor, kIgnore };

struct TopologySpreadConstraint {
  int32_t max_skew = 1;
  std::string topology_key;
  WhenUnsatisfiable when_unsatisfiable = WhenUnsatisfiable::kDoNotSchedule;
  LabelSelector label_selector;
  bool has_label_selector = false;
  std::optional<int32_t> min_domains;
  InclusionPolicy node_affinity_policy = InclusionPolicy::kHonor;
  InclusionPolicy node_taints_policy = InclusionPolicy::kIgnore;
  std::vector<std::string> match_label_keys;
  friend bool operator==(const TopologySpreadConstraint&,
                         const TopologySpreadConstraint&) = default;
};

// spec.resourceClaims[]: a claim the pod uses, by the claim's name or by a template from which
// the control plane creates one claim per pod.
struct PodResourceClaim {
  std::string name;
  std::string claim_name;     // resourceClaimName
  std::string template_name;  // resourceClaimTemplateName
  friend bool operator==(const PodResourceClaim&, const PodResourceClaim&) = default;
};

// status.resourceClaimStatuses[]: the claim created for a template entry (empty: none needed).
struct PodResourceClaimStatus {
  std::string name;
  std::string claim_name;
  friend bool operator==(const PodResourceClaimStatus&, const PodResourceClaimStatus&) = default;
};

enum class PodPhase : uint8_t { kPending, kRunning, kSucceeded, kFailed, kUnknown };

// The parts of a pod that most pods leave empty: a Pod keeps them behind one pointer, allocated
// when one of them is first written, so that a plain pod does not carry them (a cluster model
// holds a million pods; they would be a third of each).
struct PodExtras {
  // spec
  Affinity affinity;
  std::vector<Container> init_containers;
  Resources overhead;
  std::string priority_class_name;
  std::vector<TopologySpreadConstraint> topology_spread_constraints;
  std::vector<PodResourceClaim> resource_claims;
  // spec.schedulingGates' names: while any is left, kube-scheduler does not try the pod.
  std::vector<std::string> scheduling_gates;
  // status
  std::string nominated_node_name;
  std::vector<PodResourceClaimStatus> resource_claim_statuses;
  friend bool operator==(const PodExtras&, const PodExtras&) = default;
};

struct Pod {
  ObjectMeta meta;

  // spec
  std::string node_name;
  std::string scheduler_name;
  Labels node_selector;
  std::vector<Toleration> tolerations;
  std::vector<Container> containers;
  std::vector<Volume> volumes;
  std::optional<int32_t> priority;
  // status
  PodPhase phase = PodPhase::kPending;
  bool host_network = false;  // spec
  // PodScheduled=False with reason Unschedulable: the scheduler tried and gave up.
  bool unschedulable_condition = false;
  // Derived at decode time by Finalize(); kept in sync by whoever mutates the spec.
  bool has_required_anti_affinity = false;
  bool has_required_affinity = false;
  bool scheduling_gated = false;  // !scheduling_gates().empty()
  // IsDaemonSetPod() || IsMirrorPod(): a pod that belongs to its node. Read for every pod a
  // snapshot places (sched::StaysOnDrain); call Finalize() again after changing the owner
  // references or annotations of a pod copied from another.
  bool belongs_to_node = false;
  std::optional<Time> start_time;
  Resources requests;  // EffectiveRequests(*this), derived by Finalize()

  // The usually empty parts (PodExtras): read as empty until written through mutable_*().
  const Affinity& affinity() const { return extras_.get().affinity; }
  Affinity& mutable_affinity() { return extras_.mutable_get().affinity; }
  const std::vector<Container>& init_containers() const { return extras_.get().init_containers; }
  std::vector<Container>& mutable_init_containers() {
    return extras_.mutable_get().init_containers;
  }
  const Resources& overhead() const { return extras_.get().overhead; }
  Resources& mutable_overhead() { return extras_.mutable_get().overhead; }
  const std::string& priority_class_name() const { return extras_.get().priority_class_name; }
  std::string& mutable_priority_class_name() { return extras_.mutable_get().priority_class_name; }
  const std::vector<TopologySpreadConstraint>& topology_spread_constraints() const {
    return extras_.get().topology_spread_constraints;
  }
  std::vector<TopologySpreadConstraint>& mutable_topology_spread_constraints() {
    return extras_.mutable_get().topology_spread_constraints;
  }
  const std::vector<PodResourceClaim>& resource_claims() const {
    return extras_.get().resource_claims;
  }
  std::vector<PodResourceClaim>& mutable_resource_claims() {
    return extras_.mutable_get().resource_claims;
  }
  const std::vector<std::string>& scheduling_gates() const {
    return extras_.get().scheduling_gates;
  }
  std::vector<std::string>& mutable_scheduling_gates() {
    return extras_.mutable_get().scheduling_gates;
  }
  // Held by spec.schedulingGates: kube-scheduler does not try it, so no node would take it yet.
  // Read from the flag Finalize() sets, so the check of every pending pod touches no extras.
  bool SchedulingGated() const { return scheduling_gated; }
  // Forgets the gates (a pod made from a template stands for the pods once let through);
  // allocates nothing.
  void ClearSchedulingGates() {
    if (extras_.allocated()) extras_.mutable_get().scheduling_gates.clear();
    scheduling_gated = false;
  }
  const std::string& nominated_node_name() const { return extras_.get().nominated_node_name; }
  // Forgets status.nominatedNodeName (a copy of a pod is nominated nowhere); allocates nothing.
  void ClearNomination() {
    if (extras_.allocated()) extras_.mutable_get().nominated_node_name.clear();
  }
  std::string& mutable_nominated_node_name() { return extras_.mutable_get().nominated_node_name; }
  // Whether one of the usually empty parts was ever written (the pod carries its PodExtras).
  bool HasExtras() const { return extras_.allocated(); }
  const std::vector<PodResourceClaimStatus>& resource_claim_statuses() const {
    return extras_.get().resource_claim_statuses;
  }
  std::vector<PodResourceClaimStatus>& mutable_resource_claim_statuses() {
    return extras_.mutable_get().resource_claim_statuses;
  }

  // Recomputes the derived fields from the spec. Call after building or changing a Pod.
  void Finalize();

  std::string Key() const { return meta.Key(); }
  bool IsTerminal() const { return phase == PodPhase::kSucceeded || phase == PodPhase::kFailed; }
  // No node yet and not terminal: a pod the scheduler may still place.
  bool WaitsForNode() const { return node_name.empty() && !IsTerminal(); }
  int32_t PriorityOrZero() const { return priority.value_or(0); }
  // Owned by a DaemonSet (controller owner reference of kind DaemonSet).
  bool IsDaemonSetPod() const;
  // A static pod mirrored by the kubelet (annotation kubernetes.io/config.mirror).
  bool IsMirrorPod() const;
  // Every host port this pod asks for (host_port != 0) across containers and init containers.
  std::vector<ContainerPort> HostPorts() const;

  // Field by field, the usually empty parts read as empty when not allocated.
  friend bool operator==(const Pod&, const Pod&) = default;

 private:
  Sparse<PodExtras> extras_;
};

// The requests the scheduler accounts for a pod: the larger of (sum of app containers plus
// restartable init containers) and (each init container plus the restartable init containers
// started before it), plus spec.overhead; and always one "pods" slot.
Resources EffectiveRequests(const Pod& pod);

}  // namespace tidepool::model
