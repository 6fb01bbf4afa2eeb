#include "planner/scale_down_placer.h"

#include <fmt/format.h>

#include <map>

#include "planner/cluster.h"
#include "planner/disruption.h"
#include "planner/scale_down_rules.h"

namespace tidepool::planner::scale_down_detail {
namespace {

bool HasTaint(const model::Node& node, std::string_view key) {
  for (const model::Taint& t : node.taints)
    if (t.key == key) return true;
  return false;
}

bool AnnotatedTrue(const model::Node& node, std::string_view key) {
  const std::string* v = node.meta.Annotation(key);
  return v != nullptr && *v == "true";
}

}  // namespace

NodeFacts NodeFacts::Of(const model::Node& node) {
  NodeFacts f;
  f.name = node.name();
  f.being_deleted = HasTaint(node, kToBeDeletedTaint);
  f.destination = node.ready && !node.unschedulable && !f.being_deleted;
  for (std::string_view key : {kCaScaleDownDisabledAnnotation, kScaleDownDisabledAnnotation}) {
    if (AnnotatedTrue(node, key)) {
      f.disabled_by = key;
      break;
    }
  }
  f.created = node.meta.creation_timestamp;
  const model::Resources& a = node.allocatable;
  f.cpu = a.cpu_milli();
  f.memory = a.memory();
  f.pods = a.pods();
  f.gpus = a.gpus();
  return f;
}

void PodFacts::ResolveEviction() {
  if (eviction_resolved) return;
  eviction_resolved = true;
  eviction_rules = MayBlockEviction(*pod);
  weighable = ConsolidationWeighs(*pod);
}

std::string Placer::Diagnose(PodFacts& f) {
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

}  // namespace tidepool::planner::scale_down_detail
