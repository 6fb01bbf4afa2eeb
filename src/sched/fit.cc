#include "sched/fit.h"

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <utility>

#include "base/check.h"

namespace tidepool::sched {
namespace {

using model::Labels;
using model::Node;
using model::Pod;
using model::PodAffinityTerm;
using model::Resources;

constexpr std::string_view kReasonUnschedulable = "node(s) were unschedulable";
constexpr std::string_view kReasonNodeName = "node(s) didn't match the requested node name";
constexpr std::string_view kReasonNodeAffinity =
    "node(s) didn't match Pod's node affinity/selector";
constexpr std::string_view kReasonNodePorts =
    "node(s) didn't have free ports for the requested pod ports";
constexpr std::string_view kReasonTooManyPods = "Too many pods";
constexpr std::string_view kReasonSpread = "node(s) didn't match pod topology spread constraints";
constexpr std::string_view kReasonSpreadMissingLabel =
    "node(s) didn't match pod topology spread constraints (missing required label)";
constexpr std::string_view kReasonAffinity = "node(s) didn't match pod affinity rules";
constexpr std::string_view kReasonAntiAffinity = "node(s) didn't match pod anti-affinity rules";
constexpr std::string_view kReasonExistingAntiAffinity =
    "node(s) didn't satisfy existing pods anti-affinity rules";

constexpr std::string_view kUnschedulableTaintKey = "node.kubernetes.io/unschedulable";
constexpr std::string_view kBindAllHostIp = "0.0.0.0";
constexpr uint32_t kNoDomain = TopologyIndex::kNoDomain;

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

Verdict Reject(FitCode code) {
  Verdict v;
  v.code = code;
  return v;
}

[[gnu::cold, gnu::noinline]] FitResult MakeFailure(const Verdict& v) {
  FitResult r;
  r.code = v.code;
  switch (v.code) {
    case FitCode::kFits:
      break;
    case FitCode::kNodeUnschedulable:
      r.reason = kReasonUnschedulable;
      break;
    case FitCode::kNodeName:
      r.reason = kReasonNodeName;
      break;
    case FitCode::kTaintToleration: {
      constexpr std::string_view kPrefix = "node(s) had untolerated taint ";
      std::string taint = v.taint->ToString();
      r.reason.reserve(kPrefix.size() + taint.size());
      r.reason = kPrefix;
      r.reason += taint;
      break;
    }
    case FitCode::kNodeAffinity:
      r.reason = kReasonNodeAffinity;
      break;
    case FitCode::kNodePorts:
      r.reason = kReasonNodePorts;
      break;
    case FitCode::kNodeResources:
      if (v.resource == model::kPods) {
        r.reason = kReasonTooManyPods;
      } else {
        constexpr std::string_view kPrefix = "Insufficient ";
        std::string_view name = model::ResourceName(v.resource);
        r.reason.reserve(kPrefix.size() + name.size());
        r.reason = kPrefix;
        r.reason += name;
      }
      break;
    case FitCode::kTopologySpreadMissingLabel:
      r.reason = kReasonSpreadMissingLabel;
      break;
    case FitCode::kTopologySpread:
      r.reason = kReasonSpread;
      break;
    case FitCode::kPodAffinity:
      r.reason = kReasonAffinity;
      r.pod_affinity_unresolvable = v.affinity_unresolvable;
      break;
    case FitCode::kPodAntiAffinity:
      r.reason = kReasonAntiAffinity;
      break;
    case FitCode::kExistingAntiAffinity:
      r.reason = kReasonExistingAntiAffinity;
      break;
  }
  return r;
}

inline FitResult ToResult(const Verdict& v) {
  if (v.fits()) return FitResult::Fit();
  return MakeFailure(v);
}

const std::string* FindLabel(const Labels& labels, std::string_view key) {
  auto it = labels.find(key);
  return it == labels.end() ? nullptr : &it->second;
}

bool ToleratesUnschedulable(const Pod& pod) {
  static const model::Taint* const kTaint =
      new model::Taint{std::string(kUnschedulableTaintKey), "", model::TaintEffect::kNoSchedule};
  for (const auto& t : pod.tolerations)
    if (t.Tolerates(*kTaint)) return true;
  return false;
}

bool MatchesAffinity(const Pod& pod, const Node& node) {
  for (const auto& [key, value] : pod.node_selector) {
    const std::string* v = FindLabel(node.labels(), key);
    if (v == nullptr || *v != value) return false;
  }
  const auto& required = pod.affinity.node_required;
  return !required || required->Matches(node.labels(), node.name());
}

// NodeUnschedulable, NodeName, TaintToleration, NodeAffinity. `unschedulable` and `has_taints`
// are the node's (NodeInfo keeps copies), so a simple pod never touches the Node itself.
Verdict StaticVerdict(const Pod& pod, const Node& node, bool unschedulable, bool has_taints) {
  if (unschedulable && !ToleratesUnschedulable(pod)) return Reject(FitCode::kNodeUnschedulable);
  if (!pod.node_name.empty() && pod.node_name != node.name()) return Reject(FitCode::kNodeName);
  if (has_taints) {
    if (const model::Taint* t = model::FindUntoleratedTaint(node.taints, pod.tolerations)) {
      Verdict v = Reject(FitCode::kTaintToleration);
      v.taint = t;
      return v;
    }
  }
  if ((!pod.node_selector.empty() || pod.affinity.node_required) && !MatchesAffinity(pod, node)) {
    return Reject(FitCode::kNodeAffinity);
  }
  return {};
}

Verdict StaticVerdict(const Pod& pod, const Node& node) {
  return StaticVerdict(pod, node, node.unschedulable, !node.taints.empty());
}

Verdict Insufficient(model::ResourceId resource) {
  Verdict v = Reject(FitCode::kNodeResources);
  v.resource = resource;
  return v;
}

// The insufficient extended resource with the smallest name (cold: names are looked up).
[[gnu::cold, gnu::noinline]] Verdict InsufficientExtended(const Resources& want,
                                                          const Resources& allocatable,
                                                          const Resources& requested) {
  model::ResourceId first = 0;
  std::string_view first_name;
  for (const auto& [id, amount] : want.extended()) {
    if (amount > 0 && amount > allocatable.Get(id) - requested.Get(id)) {
      std::string_view name = model::ResourceName(id);
      if (first_name.empty() || name < first_name) {
        first = id;
        first_name = name;
      }
    }
  }
  return Insufficient(first);
}

// NodeResourcesFit: pods first, then cpu, memory, ephemeral-storage, then extended resources
// (the insufficient one with the smallest name). Amounts the pod does not request are not
// checked, so a zero-request pod fits an overcommitted node if a pod slot is free.
Verdict ResourcesVerdict(const Pod& pod, const Resources& allocatable, const Resources& requested,
                         int64_t requested_pods) {
  if (requested_pods + 1 > allocatable.pods()) return Insufficient(model::kPods);
  const Resources& want = pod.requests;
  int64_t cpu = want.cpu_milli();
  if (cpu > 0 && cpu > allocatable.cpu_milli() - requested.cpu_milli()) {
    return Insufficient(model::kCpu);
  }
  int64_t memory = want.memory();
  if (memory > 0 && memory > allocatable.memory() - requested.memory()) {
    return Insufficient(model::kMemory);
  }
  int64_t storage = want.Get(model::kEphemeralStorage);
  if (storage > 0 && storage > allocatable.Get(model::kEphemeralStorage) -
                                   requested.Get(model::kEphemeralStorage)) {
    return Insufficient(model::kEphemeralStorage);
  }
  for (const auto& [id, amount] : want.extended()) {
    if (amount > 0 && amount > allocatable.Get(id) - requested.Get(id)) {
      return InsufficientExtended(want, allocatable, requested);
    }
  }
  return {};
}

// Does the term (declared by a pod in `owner_ns`) select `target`? Namespaces: the term's list,
// or the owner's namespace when the list is empty and there is no namespace selector. Without
// Namespace objects an empty namespace selector means every namespace and a non-empty one adds
// none (see FitChecker). A term without a label selector selects no pods.
bool TermMatches(const PodAffinityTerm& term, std::string_view owner_ns, const Pod& target) {
  if (!term.has_label_selector) return false;
  const std::string& ns = target.meta.namespace_;
  bool ns_ok;
  if (term.namespaces.empty() && !term.namespace_selector) {
    ns_ok = ns == owner_ns;
  } else {
    ns_ok = (term.namespace_selector && term.namespace_selector->IsEmpty()) ||
            std::find(term.namespaces.begin(), term.namespaces.end(), ns) != term.namespaces.end();
  }
  return ns_ok && term.label_selector.Matches(target.meta.labels);
}

bool MatchesAllTerms(const std::vector<PodAffinityTerm>& terms, std::string_view owner_ns,
                     const Pod& target) {
  if (terms.empty()) return false;
  for (const auto& t : terms)
    if (!TermMatches(t, owner_ns, target)) return false;
  return true;
}

// Calls f(port) for every host port a pod uses: app and init containers, as Pod::HostPorts()
// lists them, without allocating.
template <typename F>
void ForEachHostPort(const Pod& pod, F&& f) {
  for (const auto* list : {&pod.init_containers, &pod.containers})
    for (const auto& c : *list)
      for (const auto& p : c.ports)
        if (p.host_port > 0) f(p);
}

std::string_view SanitizedIp(const std::string& ip) {
  return ip.empty() ? kBindAllHostIp : std::string_view(ip);
}
std::string_view SanitizedProtocol(const std::string& protocol) {
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
Domain Resolve(const TopologyIndex& topo, const Target& t) {
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

// One DoNotSchedule spread constraint of the incoming pod.
struct Spread {
  const model::TopologySpreadConstraint* constraint;
  const TopologyIndex* topo;
  model::LabelSelector selector;  // the constraint's, plus matchLabelKeys from the pod's labels
  bool counts_pods;               // kube-scheduler counts no pods for a missing or empty selector
  bool self_match;                // the incoming pod matches the selector
  int64_t min_domains;
  std::vector<int32_t> counts;    // matching pods per domain id (eligible nodes only)
  std::vector<uint8_t> eligible;  // domain has an eligible node
  int64_t domains = 0;            // eligible domains
  int64_t min_count = 0;          // over eligible domains
};

}  // namespace

bool FitResult::unresolvable() const {
  switch (code) {
    case FitCode::kNodeUnschedulable:
    case FitCode::kNodeName:
    case FitCode::kTaintToleration:
    case FitCode::kNodeAffinity:
    case FitCode::kTopologySpreadMissingLabel:
      return true;
    case FitCode::kPodAffinity:
      return pod_affinity_unresolvable;
    case FitCode::kFits:
    case FitCode::kNodePorts:
    case FitCode::kNodeResources:
    case FitCode::kTopologySpread:
    case FitCode::kPodAntiAffinity:
    case FitCode::kExistingAntiAffinity:
      return false;
  }
  return false;
}

bool MatchesNodeAffinity(const Pod& pod, const Node& node) { return MatchesAffinity(pod, node); }

FitResult CheckNodeStatic(const Pod& pod, const Node& node) {
  return ToResult(StaticVerdict(pod, node));
}

FitResult CheckResources(const Pod& pod, const Resources& allocatable, const Resources& requested) {
  return ToResult(ResourcesVerdict(pod, allocatable, requested, requested.pods()));
}

// ---------------------------------------------------------------------------------------------
// Precomputation: kube-scheduler's PreFilter state for NodePorts, PodTopologySpread and
// InterPodAffinity, and the filters that read it.

struct FitChecker::Precomputed {
  const Pod* pod;
  const ClusterSnapshot* snapshot;

  std::vector<HostPort> ports;

  std::vector<DomainCounts> affinity;  // per required affinity term
  bool affinity_matched = false;  // some placed pod (on a node with the keys) matches all terms
  bool self_matches_affinity = false;
  std::vector<DomainCounts> anti_affinity;  // per required anti-affinity term
  bool anti_affinity_matched = false;
  // Domains where placed pods' required anti-affinity terms select the incoming pod, per key.
  std::vector<DomainCounts> existing_anti;

  std::vector<Spread> spread;
  bool spread_needs_affinity = false;  // some constraint has nodeAffinityPolicy Honor
  bool spread_needs_taints = false;    // some constraint has nodeTaintsPolicy Honor

  void ComputePorts();
  void ComputeAffinity();
  void ComputeExistingAntiAffinity();
  void ComputeSpread();

  // The per-pod and per-node parts of the above, shared by the full computation and the
  // incremental updates (FitChecker::OnNodeAdded / OnPodAdded).
  void AccountAffinityPod(const Pod& existing, NodeIndex i);
  void AccountExistingAntiPod(const Pod& existing, NodeIndex i);
  void AccountSpreadNode(NodeIndex i);
  void AccountSpreadPod(const Pod& existing, NodeIndex i);
  void RecomputeSpreadMin();

  bool PortsConflict(const NodeInfo& info) const;
  Verdict SpreadVerdict(const Target& t) const;
  Verdict InterPodVerdict(const Target& t) const;
};

void FitChecker::Precomputed::ComputePorts() {
  ForEachHostPort(*pod, [&](const model::ContainerPort& p) {
    ports.push_back({SanitizedIp(p.host_ip), SanitizedProtocol(p.protocol), p.host_port});
  });
}

bool FitChecker::Precomputed::PortsConflict(const NodeInfo& info) const {
  bool conflict = false;
  for (const Pod* existing : info.pods) {
    ForEachHostPort(*existing, [&](const model::ContainerPort& p) {
      if (conflict) return;
      std::string_view ip = SanitizedIp(p.host_ip);
      std::string_view protocol = SanitizedProtocol(p.protocol);
      for (const HostPort& want : ports) {
        if (want.port != p.host_port || want.protocol != protocol) continue;
        if (want.ip == kBindAllHostIp || ip == kBindAllHostIp || want.ip == ip) {
          conflict = true;
          return;
        }
      }
    });
    if (conflict) return true;
  }
  return false;
}

namespace {
// Increments a per-domain count, growing the table for domains that appeared after it was
// sized (new nodes added to the snapshot since).
void Bump(std::vector<int32_t>& counts, uint32_t d) {
  if (d >= counts.size()) counts.resize(d + 1, 0);
  ++counts[d];
}
}  // namespace

void FitChecker::Precomputed::AccountAffinityPod(const Pod& existing, NodeIndex i) {
  const auto& affinity_terms = pod->affinity.pod_affinity_required;
  const auto& anti_terms = pod->affinity.pod_anti_affinity_required;
  const std::string& ns = pod->meta.namespace_;
  if (!affinity_terms.empty() && MatchesAllTerms(affinity_terms, ns, existing)) {
    for (DomainCounts& dc : affinity) {
      uint32_t d = dc.topo->DomainOf(i);
      if (d == kNoDomain) continue;
      Bump(dc.counts, d);
      affinity_matched = true;
    }
  }
  for (size_t t = 0; t < anti_terms.size(); ++t) {
    DomainCounts& dc = anti_affinity[t];
    uint32_t d = dc.topo->DomainOf(i);
    if (d == kNoDomain || !TermMatches(anti_terms[t], ns, existing)) continue;
    Bump(dc.counts, d);
    anti_affinity_matched = true;
  }
}

void FitChecker::Precomputed::AccountExistingAntiPod(const Pod& existing, NodeIndex i) {
  if (!existing.has_required_anti_affinity) return;
  for (const auto& term : existing.affinity.pod_anti_affinity_required) {
    if (!TermMatches(term, existing.meta.namespace_, *pod)) continue;
    const TopologyIndex& topo = snapshot->Topology(term.topology_key);
    uint32_t d = topo.DomainOf(i);
    if (d == kNoDomain) continue;
    auto it = std::find_if(existing_anti.begin(), existing_anti.end(),
                           [&](const DomainCounts& dc) { return dc.topo == &topo; });
    if (it == existing_anti.end()) {
      existing_anti.push_back({&topo, std::vector<int32_t>(topo.DomainCount(), 0)});
      it = existing_anti.end() - 1;
    }
    Bump(it->counts, d);
  }
}

void FitChecker::Precomputed::ComputeAffinity() {
  auto init = [&](const PodAffinityTerm& t) {
    const TopologyIndex& topo = snapshot->Topology(t.topology_key);
    return DomainCounts{&topo, std::vector<int32_t>(topo.DomainCount(), 0)};
  };
  for (const auto& t : pod->affinity.pod_affinity_required) affinity.push_back(init(t));
  for (const auto& t : pod->affinity.pod_anti_affinity_required) anti_affinity.push_back(init(t));
  self_matches_affinity =
      MatchesAllTerms(pod->affinity.pod_affinity_required, pod->meta.namespace_, *pod);
  for (NodeIndex i = 0; i < snapshot->NodeSlots(); ++i) {
    const NodeInfo& info = snapshot->Get(i);
    if (info.removed) continue;
    for (const Pod* existing : info.pods) AccountAffinityPod(*existing, i);
  }
}

void FitChecker::Precomputed::ComputeExistingAntiAffinity() {
  for (NodeIndex i = 0; i < snapshot->NodeSlots(); ++i) {
    const NodeInfo& info = snapshot->Get(i);
    if (info.removed || info.pods_with_required_anti_affinity == 0) continue;
    for (const Pod* existing : info.pods) AccountExistingAntiPod(*existing, i);
  }
}

void FitChecker::Precomputed::AccountSpreadNode(NodeIndex i) {
  const NodeInfo& info = snapshot->Get(i);
  // A node counts only if it has every constraint's key.
  bool has_all_keys = std::all_of(spread.begin(), spread.end(), [&](const Spread& s) {
    return s.topo->DomainOf(i) != kNoDomain;
  });
  if (!has_all_keys) return;
  const Node& node = *info.node;
  bool affinity_ok = !spread_needs_affinity || MatchesAffinity(*pod, node);
  bool taints_ok = !spread_needs_taints ||
                   model::FindUntoleratedTaint(node.taints, pod->tolerations) == nullptr;
  for (Spread& s : spread) {
    if (s.constraint->node_affinity_policy == model::InclusionPolicy::kHonor && !affinity_ok) {
      continue;
    }
    if (s.constraint->node_taints_policy == model::InclusionPolicy::kHonor && !taints_ok) {
      continue;
    }
    uint32_t d = s.topo->DomainOf(i);
    if (d >= s.eligible.size()) {
      s.eligible.resize(d + 1, 0);
      s.counts.resize(d + 1, 0);
    }
    s.eligible[d] = 1;
  }
  for (const Pod* existing : info.pods) AccountSpreadPod(*existing, i);
}

void FitChecker::Precomputed::AccountSpreadPod(const Pod& existing, NodeIndex i) {
  // Terminating pods do not count (kube-scheduler skips a set deletionTimestamp).
  if (existing.meta.namespace_ != pod->meta.namespace_ || existing.meta.deletion_timestamp) return;
  for (Spread& s : spread) {
    if (!s.counts_pods) continue;
    uint32_t d = s.topo->DomainOf(i);
    if (d == kNoDomain || d >= s.eligible.size() || !s.eligible[d]) continue;
    if (s.selector.Matches(existing.meta.labels)) ++s.counts[d];
  }
}

void FitChecker::Precomputed::RecomputeSpreadMin() {
  for (Spread& s : spread) {
    s.domains = 0;
    s.min_count = 0;
    for (size_t d = 0; d < s.counts.size(); ++d) {
      if (!s.eligible[d]) continue;
      if (s.domains == 0 || s.counts[d] < s.min_count) s.min_count = s.counts[d];
      ++s.domains;
    }
  }
}

void FitChecker::Precomputed::ComputeSpread() {
  for (const auto& c : pod->topology_spread_constraints) {
    if (c.when_unsatisfiable != model::WhenUnsatisfiable::kDoNotSchedule) continue;
    Spread s;
    s.constraint = &c;
    s.topo = &snapshot->Topology(c.topology_key);
    s.selector = c.label_selector;
    if (c.has_label_selector) {
      // matchLabelKeys: AND the pod's own value of each key (keys it lacks are ignored).
      for (const auto& key : c.match_label_keys) {
        if (const std::string* v = FindLabel(pod->meta.labels, key)) {
          s.selector.match_expressions.push_back({key, model::SelectorOp::kIn, {*v}});
        }
      }
    }
    s.counts_pods = c.has_label_selector && !s.selector.IsEmpty();
    s.self_match = c.has_label_selector && s.selector.Matches(pod->meta.labels);
    s.min_domains = c.min_domains.value_or(1);
    s.counts.assign(s.topo->DomainCount(), 0);
    s.eligible.assign(s.topo->DomainCount(), 0);
    spread_needs_affinity |= c.node_affinity_policy == model::InclusionPolicy::kHonor;
    spread_needs_taints |= c.node_taints_policy == model::InclusionPolicy::kHonor;
    spread.push_back(std::move(s));
  }
  if (spread.empty()) return;
  for (NodeIndex i = 0; i < snapshot->NodeSlots(); ++i) {
    if (!snapshot->Get(i).removed) AccountSpreadNode(i);
  }
  RecomputeSpreadMin();
}

// PodTopologySpread: matching pods in the node's domain + self - global minimum <= maxSkew.
Verdict FitChecker::Precomputed::SpreadVerdict(const Target& t) const {
  for (const Spread& s : spread) {
    Domain d = Resolve(*s.topo, t);
    if (d.kind == Domain::Kind::kMissing) return Reject(FitCode::kTopologySpreadMissingLabel);
    // A node outside every eligible domain (a new node in a new domain) counts 0 pods. Were a
    // new node counted as an extra eligible domain, as kube-scheduler would once it exists, the
    // minimum would drop to 0 and its skew would be at most 1 <= maxSkew: it passes either way.
    int64_t count = 0;
    if (d.kind == Domain::Kind::kKnown && d.id < s.eligible.size() && s.eligible[d.id]) {
      count = s.counts[d.id];
    }
    // kube-scheduler skips a constraint whose topology key has no eligible domain at all.
    if (s.domains == 0) continue;
    int64_t min_count = s.domains < s.min_domains ? 0 : s.min_count;
    int64_t skew = count + (s.self_match ? 1 : 0) - min_count;
    if (skew > s.constraint->max_skew) return Reject(FitCode::kTopologySpread);
  }
  return {};
}

// InterPodAffinity: the pod's required affinity, its required anti-affinity, then placed pods'
// required anti-affinity against it.
Verdict FitChecker::Precomputed::InterPodVerdict(const Target& t) const {
  if (!affinity.empty()) {
    bool pods_exist = true;
    for (const DomainCounts& dc : affinity) {
      Domain d = Resolve(*dc.topo, t);
      if (d.kind == Domain::Kind::kMissing) {
        Verdict v = Reject(FitCode::kPodAffinity);
        v.affinity_unresolvable = true;
        return v;
      }
      if (dc.At(d) <= 0) pods_exist = false;
    }
    // The first pod of a group with affinity to itself may go anywhere with the keys.
    if (!pods_exist && (affinity_matched || !self_matches_affinity)) {
      Verdict v = Reject(FitCode::kPodAffinity);
      v.affinity_unresolvable = !affinity_matched;
      return v;
    }
  }
  if (anti_affinity_matched) {
    for (const DomainCounts& dc : anti_affinity) {
      if (dc.At(Resolve(*dc.topo, t)) > 0) return Reject(FitCode::kPodAntiAffinity);
    }
  }
  for (const DomainCounts& dc : existing_anti) {
    if (dc.At(Resolve(*dc.topo, t)) > 0) return Reject(FitCode::kExistingAntiAffinity);
  }
  return {};
}

// ---------------------------------------------------------------------------------------------

FitChecker::FitChecker(const Pod& pod, const ClusterSnapshot& snapshot)
    : pod_(&pod), snapshot_(&snapshot) {
  TIDEPOOL_CHECK_MSG(pod.requests.pods() > 0, "fit check of a pod without Finalize()");
  bool has_ports = false;
  ForEachHostPort(pod, [&](const model::ContainerPort&) { has_ports = true; });
  bool has_terms = !pod.affinity.pod_affinity_required.empty() ||
                   !pod.affinity.pod_anti_affinity_required.empty();
  bool existing_anti = snapshot.PodsWithRequiredAntiAffinity() > 0;
  bool has_spread =
      std::any_of(pod.topology_spread_constraints.begin(), pod.topology_spread_constraints.end(),
                  [](const auto& c) {
                    return c.when_unsatisfiable == model::WhenUnsatisfiable::kDoNotSchedule;
                  });
  if (!has_ports && !has_terms && !existing_anti && !has_spread) return;

  pre_ = std::make_unique<Precomputed>();
  pre_->pod = &pod;
  pre_->snapshot = &snapshot;
  if (has_ports) pre_->ComputePorts();
  if (has_spread) pre_->ComputeSpread();
  if (has_terms) pre_->ComputeAffinity();
  if (existing_anti) pre_->ComputeExistingAntiAffinity();
}

void FitChecker::OnNodeAdded(NodeIndex node) {
  const NodeInfo& info = snapshot_->Get(node);
  if (!pre_) {
    for (const Pod* p : info.pods) OnPodAdded(*p, node);
    return;
  }
  if (!pre_->spread.empty()) {
    pre_->AccountSpreadNode(node);  // also counts the pods already on it
    pre_->RecomputeSpreadMin();
  }
  for (const Pod* p : info.pods) {
    if (!pre_->affinity.empty() || !pre_->anti_affinity.empty()) pre_->AccountAffinityPod(*p, node);
    pre_->AccountExistingAntiPod(*p, node);
  }
}

void FitChecker::OnPodAdded(const Pod& placed, NodeIndex node) {
  if (!pre_) {
    // Only a placed pod whose anti-affinity selects this pod makes a precompute necessary.
    if (!placed.has_required_anti_affinity) return;
    pre_ = std::make_unique<Precomputed>();
    pre_->pod = pod_;
    pre_->snapshot = snapshot_;
  }
  if (!pre_->affinity.empty() || !pre_->anti_affinity.empty()) pre_->AccountAffinityPod(placed, node);
  pre_->AccountExistingAntiPod(placed, node);
  if (!pre_->spread.empty()) {
    pre_->AccountSpreadPod(placed, node);
    pre_->RecomputeSpreadMin();
  }
}

FitChecker::~FitChecker() = default;
FitChecker::FitChecker(FitChecker&&) noexcept = default;
FitChecker& FitChecker::operator=(FitChecker&&) noexcept = default;

FitResult FitChecker::Check(NodeIndex index) const {
  TIDEPOOL_CHECK(index < snapshot_->NodeSlots());
  const NodeInfo& info = snapshot_->Get(index);
  TIDEPOOL_CHECK_MSG(!info.removed, "fit check against a removed node");
  const Node& node = *info.node;
  // Each verdict is its own constant: reassigning one Verdict made g++ copy it through
  // overlapping stack moves that stall store forwarding on the hot path.
  const Verdict fixed = StaticVerdict(*pod_, node, info.unschedulable, info.has_taints);
  if (!fixed.fits()) return MakeFailure(fixed);
  if (pre_ && !pre_->ports.empty() && pre_->PortsConflict(info)) {
    return MakeFailure(Reject(FitCode::kNodePorts));
  }
  const Verdict resources =
      ResourcesVerdict(*pod_, info.allocatable, info.requested, info.requested.pods());
  if (!resources.fits()) return MakeFailure(resources);
  if (!pre_) return FitResult::Fit();
  const Target t{&node, index};
  const Verdict spread = pre_->SpreadVerdict(t);
  if (!spread.fits()) return MakeFailure(spread);
  return ToResult(pre_->InterPodVerdict(t));
}

FitResult FitChecker::CheckTemplate(const Node& node, const Resources& existing_requests,
                                    int existing_pods) const {
  const Verdict fixed = StaticVerdict(*pod_, node);
  if (!fixed.fits()) return MakeFailure(fixed);
  // A new node has no pods with host ports (DaemonSet pods' ports are not known here).
  const Verdict resources =
      ResourcesVerdict(*pod_, node.allocatable, existing_requests, existing_pods);
  if (!resources.fits()) return MakeFailure(resources);
  if (!pre_) return FitResult::Fit();
  const Target t{&node, kNoNode};
  const Verdict spread = pre_->SpreadVerdict(t);
  if (!spread.fits()) return MakeFailure(spread);
  return ToResult(pre_->InterPodVerdict(t));
}

FitResult Fits(const Pod& pod, NodeIndex node, const ClusterSnapshot& snapshot) {
  return FitChecker(pod, snapshot).Check(node);
}

}  // namespace tidepool::sched
