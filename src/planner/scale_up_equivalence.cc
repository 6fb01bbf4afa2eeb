// Equivalence keys: pods with the same key are planned as one group (fit checked once per pool).
#include <string>
#include <string_view>

#include "planner/equivalence.h"
#include "planner/scale_up_pass.h"

namespace tidepool::planner::scale_up_detail {
namespace {

// A compact, allocation-light serialization of the scheduling-relevant spec (no formatting).
class KeyWriter {
 public:
  KeyWriter() { key_.reserve(256); }
  void Str(std::string_view v) {
    Int(static_cast<int64_t>(v.size()));
    key_.append(v);
  }
  void Int(int64_t v) { key_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void Tag(char c) { key_.push_back(c); }
  void Selector(const model::LabelSelector& sel) {
    for (const auto& [k, v] : sel.match_labels) {
      Str(k);
      Str(v);
    }
    Requirements(sel.match_expressions);
  }
  void Requirements(const std::vector<model::SelectorRequirement>& reqs) {
    for (const auto& r : reqs) {
      Str(r.key);
      Int(static_cast<int>(r.op));
      for (const auto& v : r.values) Str(v);
      Tag(';');
    }
  }
  std::string Take() { return std::move(key_); }

 private:
  std::string key_;
};

// The owner, or for a pod without one every label (another pod's rules may select on any of
// them), then the namespace and the requests. Pods without an owner whose scheduling-relevant
// spec is equal share a group: equal specs schedule equally.
void WriteOwnerAndRequests(const Pod& p, KeyWriter& w) {
  if (const model::OwnerReference* c = p.meta.Controller()) {
    w.Tag('c');
    w.Str(c->uid);
    w.Str(c->name);
  } else {
    w.Tag('p');
    for (const auto& [k, v] : p.meta.labels) {
      w.Str(k);
      w.Str(v);
    }
  }
  w.Str(p.meta.namespace_);
  p.requests.ForEach([&](model::ResourceId id, int64_t v) {
    w.Int(id);
    w.Int(v);
  });
}

// What the pod asks of a node: node selector, tolerations, required node affinity.
void WriteNodeConstraints(const Pod& p, KeyWriter& w) {
  w.Tag('n');
  for (const auto& [k, v] : p.node_selector) {
    w.Str(k);
    w.Str(v);
  }
  w.Tag('t');
  for (const auto& t : p.tolerations) {
    w.Str(t.key);
    w.Int(static_cast<int>(t.op));
    w.Str(t.value);
    w.Int(t.effect ? static_cast<int>(*t.effect) : -1);
  }
  if (p.affinity().node_required) {
    for (const auto& term : p.affinity().node_required->terms) {
      w.Tag('a');
      w.Requirements(term.match_expressions);
      w.Tag('f');
      w.Requirements(term.match_fields);
    }
  }
}

// Required pod (anti-)affinity, topology spread and, as those rules may match the pod itself,
// its labels. Only for pods with such rules.
void WriteInterPodRules(const Pod& p, KeyWriter& w) {
  for (const auto* terms :
       {&p.affinity().pod_affinity_required, &p.affinity().pod_anti_affinity_required}) {
    w.Tag('P');
    for (const auto& t : *terms) {
      w.Str(t.topology_key);
      w.Selector(t.label_selector);
      for (const auto& n : t.namespaces) w.Str(n);
      w.Tag(t.namespace_selector ? 'S' : '-');
    }
  }
  for (const auto& c : p.topology_spread_constraints()) {
    w.Tag('s');
    w.Str(c.topology_key);
    w.Int(c.max_skew);
    w.Int(static_cast<int>(c.when_unsatisfiable));
    w.Int(c.min_domains.value_or(0));
    w.Int(static_cast<int>(c.node_affinity_policy));
    w.Int(static_cast<int>(c.node_taints_policy));
    w.Selector(c.label_selector);
    for (const auto& k : c.match_label_keys) w.Str(k);
  }
  w.Tag('l');
  for (const auto& [k, v] : p.meta.labels) {
    w.Str(k);
    w.Str(v);
  }
}

void WriteHostPorts(const Pod& p, KeyWriter& w) {
  for (const auto* list : {&p.init_containers(), &p.containers})
    for (const auto& c : *list)
      for (const auto& port : c.ports)
        if (port.host_port != 0) {
          w.Tag('h');
          w.Int(port.host_port);
          w.Str(port.protocol);
          w.Str(port.host_ip);
        }
}

}  // namespace
}  // namespace tidepool::planner::scale_up_detail

namespace tidepool::planner {

std::string EquivalenceKey(const model::Pod& p) {
  using namespace scale_up_detail;
  KeyWriter w;
  WriteOwnerAndRequests(p, w);
  WriteNodeConstraints(p, w);
  bool inter_pod = p.has_required_affinity || p.has_required_anti_affinity ||
                   !p.topology_spread_constraints().empty();
  if (inter_pod) WriteInterPodRules(p, w);
  WriteHostPorts(p, w);
  // Claims: pods naming the same claims or templates are interchangeable. A claim generated from
  // a template for one pod is not written: pending pods' generated claims are unallocated and
  // equal to their template's.
  for (const auto& c : p.resource_claims()) {
    w.Tag('r');
    w.Str(c.name);
    w.Str(c.claim_name);
    w.Str(c.template_name);
  }
  return w.Take();
}

std::string NodeConstraintsKey(const model::Pod& p) {
  scale_up_detail::KeyWriter w;
  scale_up_detail::WriteNodeConstraints(p, w);
  return w.Take();
}

}  // namespace tidepool::planner
