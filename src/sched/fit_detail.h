// What the fit checks' files share (fit.cc, fit_precompute.cc, fit_reasons.cc): the verdict a
// filter returns before it becomes a FitResult, the node being checked, and the precomputed state.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sched/fit.h"
#include "sched/snapshot.h"

namespace tidepool::sched::fit_detail {

using model::Labels;
using model::Node;
using model::Pod;
using model::PodAffinityTerm;
using model::Resources;

inline constexpr std::string_view kBindAllHostIp = "0.0.0.0";
inline constexpr uint32_t kNoDomain = TopologyIndex::kNoDomain;

// The outcome of the filters before it becomes a FitResult: trivially copyable and free of
// strings, so the success path builds nothing. The reason text is made only on failure.
// 16 bytes, so it travels in registers.
struct Verdict {
  const model::Taint* taint = nullptr;  // kTaintToleration
  FitCode code = FitCode::kFits;
  model::ResourceId resource = 0;      // kNodeResources: the insufficient one (kPods: too many)
  bool affinity_unresolvable = false;  // kPodAffinity

  bool fits() const { return code == FitCode::kFits; }
};
static_assert(sizeof(Verdict) <= 16);

inline Verdict Reject(FitCode code) {
  Verdict v;
  v.code = code;
  return v;
}

// The FitResult of a failed verdict, with kube-scheduler's wording (cold: only on failure).
[[gnu::cold, gnu::noinline]] FitResult MakeFailure(const Verdict& v);

inline FitResult ToResult(const Verdict& v) {
  if (v.fits()) return FitResult::Fit();
  return MakeFailure(v);
}

inline const std::string* FindLabel(const Labels& labels, std::string_view key) {
  auto it = labels.find(key);
  return it == labels.end() ? nullptr : &it->second;
}

// nodeSelector and required node affinity.
inline bool MatchesAffinity(const Pod& pod, const Node& node) {
  for (const auto& [key, value] : pod.node_selector) {
    const std::string* v = FindLabel(node.labels(), key);
    if (v == nullptr || *v != value) return false;
  }
  const auto& required = pod.affinity().node_required;
  return !required || required->Matches(node.labels(), node.name());
}

// Calls f(port) for every host port a pod uses: app and init containers, as Pod::HostPorts()
// lists them, without allocating.
template <typename F>
void ForEachHostPort(const Pod& pod, F&& f) {
  for (const auto* list : {&pod.init_containers(), &pod.containers})
    for (const auto& c : *list)
      for (const auto& p : c.ports)
        if (p.host_port > 0) f(p);
}

inline std::string_view SanitizedIp(const std::string& ip) {
  return ip.empty() ? kBindAllHostIp : std::string_view(ip);
}
inline std::string_view SanitizedProtocol(const std::string& protocol) {
  return protocol.empty() ? std::string_view("TCP") : std::string_view(protocol);
}

struct HostPort {
  std::string_view ip;        // sanitized: "" becomes 0.0.0.0
  std::string_view protocol;  // sanitized: "" becomes TCP
  int32_t port;
};

// The node being checked: a node slot of the snapshot, or a hypothetical new node.
struct Target {
  const Node* node;
  NodeIndex index;  // kNoNode for a new node (CheckTemplate)
  bool is_new() const { return index == kNoNode; }
};

// Where the target sits in one topology.
struct Domain {
  enum class Kind { kMissing, kNew, kKnown };
  Kind kind;
  uint32_t id;  // kKnown only
};

// A snapshot node reads its domain from the index. A new node is its own hostname domain
// whatever its labels say; for other keys its label value names a known domain or a new one.
inline Domain Resolve(const TopologyIndex& topo, const Target& t) {
  if (!t.is_new()) {
    uint32_t d = topo.DomainOf(t.index);
    return d == kNoDomain ? Domain{Domain::Kind::kMissing, 0} : Domain{Domain::Kind::kKnown, d};
  }
  if (topo.key() == model::kLabelHostname) return {Domain::Kind::kNew, 0};
  const std::string* v = FindLabel(t.node->labels(), topo.key());
  if (v == nullptr) return {Domain::Kind::kMissing, 0};
  uint32_t d = topo.Find(*v);
  return d == kNoDomain ? Domain{Domain::Kind::kNew, 0} : Domain{Domain::Kind::kKnown, d};
}

// Placed pods per domain of one key, for one term of the incoming pod (or, for existing
// anti-affinity, all terms with that key).
struct DomainCounts {
  const TopologyIndex* topo;
  std::vector<int32_t> counts;  // by domain id

  int32_t At(const Domain& d) const {
    return d.kind == Domain::Kind::kKnown && d.id < counts.size() ? counts[d.id] : 0;
  }
};

// The placed pods of one namespace that a selector of one key (matchLabels k=v, or k In (...))
// matches, read per node from the snapshot's LabelCounts instead of from each pod. Not indexed
// (labels null) for any other selector: those are matched pod by pod.
struct LabelMatch {
  const LabelCounts* labels = nullptr;
  std::vector<std::string> values;  // the selector's values
  bool terminating = false;         // count pods with a deletionTimestamp too
  std::vector<uint32_t> ids;        // the values known to `labels`
  size_t seen = 0;                  // labels->ValueCount() when `ids` was resolved

  bool indexed() const { return labels != nullptr; }
  // Matching pods on the node slot (indexed only).
  int32_t Pods(NodeIndex node);
  // f(node, matching pods) for each node slot with a pod the selector selects (indexed only),
  // once per value the node carries; removed nodes' slots too (LabelCounts::NodesWith).
  template <typename F>
  void ForEachNode(F&& f) {
    Resolve();
    for (uint32_t id : ids)
      for (uint32_t node : labels->NodesWith(id)) f(node, labels->Count(node, id, terminating));
  }

 private:
  // Brings `ids` up to date with the values `labels` knows.
  void Resolve();
};
LabelMatch MatchByLabel(const ClusterSnapshot& snapshot, std::string_view ns,
                        const model::LabelSelector& selector, bool terminating);

// One DoNotSchedule spread constraint of the incoming pod.
struct Spread {
  const model::TopologySpreadConstraint* constraint;
  const TopologyIndex* topo;
  model::LabelSelector selector;  // the constraint's, plus matchLabelKeys from the pod's labels
  bool counts_pods;               // kube-scheduler counts no pods for a missing or empty selector
  bool self_match;                // the incoming pod matches the selector
  int64_t min_domains;
  std::vector<int32_t> counts;    // matching pods per domain id (included nodes only)
  std::vector<uint8_t> eligible;  // domain has an included node
  // Per node slot: the node has every constraint's key and passes this constraint's inclusion
  // policies. Only such a node's pods count, as in kube-scheduler's PreFilter: a node that fails
  // the policies adds nothing to its domain, even when another node makes the domain eligible.
  // Empty when `by_topology`.
  std::vector<uint8_t> included;
  // No policy of the pod's constraints can exclude a node that has their one key: a node is
  // included exactly when its slot has a domain, and the eligible domains are read from the
  // TopologyIndex's live nodes instead of a visit of every node (ComputeSpread).
  bool by_topology = false;
  bool Included(NodeIndex i) const {
    if (by_topology) return topo->DomainOf(i) != kNoDomain;
    return i < included.size() && included[i] != 0;
  }
  // Domains a pool template offers (FitChecker::OfferDomain), by label value: eligible with 0
  // matching pods while no eligible node of the snapshot is in them.
  std::vector<std::string> offered;
  int64_t domains = 0;    // eligible domains, offered ones included
  int64_t min_count = 0;  // over eligible domains
  // The minimum SpreadVerdict applies (0 below minDomains; INT64_MAX when no domain is eligible,
  // as the constraint is then skipped), as of the last RecomputeSpreadMin.
  int64_t floor = INT64_MIN;
  // Read from the snapshot's LabelCounts when the selector has one key.
  LabelMatch match;
};

}  // namespace tidepool::sched::fit_detail

namespace tidepool::sched {

// Precomputation: kube-scheduler's PreFilter state for NodePorts, PodTopologySpread and
// InterPodAffinity, and the filters that read it.

struct FitChecker::Precomputed {
  using Pod = model::Pod;
  using DomainCounts = fit_detail::DomainCounts;
  using HostPort = fit_detail::HostPort;
  using LabelMatch = fit_detail::LabelMatch;
  using Spread = fit_detail::Spread;
  using Target = fit_detail::Target;
  using Verdict = fit_detail::Verdict;

  const Pod* pod;
  const ClusterSnapshot* snapshot;

  std::vector<HostPort> ports;

  std::vector<DomainCounts> affinity;  // per required affinity term
  bool affinity_matched = false;  // some placed pod (on a node with the keys) matches all terms
  bool self_matches_affinity = false;
  std::vector<DomainCounts> anti_affinity;  // per required anti-affinity term
  // The affinity terms (when there is one) and each anti-affinity term, counted from the
  // snapshot's LabelCounts where their selector allows (LabelMatch).
  LabelMatch affinity_match;
  std::vector<LabelMatch> anti_match;
  bool anti_affinity_matched = false;
  // Domains where placed pods' required anti-affinity terms select the incoming pod, per key.
  std::vector<DomainCounts> existing_anti;

  std::vector<Spread> spread;
  bool spread_needs_affinity = false;  // some constraint has nodeAffinityPolicy Honor
  bool spread_needs_taints = false;    // some constraint has nodeTaintsPolicy Honor
  uint64_t loosened = 0;               // RecomputeSpreadMin calls that raised some floor

  void ComputePorts();
  void ComputeAffinity();
  void ComputeExistingAntiAffinity();
  void ComputeSpread();

  // The per-pod and per-node parts of the above, shared by the full computation and the
  // incremental updates (FitChecker::OnNodeAdded / OnPodAdded).
  // `indexed_too` as for AccountSpreadPod.
  void AccountAffinityPod(const Pod& existing, NodeIndex i, bool indexed_too = true);
  // The terms counted from LabelCounts, from the nodes that carry their values.
  void CountIndexedAffinity();
  void AccountExistingAntiPod(const Pod& existing, NodeIndex i);
  // One required anti-affinity term (index t) of a pod placed on node i.
  void AccountExistingAntiTerm(const Pod& existing, size_t t, NodeIndex i);
  // With `count_indexed` false, the constraints counted from LabelCounts are left to the caller
  // (ComputeSpread counts them from the nodes that have the values).
  void AccountSpreadNode(NodeIndex i, bool count_indexed = true);
  // `indexed_too`: also the constraints counted from LabelCounts (a pod placed after the
  // checker was built); else only those counted pod by pod (a scan of a node's pods).
  void AccountSpreadPod(const Pod& existing, NodeIndex i, bool indexed_too = true);

  // Whether every constraint can be Spread::by_topology (ComputeSpread).
  bool InclusionByTopology() const;
  void RecomputeSpreadMin();
  // Adds the node's domains to the constraints' offered ones; true when any was new.
  bool OfferDomain(const model::Node& node);

  bool PortsConflict(const NodeInfo& info) const;
  Verdict SpreadVerdict(const Target& t) const;
  Verdict InterPodVerdict(const Target& t) const;
};

}  // namespace tidepool::sched
