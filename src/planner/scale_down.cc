#include "planner/scale_down.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/check.h"
#include "planner/scale_down_rules.h"
#include "sched/fit.h"
#include "sched/snapshot.h"

namespace tidepool::planner {
namespace {

using sched::ClusterSnapshot;
using sched::kNoNode;
using sched::NodeIndex;
using sched::NodeInfo;

constexpr std::string_view kDisabledInConfig = "scale-down disabled in config";
constexpr std::string_view kDefaultNotYet = "not unneeded for long enough yet";

// Amounts the free-capacity bound tracks: cpu (milli), memory, pod slots, GPUs.
using Amounts = std::array<int64_t, 4>;
constexpr std::array<std::string_view, 4> kAmountNames = {"cpu", "memory", "pods", "gpu"};

Amounts FreeOn(const NodeInfo& info) {
  const model::Resources& a = info.node->allocatable;
  const model::Resources& r = info.requested;
  return {std::max<int64_t>(0, a.cpu_milli() - r.cpu_milli()),
          std::max<int64_t>(0, a.memory() - r.memory()), std::max<int64_t>(0, a.pods() - r.pods()),
          std::max<int64_t>(0, a.gpus() - r.gpus())};
}

void AddTo(Amounts& a, const Amounts& b, int sign) {
  for (size_t i = 0; i < a.size(); ++i) a[i] += sign * b[i];
}

std::string FormatAmount(const Amounts& a, size_t i) {
  switch (i) {
    case 0:
      return model::FormatAmount(model::kCpu, a[i]);
    case 1:
      return model::FormatAmount(model::kMemory, a[i]);
    default:
      return fmt::format("{}", a[i]);
  }
}

// "namespace/name" with one allocation (ObjectMeta::Key builds it in two steps).
std::string PodKey(const model::Pod& pod) {
  const std::string& ns = pod.meta.namespace_;
  const std::string& name = pod.meta.name;
  if (ns.empty()) return name;
  std::string key;
  key.reserve(ns.size() + 1 + name.size());
  key.append(ns).append(1, '/').append(name);
  return key;
}

bool HasTaint(const model::Node& node, std::string_view key) {
  for (const model::Taint& t : node.taints)
    if (t.key == key) return true;
  return false;
}

bool AnnotatedTrue(const model::Node& node, std::string_view key) {
  const std::string* v = node.meta.Annotation(key);
  return v != nullptr && *v == "true";
}

// What FitChecker precomputes inter-pod state for: host ports, required pod (anti-)affinity, a
// DoNotSchedule spread constraint. Pods without any of these (and a cluster without placed
// anti-affinity pods) take the fast path: node-local filters and resources only.
bool HasInterPodRules(const model::Pod& pod) {
  if (pod.has_required_affinity || pod.has_required_anti_affinity) return true;
  for (const auto& c : pod.topology_spread_constraints)
    if (c.when_unsatisfiable == model::WhenUnsatisfiable::kDoNotSchedule) return true;
  for (const auto* list : {&pod.init_containers, &pod.containers})
    for (const auto& c : *list)
      for (const auto& p : c.ports)
        if (p.host_port > 0) return true;
  return false;
}

// Pods of one equivalence (same controller, same requests) usually fit where the last one did.
uint64_t EquivalenceKey(const model::Pod& pod) {
  const model::OwnerReference* c = pod.meta.Controller();
  uint64_t h = std::hash<std::string_view>{}(c ? std::string_view(c->uid) : std::string_view());
  auto mix = [&h](uint64_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  pod.requests.ForEach([&](model::ResourceId id, int64_t amount) {
    mix(id);
    mix(static_cast<uint64_t>(amount));
  });
  return h;
}

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
    node_constraints = !pod->node_selector.empty() || pod->affinity.node_required.has_value();
    pod->requests.ForEach([this](model::ResourceId id, int64_t) {
      if (id != model::kCpu && id != model::kMemory && id != model::kPods) other_resources = true;
    });
  }

  // Placement order: biggest first (GPUs, then cpu, then memory), so the hard pods pick first.
  friend bool BiggerThan(const PodFacts& a, const PodFacts& b) {
    return std::tie(a.gpus, a.cpu, a.memory) > std::tie(b.gpus, b.cpu, b.memory);
  }
};

// The resource filter's verdict for pod slots, cpu and memory without building a FitResult: true
// when the pod certainly does not fit.
inline bool QuickReject(const PodFacts& f, const NodeInfo& info) {
  const model::Resources& alloc = info.node->allocatable;
  const model::Resources& have = info.requested;
  if (have.pods() + 1 > alloc.pods()) return true;
  if (f.cpu > 0 && f.cpu > alloc.cpu_milli() - have.cpu_milli()) return true;
  return f.memory > 0 && f.memory > alloc.memory() - have.memory();
}

struct NodeEntry {
  const model::Node* node = nullptr;
  const model::Pool* pool = nullptr;  // nullptr: unmanaged
  bool being_deleted = false;         // ToBeDeletedByClusterAutoscaler taint
  bool destination = false;           // ready, schedulable, not being deleted
  // Its non-terminal pods with DrainRole::kMove, in namespace/name order.
  std::vector<const model::Pod*> own;
  // Indices into ScaleDownRun::facts_ of `own`, same order; only for nodes that may be
  // candidates and nodes being deleted.
  std::vector<uint32_t> own_facts;
  NodeUtilization util;
  bool candidate = false;
  std::string keep;     // why a managed non-candidate stays (empty for candidates)
  std::string blocker;  // candidates: the first pod that may not be evicted, or ""
  const model::Pod* blocker_pod = nullptr;
};

struct PdbState {
  const model::PodDisruptionBudget* pdb = nullptr;
  int32_t allowed = 0;  // at the start of a pass
};

// Where pods go when their node is removed: first the node the last pod of the same equivalence
// went to, then a rotating cursor over the destinations (nodes that stay first), so a search is
// O(1) in the common case rather than O(nodes).
class Placer {
 public:
  Placer(const ClusterSnapshot& snapshot, const std::vector<NodeIndex>& destinations,
         const std::vector<uint8_t>& usable)
      : snapshot_(snapshot), destinations_(destinations), usable_(usable) {}

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
      if (QuickReject(f, info)) return false;
      if (checker) return checker->Check(n).fits();
      // What QuickReject did not cover, reading the Pod only when it has something to say.
      if (!info.node->taints.empty() || f.node_constraints || f.other_resources) {
        return FastCheck(*f.pod, info).fits();
      }
      return true;
    };
    auto hint = hints_.find(f.equivalence);
    if (hint != hints_.end() && fits(hint->second)) return hint->second;
    size_t n = destinations_.size();
    for (size_t k = 0; k < n; ++k) {
      size_t i = cursor_ + k;
      if (i >= n) i -= n;
      NodeIndex node = destinations_[i];
      if (fits(node)) {
        cursor_ = i;
        hints_[f.equivalence] = node;
        return node;
      }
    }
    return kNoNode;
  }

  // Why the pod fits on no usable node, kube-scheduler style: "0/3 nodes are available: 2
  // Insufficient cpu, 1 node(s) had untolerated taint {a: b}".
  std::string Diagnose(PodFacts& f) {
    f.Resolve();
    std::optional<sched::FitChecker> checker;
    if (NeedsFullCheck(f)) checker.emplace(Unbound(*f.pod), snapshot_);
    std::map<std::string, int, std::less<>> reasons;
    auto count = [&reasons](std::string_view reason) {
      auto it = reasons.find(reason);
      if (it == reasons.end()) it = reasons.emplace(std::string(reason), 0).first;
      ++it->second;
    };
    int total = 0;
    for (NodeIndex n : destinations_) {
      if (!usable_[n]) continue;
      ++total;
      const NodeInfo& info = snapshot_.Get(n);
      if (!checker && info.node->taints.empty() && !f.node_constraints) {
        // Only resources can fail; name them without building a FitResult per node.
        const model::Resources& alloc = info.node->allocatable;
        const model::Resources& have = info.requested;
        if (have.pods() + 1 > alloc.pods()) {
          count("Too many pods");
          continue;
        }
        if (f.cpu > 0 && f.cpu > alloc.cpu_milli() - have.cpu_milli()) {
          count("Insufficient cpu");
          continue;
        }
        if (f.memory > 0 && f.memory > alloc.memory() - have.memory()) {
          count("Insufficient memory");
          continue;
        }
      }
      sched::FitResult r = checker ? checker->Check(n) : FastCheck(*f.pod, info);
      if (!r.fits()) count(r.reason);
    }
    if (total == 0) return "no other ready, schedulable node to move it to";
    std::string out = fmt::format("0/{} nodes are available", total);
    char sep = ':';
    for (const auto& [reason, nodes] : reasons) {
      out += fmt::format("{} {} {}", sep, nodes, reason);
      sep = ',';
    }
    return out;
  }

 private:
  bool NeedsFullCheck(const PodFacts& f) const {
    return f.inter_pod || snapshot_.PodsWithRequiredAntiAffinity() > 0;
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
  const std::vector<NodeIndex>& destinations_;
  const std::vector<uint8_t>& usable_;
  std::deque<model::Pod> unbound_copies_;
  std::unordered_map<const model::Pod*, const model::Pod*> unbound_index_;
  std::unordered_map<uint64_t, NodeIndex> hints_;
  size_t cursor_ = 0;
};

struct PassOptions {
  bool rate_limit = true;
  const std::function<bool(const model::Node&)>* may_remove = nullptr;
  const std::function<std::string(const model::Node&)>* not_yet_reason = nullptr;
  // Record where the pods of this node go (for Explain); kNoNode: record nothing.
  NodeIndex record = kNoNode;
  // Leave the snapshot as the pass found it (another pass follows).
  bool restore = false;
};

struct PassResult {
  ScaleDownPlan plan;
  std::vector<std::pair<std::string, std::string>> moves;  // pod key -> node, for `record`
};

// One Plan call: the snapshot and everything about the nodes that does not depend on the pass,
// built once. A pass removes candidates one by one, each inside a snapshot layer that is
// committed when all its pods found a place and reverted otherwise.
class ScaleDownRun {
 public:
  // `evict_training_pods`: running training pods are evictable (ScaleDownOptions).
  explicit ScaleDownRun(const PlannerInput& input, bool evict_training_pods = false);

  PassResult RunPass(const PassOptions& options);

  // Entry index of a node name (also of nodes being deleted), or kNoNode.
  NodeIndex Find(std::string_view name) const;
  const NodeEntry& entry(NodeIndex i) const { return entries_[i]; }
  double Threshold(const NodeEntry& e) const {
    return e.util.gpu ? config_.gpu_utilization_threshold : config_.utilization_threshold;
  }

 private:
  void AddPods();
  void ComputePdbBudgets();
  // Covering PDB indices of a pod (PDBs of its namespace that select it).
  void CoveringPdbs(const model::Pod& pod, std::vector<uint32_t>& out) const;
  // The first pod of `e` whose eviction the remaining budgets forbid, as a reason; "" when all
  // may go, with `needed` holding the evictions per PDB.
  std::string PdbBlocker(const NodeEntry& e, const std::vector<int32_t>& remaining,
                         std::vector<std::pair<uint32_t, int32_t>>& needed) const;
  // Why a managed node is not a candidate judging by the node alone (being deleted, annotation,
  // delayAfterAdd), or "".
  std::string NodeKeep(const NodeEntry& e) const;
  void OrderDestinations();
  // Removes candidate `c` inside a snapshot layer and moves its pods; commits and returns ""
  // when all of them found a place, else reverts and returns the reason.
  std::string Simulate(NodeIndex c, std::vector<std::pair<std::string, std::string>>* moves,
                       Amounts& free, std::vector<Amounts>& contrib);
  void SetUsable(NodeIndex n, bool usable) {
    if ((usable_[n] != 0) == usable) return;
    usable_[n] = usable ? 1 : 0;
    if (usable) {
      ++usable_count_;
    } else {
      --usable_count_;
    }
  }

  const PlannerInput& input_;
  const model::ScaleDownConfig& config_;
  const bool evict_training_pods_;
  std::vector<NodeEntry> entries_;  // by name; entry i is snapshot node i
  std::vector<PodFacts> facts_;     // see NodeEntry::own_facts
  ClusterSnapshot snapshot_;
  // Nodes that may receive pods: those that stay for sure first (name order), then candidates
  // latest-tried first, so moved pods land where they are least likely to move again.
  std::vector<NodeIndex> destinations_;
  std::vector<uint8_t> usable_;  // per node: may receive pods now
  size_t usable_count_ = 0;
  Placer placer_;
  // Per node: facts indices of pods placed on it by the simulation (base: from nodes being
  // deleted; a pass adds the pods of the candidates it removes).
  std::vector<std::vector<uint32_t>> base_moved_in_;
  std::vector<std::vector<uint32_t>> moved_in_;
  std::vector<PdbState> pdbs_;
  std::unordered_map<std::string_view, std::vector<uint32_t>> pdbs_by_namespace_;
  std::vector<NodeIndex> order_;  // candidates: empty first, then utilization, then name
  // Scratch buffers reused across candidates.
  std::vector<uint32_t> to_move_;
  std::vector<NodeIndex> touched_;
  std::vector<uint32_t> covering_;
};

ScaleDownRun::ScaleDownRun(const PlannerInput& input, bool evict_training_pods)
    : input_(input),
      config_(input.config->scale_down),
      evict_training_pods_(evict_training_pods),
      placer_(snapshot_, destinations_, usable_) {
  // Nodes in name order (the first of duplicate names wins); entry i is snapshot node i.
  std::vector<const model::Node*> nodes = input.nodes;
  std::stable_sort(nodes.begin(), nodes.end(), [](const model::Node* a, const model::Node* b) {
    return a->name() < b->name();
  });
  entries_.reserve(nodes.size());
  for (const model::Node* node : nodes) {
    if (node->name().empty()) continue;
    if (!entries_.empty() && entries_.back().node->name() == node->name()) continue;
    Result<NodeIndex> index = snapshot_.AddNode(node);
    TIDEPOOL_CHECK(index.has_value() && *index == entries_.size());
    NodeEntry& e = entries_.emplace_back();
    e.node = node;
    e.pool = PoolOf(*node, input);
    e.being_deleted = HasTaint(*node, kToBeDeletedTaint);
    e.destination = node->ready && !node->unschedulable && !e.being_deleted;
  }
  usable_.assign(entries_.size(), 0);
  base_moved_in_.resize(entries_.size());
  moved_in_.resize(entries_.size());

  ComputePdbBudgets();
  AddPods();
  std::stable_sort(order_.begin(), order_.end(), [this](NodeIndex a, NodeIndex b) {
    const NodeEntry& x = entries_[a];
    const NodeEntry& y = entries_[b];
    bool ex = x.own.empty(), ey = y.own.empty();
    if (ex != ey) return ex;
    return x.util.value < y.util.value;  // stable: ties stay in name order
  });
  OrderDestinations();

  // Pods of nodes being deleted are about to be rescheduled: they take room on the nodes that
  // stay (best effort; the ones that fit nowhere are scale-up's business).
  for (NodeEntry& e : entries_) {
    if (!e.being_deleted) continue;
    for (uint32_t f : e.own_facts) {
      NodeIndex n = placer_.Find(facts_[f]);
      if (n == kNoNode) continue;
      TIDEPOOL_CHECK(snapshot_.AddPod(facts_[f].pod, n).has_value());
      base_moved_in_[n].push_back(f);
    }
  }
}

// One sweep over the pods, in input order, gathering everything a node needs while each pod is
// in cache: its place in the snapshot, role, requests, and for nodes that may be candidates the
// first pod that blocks eviction and the PodFacts of the pods that move.
void ScaleDownRun::AddPods() {
  auto by_key = [](const model::Pod* a, const model::Pod* b) {
    int c = a->meta.namespace_.compare(b->meta.namespace_);
    return c != 0 ? c < 0 : a->meta.name < b->meta.name;
  };
  std::vector<uint8_t> maybe(entries_.size(), 0);
  for (NodeIndex i = 0; i < entries_.size(); ++i) {
    NodeEntry& e = entries_[i];
    if (e.pool == nullptr) continue;
    e.keep = NodeKeep(e);
    maybe[i] = e.keep.empty() ? 1 : 0;
  }
  std::vector<model::Resources> requested(entries_.size());
  facts_.reserve(input_.pods.size());
  bool sorted = true;  // input in namespace/name order (as API lists are)
  const model::Pod* previous = nullptr;
  NodeIndex last = kNoNode;
  for (const model::Pod* pod : input_.pods) {
    if (pod->node_name.empty() || pod->IsTerminal()) continue;
    // Pods often come grouped by node; the previous lookup then answers.
    NodeIndex i = last != kNoNode && entries_[last].node->name() == pod->node_name
                      ? last
                      : snapshot_.FindNode(pod->node_name);
    if (i == kNoNode) continue;
    last = i;
    if (previous != nullptr && sorted && by_key(pod, previous)) sorted = false;
    previous = pod;
    NodeEntry& e = entries_[i];
    if (!e.being_deleted) TIDEPOOL_CHECK(snapshot_.AddPod(pod, i).has_value());
    if (DrainRoleOf(*pod) != DrainRole::kMove) continue;
    e.own.push_back(pod);
    requested[i] += pod->requests;
    if (!maybe[i] && !e.being_deleted) continue;
    e.own_facts.push_back(static_cast<uint32_t>(facts_.size()));
    facts_.emplace_back(pod);
    if (maybe[i] && (e.blocker_pod == nullptr || by_key(pod, e.blocker_pod))) {
      CoveringPdbs(*pod, covering_);
      std::string blocker = EvictionBlocker(*pod, !covering_.empty(), evict_training_pods_);
      if (!blocker.empty()) {
        e.blocker = std::move(blocker);
        e.blocker_pod = pod;
      }
    }
  }

  for (NodeIndex i = 0; i < entries_.size(); ++i) {
    NodeEntry& e = entries_[i];
    if (!sorted) {
      std::stable_sort(e.own.begin(), e.own.end(), by_key);
      std::stable_sort(e.own_facts.begin(), e.own_facts.end(), [&](uint32_t a, uint32_t b) {
        return by_key(facts_[a].pod, facts_[b].pod);
      });
    }
    if (e.being_deleted) TIDEPOOL_CHECK(snapshot_.RemoveNode(e.node->name()).has_value());
    if (e.pool == nullptr) continue;
    e.util = ComputeUtilization(*e.node, requested[i]);
    if (!maybe[i]) continue;
    if (e.util.value >= Threshold(e)) {
      e.keep = DescribeUtilization(e.util, Threshold(e));
      continue;
    }
    e.candidate = true;
    order_.push_back(i);
  }
}

void ScaleDownRun::ComputePdbBudgets() {
  pdbs_.reserve(input_.pdbs.size());
  bool compute = false;
  for (const model::PodDisruptionBudget* pdb : input_.pdbs) {
    pdbs_by_namespace_[pdb->meta.namespace_].push_back(static_cast<uint32_t>(pdbs_.size()));
    pdbs_.push_back({pdb, std::max(0, pdb->disruptions_allowed.value_or(0))});
    compute = compute || !pdb->disruptions_allowed;
  }
  if (!compute) return;
  // No status: what the disruption controller would compute from the pods the PDB selects
  // (expected: the non-terminal ones; healthy: the running ones not being deleted).
  std::vector<int32_t> expected(pdbs_.size()), healthy(pdbs_.size());
  for (const model::Pod* pod : input_.pods) {
    if (pod->IsTerminal()) continue;
    auto it = pdbs_by_namespace_.find(pod->meta.namespace_);
    if (it == pdbs_by_namespace_.end()) continue;
    for (uint32_t i : it->second) {
      const model::PodDisruptionBudget& pdb = *pdbs_[i].pdb;
      if (pdb.disruptions_allowed || !pdb.Selects(pod->meta)) continue;
      ++expected[i];
      if (pod->phase == model::PodPhase::kRunning && !pod->meta.deletion_timestamp) ++healthy[i];
    }
  }
  for (size_t i = 0; i < pdbs_.size(); ++i) {
    const model::PodDisruptionBudget& pdb = *pdbs_[i].pdb;
    if (pdb.disruptions_allowed) continue;
    int32_t desired = 0;
    if (pdb.max_unavailable) {
      desired = expected[i] - pdb.max_unavailable->Resolve(expected[i], /*round_up=*/true);
    } else if (pdb.min_available) {
      desired = pdb.min_available->Resolve(expected[i], /*round_up=*/true);
    }
    pdbs_[i].allowed = std::max(0, healthy[i] - desired);
  }
}

void ScaleDownRun::OrderDestinations() {
  destinations_.clear();
  for (NodeIndex i = 0; i < entries_.size(); ++i)
    if (entries_[i].destination && !entries_[i].candidate) destinations_.push_back(i);
  for (auto it = order_.rbegin(); it != order_.rend(); ++it)
    if (entries_[*it].destination) destinations_.push_back(*it);
  for (NodeIndex n : destinations_) usable_[n] = 1;
  usable_count_ = destinations_.size();
}

NodeIndex ScaleDownRun::Find(std::string_view name) const {
  auto it =
      std::lower_bound(entries_.begin(), entries_.end(), name,
                       [](const NodeEntry& e, std::string_view n) { return e.node->name() < n; });
  if (it == entries_.end() || it->node->name() != name) return kNoNode;
  return static_cast<NodeIndex>(it - entries_.begin());
}

void ScaleDownRun::CoveringPdbs(const model::Pod& pod, std::vector<uint32_t>& out) const {
  out.clear();
  if (pdbs_.empty()) return;
  auto it = pdbs_by_namespace_.find(pod.meta.namespace_);
  if (it == pdbs_by_namespace_.end()) return;
  for (uint32_t i : it->second)
    if (pdbs_[i].pdb->Selects(pod.meta)) out.push_back(i);
}

std::string ScaleDownRun::NodeKeep(const NodeEntry& e) const {
  if (e.being_deleted) {
    return fmt::format("being removed already ({} taint)", kToBeDeletedTaint);
  }
  for (std::string_view key : {kCaScaleDownDisabledAnnotation, kScaleDownDisabledAnnotation}) {
    if (AnnotatedTrue(*e.node, key)) {
      return fmt::format("scale-down disabled by annotation {}=true", key);
    }
  }
  const std::optional<Time>& created = e.node->meta.creation_timestamp;
  if (created && *created + config_.delay_after_add > input_.now) {
    auto age =
        std::chrono::floor<std::chrono::seconds>(std::max(Duration(0), input_.now - *created));
    return fmt::format("added {} ago, delayAfterAdd {}", FormatDuration(age),
                       FormatDuration(config_.delay_after_add));
  }
  return "";
}

std::string ScaleDownRun::PdbBlocker(const NodeEntry& e, const std::vector<int32_t>& remaining,
                                     std::vector<std::pair<uint32_t, int32_t>>& needed) const {
  needed.clear();
  if (pdbs_.empty()) return "";
  std::vector<uint32_t> covering;
  for (const model::Pod* pod : e.own) {
    CoveringPdbs(*pod, covering);
    for (uint32_t i : covering) {
      auto it =
          std::find_if(needed.begin(), needed.end(), [i](const auto& n) { return n.first == i; });
      if (it == needed.end()) it = needed.insert(needed.end(), {i, 0});
      ++it->second;
      if (it->second <= remaining[i]) continue;
      const PdbState& s = pdbs_[i];
      std::string why;
      if (s.allowed == 0) {
        why = "allows no disruptions now";
      } else if (remaining[i] < s.allowed) {
        why = fmt::format("allows {} disruption(s) and other removals in this pass use {}",
                          s.allowed, s.allowed - remaining[i]);
      } else {
        why = fmt::format("allows {} disruption(s) and draining this node needs more", s.allowed);
      }
      return fmt::format("pod {} is not evictable: PodDisruptionBudget {} {}", pod->Key(),
                         s.pdb->meta.Key(), why);
    }
  }
  return "";
}

std::string ScaleDownRun::Simulate(NodeIndex c,
                                   std::vector<std::pair<std::string, std::string>>* moves,
                                   Amounts& free, std::vector<Amounts>& contrib) {
  const NodeEntry& e = entries_[c];
  to_move_.assign(e.own_facts.begin(), e.own_facts.end());
  to_move_.insert(to_move_.end(), moved_in_[c].begin(), moved_in_[c].end());
  bool was_usable = usable_[c] != 0;
  if (!to_move_.empty()) {
    const PodFacts& first = facts_[to_move_.front()];
    if (usable_count_ == (was_usable ? 1u : 0u)) {
      return fmt::format("pod {} cannot be moved: no other ready, schedulable node to move it to",
                         first.pod->Key());
    }
    // A necessary condition first: what the pods request in total must be free somewhere.
    Amounts need{};
    for (uint32_t f : to_move_) {
      const PodFacts& p = facts_[f];
      AddTo(need, {p.cpu, p.memory, 1, p.gpus}, 1);
    }
    Amounts available = free;
    if (was_usable) AddTo(available, contrib[c], -1);
    for (size_t r = 0; r < need.size(); ++r) {
      if (need[r] <= available[r]) continue;
      std::vector<const model::Pod*> pods;
      pods.reserve(to_move_.size());
      for (uint32_t f : to_move_) pods.push_back(facts_[f].pod);
      return fmt::format(
          "pods {} cannot be moved: they request {} {} in total and the other ready, "
          "schedulable nodes have {} free",
          JoinKeys(pods, 3), kAmountNames[r], FormatAmount(need, r), FormatAmount(available, r));
    }
  }

  snapshot_.Fork();
  TIDEPOOL_CHECK(snapshot_.RemoveNode(e.node->name()).has_value());
  SetUsable(c, false);
  std::stable_sort(to_move_.begin(), to_move_.end(),
                   [this](uint32_t a, uint32_t b) { return BiggerThan(facts_[a], facts_[b]); });
  touched_.clear();
  size_t recorded = moves ? moves->size() : 0;
  for (uint32_t f : to_move_) {
    NodeIndex n = placer_.Find(facts_[f]);
    if (n == kNoNode) {
      std::string reason = fmt::format("pod {} cannot be moved: {}", facts_[f].pod->Key(),
                                       placer_.Diagnose(facts_[f]));
      snapshot_.Revert();
      SetUsable(c, was_usable);
      for (auto it = touched_.rbegin(); it != touched_.rend(); ++it) moved_in_[*it].pop_back();
      if (moves) moves->resize(recorded);
      return reason;
    }
    TIDEPOOL_CHECK(snapshot_.AddPod(facts_[f].pod, n).has_value());
    touched_.push_back(n);
    moved_in_[n].push_back(f);
    if (moves) moves->emplace_back(facts_[f].pod->Key(), entries_[n].node->name());
  }
  snapshot_.Commit();
  moved_in_[c].clear();
  if (was_usable) {
    AddTo(free, contrib[c], -1);
    contrib[c] = {};
  }
  for (size_t i = 0; i < touched_.size(); ++i) {
    NodeIndex t = touched_[i];
    if (i > 0 && touched_[i - 1] == t) continue;  // unchanged since the previous entry
    AddTo(free, contrib[t], -1);
    contrib[t] = FreeOn(snapshot_.Get(t));
    AddTo(free, contrib[t], 1);
  }
  return "";
}

PassResult ScaleDownRun::RunPass(const PassOptions& options) {
  PassResult out;
  if (options.restore) snapshot_.Fork();
  for (NodeIndex n : destinations_) usable_[n] = 1;
  usable_count_ = destinations_.size();
  for (NodeIndex i = 0; i < entries_.size(); ++i) moved_in_[i] = base_moved_in_[i];
  placer_.Reset();

  Amounts free{};
  std::vector<Amounts> contrib(entries_.size());
  for (NodeIndex n : destinations_) {
    contrib[n] = FreeOn(snapshot_.Get(n));
    AddTo(free, contrib[n], 1);
  }
  std::unordered_map<const model::Pool*, int32_t> pool_size;
  std::unordered_map<const model::Pool*, int32_t> non_empty_removed;
  for (const NodeEntry& e : entries_)
    if (e.pool != nullptr && !e.being_deleted) ++pool_size[e.pool];
  int32_t empty_removed = 0;
  std::vector<int32_t> pdb_remaining(pdbs_.size());
  for (size_t i = 0; i < pdbs_.size(); ++i) pdb_remaining[i] = pdbs_[i].allowed;
  std::vector<std::pair<uint32_t, int32_t>> needed;

  for (NodeIndex c : order_) {
    const NodeEntry& e = entries_[c];
    auto keep = [&](std::string reason) {
      out.plan.keep.push_back({e.node->name(), std::move(reason)});
    };
    int32_t& size = pool_size[e.pool];
    if (size <= e.pool->min) {
      keep(fmt::format("pool {} at min {}", e.pool->name, e.pool->min));
      continue;
    }
    if (!e.blocker.empty()) {
      keep(e.blocker);
      continue;
    }
    if (std::string r = PdbBlocker(e, pdb_remaining, needed); !r.empty()) {
      keep(std::move(r));
      continue;
    }
    if (options.may_remove && *options.may_remove && !(*options.may_remove)(*e.node)) {
      std::string r;
      if (options.not_yet_reason && *options.not_yet_reason) r = (*options.not_yet_reason)(*e.node);
      keep(r.empty() ? std::string(kDefaultNotYet) : std::move(r));
      continue;
    }
    bool empty = e.own.empty();
    if (options.rate_limit) {
      if (empty && empty_removed >= config_.max_empty_bulk_delete) {
        keep(fmt::format("maxEmptyBulkDelete {} reached in this pass",
                         config_.max_empty_bulk_delete));
        continue;
      }
      if (!empty && non_empty_removed[e.pool] >= config_.max_non_empty_per_pool) {
        keep(fmt::format("maxNonEmptyPerPool {} reached for pool {} in this pass",
                         config_.max_non_empty_per_pool, e.pool->name));
        continue;
      }
    }
    if (std::string r = Simulate(c, options.record == c ? &out.moves : nullptr, free, contrib);
        !r.empty()) {
      keep(std::move(r));
      continue;
    }
    --size;
    if (empty) {
      ++empty_removed;
    } else {
      ++non_empty_removed[e.pool];
    }
    for (const auto& [pdb, count] : needed) pdb_remaining[pdb] -= count;
    ScaleDown& sd = out.plan.scale_downs.emplace_back();
    sd.node = e.node->name();
    sd.pool = e.pool->name;
    sd.kind = empty ? RemovalKind::kEmpty : RemovalKind::kUnderutilized;
    sd.evict.reserve(e.own.size());
    for (const model::Pod* p : e.own) sd.evict.push_back(PodKey(*p));
    if (!std::is_sorted(sd.evict.begin(), sd.evict.end()))
      std::sort(sd.evict.begin(), sd.evict.end());
    sd.detail = DescribeUtilization(e.util, Threshold(e));
  }
  if (options.restore) snapshot_.Revert();

  for (const NodeEntry& e : entries_)
    if (e.pool != nullptr && !e.candidate) out.plan.keep.push_back({e.node->name(), e.keep});
  std::sort(out.plan.keep.begin(), out.plan.keep.end(),
            [](const Keep& a, const Keep& b) { return a.node < b.node; });
  return out;
}

// Managed node names in name order (first of duplicates), for the disabled-in-config answer.
std::vector<std::string> ManagedNodeNames(const PlannerInput& input) {
  std::vector<std::string> names;
  for (const model::Node* n : input.nodes)
    if (PoolOf(*n, input) != nullptr) names.push_back(n->name());
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

}  // namespace

ScaleDownPlan ScaleDownPlanner::Plan(const PlannerInput& input, const ScaleDownOptions& options,
                                     std::vector<std::string>* out_unneeded) const {
  TIDEPOOL_CHECK(input.config != nullptr);
  if (out_unneeded) out_unneeded->clear();
  ScaleDownPlan plan;
  if (!input.config->scale_down.enabled) {
    for (std::string& name : ManagedNodeNames(input)) {
      plan.keep.push_back({std::move(name), std::string(kDisabledInConfig)});
    }
    return plan;
  }
  ScaleDownRun run(input, options.evict_training_pods);
  bool second_pass = out_unneeded && (options.rate_limit || options.may_remove);
  PassOptions pass;
  pass.rate_limit = options.rate_limit;
  pass.may_remove = &options.may_remove;
  pass.not_yet_reason = &options.not_yet_reason;
  pass.restore = second_pass;
  plan = std::move(run.RunPass(pass).plan);
  if (out_unneeded) {
    if (!second_pass) {
      for (const ScaleDown& sd : plan.scale_downs) out_unneeded->push_back(sd.node);
    } else {
      PassOptions all;
      all.rate_limit = false;
      for (ScaleDown& sd : run.RunPass(all).plan.scale_downs) {
        out_unneeded->push_back(std::move(sd.node));
      }
    }
  }
  return plan;
}

std::string ScaleDownPlanner::Explain(const PlannerInput& input, std::string_view node_name) const {
  TIDEPOOL_CHECK(input.config != nullptr);
  const model::Node* node = nullptr;
  for (const model::Node* n : input.nodes) {
    if (n->name() == node_name) {
      node = n;
      break;
    }
  }
  if (node == nullptr) return fmt::format("node {} is not in the cluster state.", node_name);
  const model::Pool* pool = PoolOf(*node, input);
  if (pool == nullptr) {
    return fmt::format(
        "node {} is in no pool (unmanaged): tidepool never scales it down; its free capacity "
        "still counts when pods move.",
        node_name);
  }
  std::string head = fmt::format("node {} (pool {}, min {})", node_name, pool->name, pool->min);
  if (!input.config->scale_down.enabled) {
    return fmt::format("{}: kept: {}.", head, kDisabledInConfig);
  }
  ScaleDownRun run(input);
  NodeIndex index = run.Find(node_name);
  TIDEPOOL_CHECK(index != kNoNode);
  const NodeEntry& e = run.entry(index);
  std::string utilization = DescribeUtilization(e.util, run.Threshold(e));
  PassOptions pass;
  pass.record = index;
  PassResult result = run.RunPass(pass);
  std::string out = fmt::format("{}: {}.", head, utilization);
  for (const ScaleDown& sd : result.plan.scale_downs) {
    if (sd.node != node_name) continue;
    std::string_view kind = sd.kind == RemovalKind::kEmpty ? "empty" : "underutilized";
    if (result.moves.empty()) {
      return out + fmt::format(
                       " Removable now ({}): no pods to move (only DaemonSet, mirror or "
                       "terminating pods).",
                       kind);
    }
    out += fmt::format(" Removable now ({}): {} pod(s) move:", kind, result.moves.size());
    std::sort(result.moves.begin(), result.moves.end());
    char sep = ' ';
    for (const auto& [pod, to] : result.moves) {
      out += fmt::format("{}{} -> {}", sep, pod, to);
      sep = ',';
    }
    return out + ".";
  }
  for (const Keep& k : result.plan.keep) {
    if (k.node != node_name) continue;
    if (k.reason == utilization) return out + " Kept: its utilization is not below the threshold.";
    return out + fmt::format(" Kept: {}.", k.reason);
  }
  return out;
}

}  // namespace tidepool::planner
