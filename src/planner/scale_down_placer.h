// The drain simulation's view of nodes (NodeFacts) and of pods that move (PodFacts), and where it
// puts the pods (Placer): scale-down's hot path, kept in a header so the pass inlines it.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "base/time.h"
#include "model/node.h"
#include "model/pod.h"
#include "planner/constraint_lists.h"
#include "sched/fit.h"
#include "sched/snapshot.h"

namespace tidepool::planner::scale_down_detail {

using sched::ClusterSnapshot;
using sched::kNoNode;
using sched::NodeIndex;
using sched::NodeInfo;

// What FitChecker precomputes inter-pod state for: host ports, required pod (anti-)affinity, a
// DoNotSchedule spread constraint. Pods without any of these (and a cluster without placed
// anti-affinity pods) take the fast path: node-local filters and resources only.
inline bool HasInterPodRules(const model::Pod& pod) {
  if (pod.has_required_affinity || pod.has_required_anti_affinity) return true;
  for (const auto& c : pod.topology_spread_constraints())
    if (c.when_unsatisfiable == model::WhenUnsatisfiable::kDoNotSchedule) return true;
  for (const auto* list : {&pod.init_containers(), &pod.containers})
    for (const auto& c : *list)
      for (const auto& p : c.ports)
        if (p.host_port > 0) return true;
  return false;
}

// Pods of one equivalence (same controller, same requests) usually fit where the last one did.
inline uint64_t EquivalenceKey(const model::Pod& pod) {
  const model::OwnerReference* c = pod.meta.Controller();
  uint64_t h = std::hash<std::string_view>{}(c ? std::string_view(c->uid) : std::string_view());
  auto mix = [&h](uint64_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  pod.requests.ForEach([&](model::ResourceId id, int64_t amount) {
    mix(id);
    mix(static_cast<uint64_t>(amount));
  });
  return h;
}

// What a pass reads of a node object itself, not of its pods. A node object never changes while
// a model slot holds it, so the memo keeps this beside the pods' facts, and a pass over a large
// cluster reads compact records instead of 50,000 node objects (their names, taints, annotations
// and allocatable).
struct NodeFacts {
  std::string name;
  bool being_deleted = false;    // ToBeDeletedByClusterAutoscaler taint
  bool destination = false;      // ready, schedulable, not being deleted
  std::string_view disabled_by;  // the scale-down-disabled annotation set to "true", or ""
  std::optional<Time> created;
  int64_t cpu = 0, memory = 0, pods = 0, gpus = 0;  // allocatable

  static NodeFacts Of(const model::Node& node);
};

// What the drain simulation needs of a pod that moves, so a pass reads compact records instead of
// whole Pods. The requests are read when the pod is swept; the rest only when the pod is placed
// (Resolve), since most pods of a large cluster never are.
struct PodFacts {
  const model::Pod* pod = nullptr;
  int64_t gpus = 0, cpu = 0, memory = 0;  // requests
  bool resolved = false;                  // the fields below are set
  bool inter_pod = false;                 // HasInterPodRules
  bool node_constraints = false;          // a nodeSelector or required node affinity
  bool other_resources = false;  // requests beyond cpu, memory and pods (storage, extended)
  // Read when the pod's eviction is weighed (ResolveEviction): candidates' pods only.
  bool eviction_resolved = false;
  bool eviction_rules = false;  // MayBlockEviction: EvictionBlocker may have something to say
  bool weighable = false;       // ConsolidationWeighs
  uint64_t equivalence = 0;

  explicit PodFacts(const model::Pod* p)
      : pod(p),
        gpus(p->requests.gpus()),
        cpu(p->requests.cpu_milli()),
        memory(p->requests.memory()) {}

  void Resolve() {
    if (resolved) return;
    resolved = true;
    equivalence = EquivalenceKey(*pod);
    inter_pod = HasInterPodRules(*pod);
    node_constraints = !pod->node_selector.empty() || pod->affinity().node_required.has_value();
    pod->requests.ForEach([this](model::ResourceId id, int64_t) {
      if (id != model::kCpu && id != model::kMemory && id != model::kPods) other_resources = true;
    });
  }

  void ResolveEviction();

  // Placement order: biggest first (GPUs, then cpu, then memory), so the hard pods pick first.
  friend bool BiggerThan(const PodFacts& a, const PodFacts& b) {
    return std::tie(a.gpus, a.cpu, a.memory) > std::tie(b.gpus, b.cpu, b.memory);
  }
};

// The resource filter's verdict for pod slots, cpu and memory without building a FitResult: true
// when the pod certainly does not fit.
// `node`: the facts of the node `info` holds.
inline bool QuickReject(const PodFacts& f, const NodeFacts& node, const NodeInfo& info) {
  const model::Resources& have = info.requested;
  if (have.pods() + 1 > node.pods) return true;
  if (f.cpu > 0 && f.cpu > node.cpu - have.cpu_milli()) return true;
  return f.memory > 0 && f.memory > node.memory - have.memory();
}

// Where pods go when their node is removed: first the node the last pod of the same equivalence
// went to, then a rotating cursor over the destinations (nodes that stay first), so a search is
// O(1) in the common case rather than O(nodes).
class Placer {
 public:
  // `facts`: each slot's node facts (destinations' are never null).
  Placer(const ClusterSnapshot& snapshot, const std::vector<const NodeFacts*>& facts,
         const std::vector<NodeIndex>& destinations, const std::vector<uint8_t>& usable)
      : snapshot_(snapshot), facts_(facts), destinations_(destinations), usable_(usable) {}

  void Reset() {
    hints_.clear();
    cursor_ = 0;
  }

  // A usable node the pod fits on now, or kNoNode.
  NodeIndex Find(PodFacts& f) {
    f.Resolve();
    if (destinations_.empty()) return kNoNode;
    std::optional<sched::FitChecker> checker;
    if (NeedsFullCheck(f)) checker.emplace(Unbound(*f.pod), snapshot_);
    auto fits = [&](NodeIndex n) {
      if (!usable_[n]) return false;
      const NodeInfo& info = snapshot_.Get(n);
      if (QuickReject(f, *facts_[n], info)) return false;
      if (checker) return checker->Fits(n);
      // What QuickReject did not cover, reading the Pod only when it has something to say.
      if (!info.node->taints.empty() || f.node_constraints || f.other_resources) {
        return FastCheck(*f.pod, info).fits();
      }
      return true;
    };
    auto hint = hints_.find(f.equivalence);
    if (hint != hints_.end() && fits(hint->second)) return hint->second;
    const size_t at =
        lists_.Walk([&] { return ConstraintSetOf(*f.pod); }, destinations_.size(), cursor_,
                    [&](size_t k) {
                      return sched::PassesNodeConstraints(*f.pod, snapshot_.Get(destinations_[k]));
                    },
                    [&](size_t k) { return fits(destinations_[k]); });
    if (at == ConstraintLists::kNotFound) return kNoNode;
    cursor_ = at;
    hints_[f.equivalence] = destinations_[at];
    return destinations_[at];
  }

  // The destinations were listed again: positions name other nodes.
  void DestinationsChanged() {
    lists_.Forget();
    cursor_ = 0;
  }

  // Why the pod fits on no usable node, kube-scheduler style: "0/3 nodes are available: 2
  // Insufficient cpu, 1 node(s) had untolerated taint {a: b}".
  std::string Diagnose(PodFacts& f);

 private:
  // Pods with ResourceClaims need the DynamicResources filter, which only FitChecker runs.
  bool NeedsFullCheck(const PodFacts& f) const {
    return f.inter_pod || snapshot_.PodsWithRequiredAntiAffinity() > 0 ||
           !f.pod->resource_claims().empty();
  }

  // The filters FitChecker::Check applies when it has nothing to precompute, minus NodeName
  // (the pod is being rescheduled; its spec.nodeName names the node it leaves) and
  // NodeUnschedulable (destinations are schedulable).
  static sched::FitResult FastCheck(const model::Pod& pod, const NodeInfo& info) {
    const model::Node& node = *info.node;
    if (!node.taints.empty()) {
      if (const model::Taint* t = model::FindUntoleratedTaint(node.taints, pod.tolerations)) {
        sched::FitResult r;
        r.code = sched::FitCode::kTaintToleration;
        r.reason = "node(s) had untolerated taint " + t->ToString();
        return r;
      }
    }
    if (!sched::MatchesNodeAffinity(pod, node)) {
      sched::FitResult r;
      r.code = sched::FitCode::kNodeAffinity;
      r.reason = "node(s) didn't match Pod's node affinity/selector";
      return r;
    }
    return sched::CheckResources(pod, node.allocatable, info.requested);
  }

  // FitChecker applies the NodeName filter to spec.nodeName, which a bound pod has; the
  // simulation reschedules it, so it checks a copy without one (as the Cluster Autoscaler does).
  // Only pods with inter-pod rules (or any pod in a cluster with anti-affinity pods) get here.
  const model::Pod& Unbound(const model::Pod& pod) {
    if (pod.node_name.empty()) return pod;
    auto it = unbound_index_.find(&pod);
    if (it != unbound_index_.end()) return *it->second;
    model::Pod& copy = unbound_copies_.emplace_back(pod);
    copy.node_name.clear();
    unbound_index_.emplace(&pod, &copy);
    return copy;
  }

  const ClusterSnapshot& snapshot_;
  const std::vector<const NodeFacts*>& facts_;
  const std::vector<NodeIndex>& destinations_;
  const std::vector<uint8_t>& usable_;
  std::deque<model::Pod> unbound_copies_;
  std::unordered_map<const model::Pod*, const model::Pod*> unbound_index_;
  std::unordered_map<uint64_t, NodeIndex> hints_;
  size_t cursor_ = 0;
  // Find's walks by node constraints, over positions in destinations_ (fixed for a run).
  ConstraintLists lists_;
  std::unordered_map<const model::Pod*, uint32_t> constraint_set_of_;
  uint32_t ConstraintSetOf(const model::Pod& pod) {
    auto [it, added] = constraint_set_of_.try_emplace(&pod, 0);
    if (added) it->second = lists_.IdOf(pod);
    return it->second;
  }
};

}  // namespace tidepool::planner::scale_down_detail
