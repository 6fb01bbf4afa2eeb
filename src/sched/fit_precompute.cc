// The precomputed state of FitChecker (kube-scheduler's PreFilter for NodePorts,
// PodTopologySpread and InterPodAffinity), computed once and updated as nodes and pods are added.
#include <algorithm>

#include "sched/fit_detail.h"

namespace tidepool::sched {
namespace {

using fit_detail::DomainCounts;
using fit_detail::FindLabel;
using fit_detail::ForEachHostPort;
using fit_detail::HostPort;
using fit_detail::kNoDomain;
using fit_detail::LabelMatch;
using fit_detail::MatchesAffinity;
using fit_detail::SanitizedIp;
using fit_detail::SanitizedProtocol;
using fit_detail::Spread;
using model::Node;
using model::Pod;
using model::PodAffinityTerm;

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

// The one namespace a term selects pods in, or null when it selects several (a list, or a
// namespace selector).
const std::string* TermNamespace(const PodAffinityTerm& term, const std::string& owner_ns) {
  if (term.namespace_selector) return nullptr;
  if (term.namespaces.empty()) return &owner_ns;
  return term.namespaces.size() == 1 ? &term.namespaces.front() : nullptr;
}

bool MatchesAllTerms(const std::vector<PodAffinityTerm>& terms, std::string_view owner_ns,
                     const Pod& target) {
  if (terms.empty()) return false;
  for (const auto& t : terms)
    if (!TermMatches(t, owner_ns, target)) return false;
  return true;
}

// Increments a per-domain count, growing the table for domains that appeared after it was
// sized (new nodes added to the snapshot since).
void Bump(std::vector<int32_t>& counts, uint32_t d, int32_t n = 1) {
  if (d >= counts.size()) counts.resize(d + 1, 0);
  counts[d] += n;
}

}  // namespace

namespace fit_detail {

LabelMatch MatchByLabel(const ClusterSnapshot& snapshot, std::string_view ns,
                        const model::LabelSelector& selector, bool terminating) {
  LabelMatch m;
  m.terminating = terminating;
  std::string_view key;
  if (selector.match_labels.size() == 1 && selector.match_expressions.empty()) {
    key = selector.match_labels.begin()->first;
    m.values = {selector.match_labels.begin()->second};
  } else if (selector.match_labels.empty() && selector.match_expressions.size() == 1 &&
             selector.match_expressions.front().op == model::SelectorOp::kIn) {
    key = selector.match_expressions.front().key;
    m.values = selector.match_expressions.front().values;
  } else {
    return m;
  }
  m.labels = &snapshot.Labels(ns, key);
  return m;
}

void LabelMatch::Resolve() {
  if (seen == labels->ValueCount()) return;
  seen = labels->ValueCount();
  ids.clear();
  for (const std::string& v : values) {
    uint32_t id = labels->Find(v);
    if (id != LabelCounts::kNoValue && std::find(ids.begin(), ids.end(), id) == ids.end())
      ids.push_back(id);
  }
}

int32_t LabelMatch::Pods(NodeIndex node) {
  Resolve();
  int32_t n = 0;
  for (uint32_t id : ids) n += labels->Count(node, id, terminating);
  return n;
}

}  // namespace fit_detail

void FitChecker::Precomputed::AccountAffinityPod(const Pod& existing, NodeIndex i,
                                                 bool indexed_too) {
  const auto& affinity_terms = pod->affinity().pod_affinity_required;
  const auto& anti_terms = pod->affinity().pod_anti_affinity_required;
  const std::string& ns = pod->meta.namespace_;
  if (!affinity_terms.empty() && (indexed_too || !affinity_match.indexed()) &&
      MatchesAllTerms(affinity_terms, ns, existing)) {
    for (DomainCounts& dc : affinity) {
      uint32_t d = dc.topo->DomainOf(i);
      if (d == kNoDomain) continue;
      Bump(dc.counts, d);
      affinity_matched = true;
    }
  }
  for (size_t t = 0; t < anti_terms.size(); ++t) {
    if (!indexed_too && anti_match[t].indexed()) continue;
    DomainCounts& dc = anti_affinity[t];
    uint32_t d = dc.topo->DomainOf(i);
    if (d == kNoDomain || !TermMatches(anti_terms[t], ns, existing)) continue;
    Bump(dc.counts, d);
    anti_affinity_matched = true;
  }
}

void FitChecker::Precomputed::AccountExistingAntiPod(const Pod& existing, NodeIndex i) {
  if (!existing.has_required_anti_affinity) return;
  const auto& terms = existing.affinity().pod_anti_affinity_required;
  for (size_t t = 0; t < terms.size(); ++t) AccountExistingAntiTerm(existing, t, i);
}

void FitChecker::Precomputed::AccountExistingAntiTerm(const Pod& existing, size_t t, NodeIndex i) {
  const PodAffinityTerm& term = existing.affinity().pod_anti_affinity_required[t];
  if (!TermMatches(term, existing.meta.namespace_, *pod)) return;
  const TopologyIndex& topo = snapshot->Topology(term.topology_key);
  uint32_t d = topo.DomainOf(i);
  if (d == kNoDomain) return;
  auto it = std::find_if(existing_anti.begin(), existing_anti.end(),
                         [&](const DomainCounts& dc) { return dc.topo == &topo; });
  if (it == existing_anti.end()) {
    existing_anti.push_back({&topo, std::vector<int32_t>(topo.DomainCount(), 0)});
    it = existing_anti.end() - 1;
  }
  Bump(it->counts, d);
}

void FitChecker::Precomputed::ComputeAffinity() {
  auto init = [&](const PodAffinityTerm& t) {
    const TopologyIndex& topo = snapshot->Topology(t.topology_key);
    return DomainCounts{&topo, std::vector<int32_t>(topo.DomainCount(), 0)};
  };
  for (const auto& t : pod->affinity().pod_affinity_required) affinity.push_back(init(t));
  for (const auto& t : pod->affinity().pod_anti_affinity_required) anti_affinity.push_back(init(t));
  const std::string& ns = pod->meta.namespace_;
  self_matches_affinity = MatchesAllTerms(pod->affinity().pod_affinity_required, ns, *pod);
  auto match = [&](const PodAffinityTerm& t) {
    const std::string* term_ns = TermNamespace(t, ns);
    return t.has_label_selector && term_ns != nullptr
               ? fit_detail::MatchByLabel(*snapshot, *term_ns, t.label_selector, true)
               : LabelMatch{};
  };
  if (pod->affinity().pod_affinity_required.size() == 1)
    affinity_match = match(pod->affinity().pod_affinity_required.front());
  for (const auto& t : pod->affinity().pod_anti_affinity_required) anti_match.push_back(match(t));
  bool scan = (!pod->affinity().pod_affinity_required.empty() && !affinity_match.indexed()) ||
              std::any_of(anti_match.begin(), anti_match.end(),
                          [](const LabelMatch& m) { return !m.indexed(); });
  CountIndexedAffinity();
  if (!scan) return;
  for (NodeIndex i = 0; i < snapshot->NodeSlots(); ++i) {
    const NodeInfo& info = snapshot->Get(i);
    if (info.removed) continue;
    for (const Pod* existing : info.pods) AccountAffinityPod(*existing, i, false);
  }
}

void FitChecker::Precomputed::CountIndexedAffinity() {
  // The matching pods of the live nodes that carry the term's values, added to their domains;
  // true when there were any.
  auto account = [&](LabelMatch& m, DomainCounts& dc) {
    bool any = false;
    m.ForEachNode([&](NodeIndex i, int32_t pods) {
      uint32_t d = dc.topo->DomainOf(i);
      if (pods <= 0 || d == kNoDomain || snapshot->Get(i).removed) return;
      Bump(dc.counts, d, pods);
      any = true;
    });
    return any;
  };
  if (affinity_match.indexed() && account(affinity_match, affinity.front()))
    affinity_matched = true;
  for (size_t t = 0; t < anti_match.size(); ++t) {
    if (anti_match[t].indexed() && account(anti_match[t], anti_affinity[t]))
      anti_affinity_matched = true;
  }
}

void FitChecker::Precomputed::ComputeExistingAntiAffinity() {
  // Only the terms filed under one of the pod's labels can select it.
  snapshot->AntiAffinity().ForEachCandidate(*pod, [&](const AntiAffinityIndex::Entry& e) {
    AccountExistingAntiTerm(*e.owner, e.term, e.node);
  });
}

void FitChecker::Precomputed::AccountSpreadNode(NodeIndex i, bool count_indexed) {
  const NodeInfo& info = snapshot->Get(i);
  // A node counts only if it has every constraint's key.
  bool has_all_keys = std::all_of(spread.begin(), spread.end(), [&](const Spread& s) {
    return s.topo->DomainOf(i) != kNoDomain;
  });
  if (!has_all_keys) return;
  const Node& node = *info.node;
  bool affinity_ok = !spread_needs_affinity || MatchesAffinity(*pod, node);
  bool taints_ok =
      !spread_needs_taints || model::FindUntoleratedTaint(node.taints, pod->tolerations) == nullptr;
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
    if (s.by_topology) continue;
    if (i >= s.included.size()) s.included.resize(i + 1, 0);
    s.included[i] = 1;
  }
  for (Spread& s : spread) {
    if (!s.match.indexed() || !count_indexed || !s.Included(i)) continue;
    s.counts[s.topo->DomainOf(i)] += s.match.Pods(i);
  }
  if (std::any_of(spread.begin(), spread.end(),
                  [](const Spread& s) { return s.counts_pods && !s.match.indexed(); })) {
    for (const Pod* existing : info.pods) AccountSpreadPod(*existing, i, /*indexed_too=*/false);
  }
}

void FitChecker::Precomputed::AccountSpreadPod(const Pod& existing, NodeIndex i, bool indexed_too) {
  // Terminating pods do not count (kube-scheduler skips a set deletionTimestamp).
  if (existing.meta.namespace_ != pod->meta.namespace_ || existing.meta.deletion_timestamp) return;
  for (Spread& s : spread) {
    if (!s.counts_pods || (s.match.indexed() && !indexed_too) || !s.Included(i)) continue;
    if (s.selector.Matches(existing.meta.labels)) ++s.counts[s.topo->DomainOf(i)];
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
    // An offered domain without an eligible node is one more domain, with no matching pods.
    for (const std::string& value : s.offered) {
      uint32_t d = s.topo->Find(value);
      if (d != kNoDomain && d < s.eligible.size() && s.eligible[d]) continue;
      s.min_count = 0;
      ++s.domains;
    }
    int64_t floor = s.domains == 0 ? INT64_MAX : s.domains < s.min_domains ? 0 : s.min_count;
    if (floor > s.floor) ++loosened;
    s.floor = floor;
  }
}

bool FitChecker::Precomputed::OfferDomain(const Node& node) {
  // kube-scheduler counts a node only when it has every constraint's key.
  for (const Spread& s : spread) {
    if (s.topo->key() != model::kLabelHostname &&
        FindLabel(node.labels(), s.topo->key()) == nullptr)
      return false;
  }
  bool affinity_ok = !spread_needs_affinity || MatchesAffinity(*pod, node);
  bool taints_ok =
      !spread_needs_taints || model::FindUntoleratedTaint(node.taints, pod->tolerations) == nullptr;
  bool changed = false;
  for (Spread& s : spread) {
    // A new node is a new hostname domain anyway (fit_detail::Resolve).
    if (s.topo->key() == model::kLabelHostname) continue;
    if (s.constraint->node_affinity_policy == model::InclusionPolicy::kHonor && !affinity_ok) {
      continue;
    }
    if (s.constraint->node_taints_policy == model::InclusionPolicy::kHonor && !taints_ok) {
      continue;
    }
    const std::string& value = *FindLabel(node.labels(), s.topo->key());
    if (std::find(s.offered.begin(), s.offered.end(), value) != s.offered.end()) continue;
    s.offered.push_back(value);
    changed = true;
  }
  return changed;
}

bool FitChecker::Precomputed::InclusionByTopology() const {
  // A node counts when it has every constraint's key: with one key, when it has a domain.
  for (const Spread& s : spread) {
    if (s.topo != spread.front().topo) return false;
    // Pods counted one by one need the visit of every node's pods anyway.
    if (s.counts_pods && !s.match.indexed()) return false;
  }
  // nodeTaintsPolicy Honor depends on each node's taints; nodeAffinityPolicy Honor passes every
  // node for a pod without a nodeSelector or required node affinity (MatchesAffinity).
  if (spread_needs_taints) return false;
  return !spread_needs_affinity ||
         (pod->node_selector.empty() && !pod->affinity().node_required.has_value());
}

void FitChecker::Precomputed::ComputeSpread() {
  for (const auto& c : pod->topology_spread_constraints()) {
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
    if (s.counts_pods)
      s.match = fit_detail::MatchByLabel(*snapshot, pod->meta.namespace_, s.selector, false);
    s.self_match = c.has_label_selector && s.selector.Matches(pod->meta.labels);
    s.min_domains = c.min_domains.value_or(1);
    s.counts.assign(s.topo->DomainCount(), 0);
    s.eligible.assign(s.topo->DomainCount(), 0);
    spread_needs_affinity |= c.node_affinity_policy == model::InclusionPolicy::kHonor;
    spread_needs_taints |= c.node_taints_policy == model::InclusionPolicy::kHonor;
    spread.push_back(std::move(s));
  }
  if (spread.empty()) return;
  if (InclusionByTopology()) {
    // What the visit below would find, from the domains' live nodes.
    for (Spread& s : spread) {
      s.by_topology = true;
      for (uint32_t d = 0; d < s.eligible.size(); ++d) s.eligible[d] = s.topo->LiveNodes(d) > 0;
    }
  } else {
    for (Spread& s : spread) s.included.assign(snapshot->NodeSlots(), 0);
    for (NodeIndex i = 0; i < snapshot->NodeSlots(); ++i) {
      if (!snapshot->Get(i).removed) AccountSpreadNode(i, /*count_indexed=*/false);
    }
  }
  // The indexed constraints' counts, from the nodes that carry the selector's values.
  for (Spread& s : spread) {
    if (!s.match.indexed()) continue;
    s.match.ForEachNode([&](NodeIndex i, int32_t pods) {
      if (s.Included(i) && !snapshot->Get(i).removed) s.counts[s.topo->DomainOf(i)] += pods;
    });
  }
  RecomputeSpreadMin();
}

void FitChecker::Precomputed::ComputePorts() {
  ForEachHostPort(*pod, [&](const model::ContainerPort& p) {
    ports.push_back({SanitizedIp(p.host_ip), SanitizedProtocol(p.protocol), p.host_port});
  });
}

}  // namespace tidepool::sched
