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

bool MatchesAllTerms(const std::vector<PodAffinityTerm>& terms, std::string_view owner_ns,
                     const Pod& target) {
  if (terms.empty()) return false;
  for (const auto& t : terms)
    if (!TermMatches(t, owner_ns, target)) return false;
  return true;
}

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
    // An offered domain without an eligible node is one more domain, with no matching pods.
    for (const std::string& value : s.offered) {
      uint32_t d = s.topo->Find(value);
      if (d != kNoDomain && d < s.eligible.size() && s.eligible[d]) continue;
      s.min_count = 0;
      ++s.domains;
    }
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

void FitChecker::Precomputed::ComputePorts() {
  ForEachHostPort(*pod, [&](const model::ContainerPort& p) {
    ports.push_back({SanitizedIp(p.host_ip), SanitizedProtocol(p.protocol), p.host_port});
  });
}

}  // namespace tidepool::sched
