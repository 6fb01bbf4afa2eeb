// The planner's view of the cluster: nodes, pods, PDBs and DaemonSets plus the autoscaler's own
// state (upcoming nodes, backoffs), and the rules shared by scale-up and scale-down.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/time.h"
#include "model/daemonset.h"
#include "model/dra.h"
#include "model/node.h"
#include "model/pdb.h"
#include "model/pod.h"
#include "model/pool.h"

namespace tidepool::sched {
class ClusterModel;  // sched/cluster_model.h
}  // namespace tidepool::sched

namespace tidepool::planner {

// Well-known annotations, labels and taints other autoscalers use; tidepool honours them.
inline constexpr std::string_view kSafeToEvictAnnotation =
    "cluster-autoscaler.kubernetes.io/safe-to-evict";
inline constexpr std::string_view kCaScaleDownDisabledAnnotation =
    "cluster-autoscaler.kubernetes.io/scale-down-disabled";
inline constexpr std::string_view kScaleDownDisabledAnnotation = "tidepool.dev/scale-down-disabled";
inline constexpr std::string_view kDoNotDisruptAnnotation = "karpenter.sh/do-not-disrupt";
using model::kDeletionCandidateTaint;
using model::kToBeDeletedTaint;
inline constexpr std::string_view kGangSizeAnnotation = "tidepool.dev/gang-size";
inline constexpr std::string_view kAgentPoolLabel = "agentpool";
inline constexpr std::string_view kAksAgentPoolLabel = "kubernetes.azure.com/agentpool";

struct RuntimeHints;  // planner/disruption.h
class ScaleDownMemo;  // planner/scale_down_memo.h
class SlotPools;      // planner/slot_pools.h

// Everything one planning pass reads. Pointers are borrowed: they must outlive the pass.
struct PlannerInput {
  const model::AutoscalerConfig* config = nullptr;
  std::vector<const model::Node*> nodes;
  std::vector<const model::Pod*> pods;
  // Optional: exactly the pods of `pods` that wait for a node (Pod::WaitsForNode), each once (the
  // loop takes them from the driver's model, sched::ClusterModel::Unbound), so that a pass finds
  // the pending pods without reading a million bound ones. Unset: passes read `pods`.
  // AddUnmodelledPod keeps it; whoever changes `pods` otherwise sets it again or resets it.
  std::optional<std::vector<const model::Pod*>> unbound;
  std::vector<const model::PodDisruptionBudget*> pdbs;
  std::vector<const model::DaemonSet*> daemon_sets;
  // DeviceClasses, ResourceClaims, their templates and ResourceSlices; null when none were read.
  // Pods with resourceClaims are placed where their claims can be allocated (sched/dra).
  const model::DraObjects* dra = nullptr;
  // Nodes requested from the provider and not registered yet, per pool.
  std::map<std::string, int, std::less<>> upcoming;
  // Pools that may not grow before the given time (failed or timed-out provisioning).
  std::map<std::string, Time, std::less<>> backoff_until;
  Time now{};
  // The provider's own node → pool mapping (e.g. the VMSS in the providerID); optional, and
  // consulted only when the labels name no pool. Returns "" for "not mine".
  std::function<std::string(const model::Node&)> provider_pool_of;
  // Warm capacity (pools[].warm), scale-up only: placeholder pods that exist only in the plan.
  // Each is pinned to one pool (node selector tidepool.dev/pool, tolerating the template's
  // taints) and annotated kWarmPoolAnnotation with the pool's name; kWarmWholeNodeAnnotation
  // ("true") marks one that needs a whole idle node of the pool. They are planned after every
  // real pod, on the room left, else on new nodes of their pool (ScaleUp::warm_add).
  std::vector<const model::Pod*> placeholders;
  // Scale-down: runtimes the loop observed per owner, for consolidation's horizon (optional).
  const RuntimeHints* runtime_hints = nullptr;
  // Optional: the driver's long-lived model of the same cluster (Observation::model), holding
  // exactly the nodes and pods above that are bound to a node, as observed (a node may differ in
  // this input: a copy with the deletion taint, or left out). Pods only the caller knows are added
  // with AddUnmodelledPod. Scale-down forks it instead of building a snapshot, and leaves it as it
  // found it.
  sched::ClusterModel* model = nullptr;
  // Optional, with `model`: what the last scale-down passes on that model read about each node,
  // reused where the node and its pods did not change (ScaleDownMemo). The caller keeps it across
  // passes; a pass that does not plan on the model neither reads nor writes it.
  ScaleDownMemo* scale_down_memo = nullptr;
  // Optional, with `model`: the pool of each node slot as the last passes on that model found it
  // (SlotPools), for both planners. The caller keeps it across passes.
  SlotPools* slot_pools = nullptr;
};

inline constexpr std::string_view kWarmPoolAnnotation = "tidepool.dev/warm-pool";
inline constexpr std::string_view kWarmWholeNodeAnnotation = "tidepool.dev/warm-whole-node";

// Adds a pod that exists only in the caller (a buffer's copy, a provisioning hold, a warm
// placeholder) to the input. One bound to a node takes the model out of the input: the model holds
// only the pods it was fed, so a pass builds its own snapshot.
inline void AddUnmodelledPod(PlannerInput& input, const model::Pod* pod) {
  input.pods.push_back(pod);
  if (!pod->node_name.empty()) {
    input.model = nullptr;
  } else if (input.unbound && pod->WaitsForNode()) {
    input.unbound->push_back(pod);
  }
}

// The pods of `input` that wait for a node (model::Pod::WaitsForNode): `input.unbound` when set,
// else read from `input.pods` in their order.
std::vector<const model::Pod*> UnboundPods(const PlannerInput& input);

// Pending pods in the order kube-scheduler's queue takes them: higher priority first, then older,
// then by namespace/name; whatever order they came in.
void SortForScheduling(std::vector<const model::Pod*>& pods);

// The configured pools by name, for a pass that asks the pool of every node
// (AutoscalerConfig::FindPool compares names one by one: 200 pools and 50,000 nodes made that
// a tenth of a pass). Built per pass: it points into the config, which must outlive it and not
// change meanwhile. Of duplicate names the first wins, as with FindPool.
class PoolNames {
 public:
  explicit PoolNames(const model::AutoscalerConfig& config);
  const model::Pool* Find(std::string_view name) const {
    auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : it->second;
  }

 private:
  std::unordered_map<std::string_view, const model::Pool*> by_name_;
};

// Which pool a node belongs to (docs/annotations.md): the tidepool.dev/pool label; else the
// kubernetes.azure.com/agentpool or agentpool label equal to a pool name; else the provider's
// mapping. Returns nullptr for an unmanaged node. `pools` must be of input.config.
const model::Pool* PoolOf(const model::Node& node, const PlannerInput& input,
                          const PoolNames& pools);
// The same for one node, without an index.
const model::Pool* PoolOf(const model::Node& node, const PlannerInput& input);
// PoolOf, and whether the answer holds for as long as the node object and the config do: the
// node's labels gave it, or the input has no provider mapping (which may answer otherwise later).
const model::Pool* PoolOf(const model::Node& node, const PlannerInput& input,
                          const PoolNames& pools, bool* lasting);

// A pod the scale-up considers: not bound to a node, not being deleted, not terminal, not a
// DaemonSet or mirror pod, at or above the expendable priority cutoff, and held by no scheduling
// gate.
bool IsPendingForScaleUp(const model::Pod& pod, int32_t expendable_priority_cutoff);
// A pod the scale-up would consider but for its scheduling gates (spec.schedulingGates, e.g.
// Kueue's admission gate): kube-scheduler does not try it, so no node is added for it yet.
bool IsHeldBySchedulingGates(const model::Pod& pod, int32_t expendable_priority_cutoff);

// The gang a pod belongs to, as "<namespace>/<kind>:<name>", or "" when it is in none: label
// scheduling.x-k8s.io/pod-group, annotation scheduling.k8s.io/group-name (Volcano), label
// training.kubeflow.org/job-name (Kubeflow), label jobset.sigs.k8s.io/jobset-name (JobSet).
std::string GangOf(const model::Pod& pod);
// Whether GangOf(pod) is not empty, without wording the gang.
bool InGang(const model::Pod& pod);
// The gang GangOf words, unworded: the kind of the label or annotation that names it ("pod-group",
// "volcano", "kubeflow", "jobset") and the name in it; `name` is null when the pod is in none.
struct GangName {
  std::string_view kind;
  const std::string* name = nullptr;
};
GangName FindGang(const model::Pod& pod);
// GangOf for the gang FindGang(pod) found.
std::string GangOf(const model::Pod& pod, const GangName& gang);

// The gang's size its members declare (kGangSizeAnnotation, a positive integer), or nothing
// when the annotation is missing or not one.
std::optional<int> DeclaredGangSize(const model::Pod& pod);

// True for pods of training workloads whose progress an eviction throws away: owned by a Job,
// JobSet, PyTorchJob, TFJob, MPIJob (or another kubeflow.org kind), or a gang member.
bool IsTrainingPod(const model::Pod& pod);

// The DaemonSet pods a new node from `pool` would run: DaemonSets whose pod template's node
// selector/affinity match the template node and whose tolerations tolerate its taints.
std::vector<const model::Pod*> DaemonSetPodsFor(const model::Node& template_node,
                                                const std::vector<const model::DaemonSet*>& sets);

// A human-readable "ns/name" list, for reasons.
std::string JoinKeys(const std::vector<const model::Pod*>& pods, size_t max_names = 5);

}  // namespace tidepool::planner
