// Reasons in a scale-up pass: each pool's verdict on a pod that gets no node, and `explain`'s
// view of one pod.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "planner/explain.h"
#include "planner/scale_up_pass.h"

namespace tidepool::planner {
namespace scale_up_detail {

PoolReason PoolState::BackoffReason() const {
  return {ReasonKind::kBackoff,
          fmt::format("pool {} in backoff until {}", pool->name, FormatRfc3339(*backoff_until))};
}

void Pass::RecordStaticReasons(const std::vector<const Pod*>& pods) {
  for (const Pod* pod : pods) {
    FlushFamilyNotes(*pod);
    for (const PoolState& ps : pools_) {
      PoolReason& slot = reasons_[pod->Key()][ps.pool->name];
      if (ps.backoff_until) {
        slot = ps.BackoffReason();
        continue;
      }
      sched::FitResult r = TemplateFit(*pod, ps);
      if (!r.fits()) slot = FromFit(r);
    }
  }
}

void Pass::NoteFamilyReason(const Pod& pod, const Family& family, const PoolReason& why) {
  auto& notes = family_note_[&pod];
  auto last =
      std::find_if(notes.begin(), notes.end(), [&](const auto& n) { return n.first == &family; });
  if (last == notes.end()) {
    notes.emplace_back(&family, why);
  } else if (!(last->second == why)) {
    // Written after every other pending note of the pod, as if it had been noted last.
    notes.erase(last);
    notes.emplace_back(&family, why);
  }
}

void Pass::FlushFamilyNotes(const Pod& pod) {
  auto it = family_note_.find(&pod);
  if (it == family_note_.end()) return;
  auto& per_pool = reasons_[pod.Key()];
  for (const auto& [family, why] : it->second)
    for (size_t i : family->members) per_pool[pools_[i].pool->name] = why;
  family_note_.erase(it);
}

}  // namespace scale_up_detail

namespace {

// Why a pod that is not pending for scale-up is not considered.
std::string NotPendingReason(const model::Pod& pod, const model::AutoscalerConfig& cfg) {
  if (!pod.node_name.empty()) return fmt::format("bound to node {}", pod.node_name);
  if (pod.IsTerminal()) return "finished (phase Succeeded or Failed)";
  if (pod.SchedulingGated()) {
    return fmt::format(
        "held by its scheduling gates ({}): kube-scheduler does not try it until they are "
        "removed (a queue such as Kueue removes its gate when it admits the pod)",
        fmt::join(pod.scheduling_gates(), ", "));
  }
  if (pod.meta.deletion_timestamp) return "being deleted";
  if (pod.IsDaemonSetPod() || pod.IsMirrorPod()) {
    return "a DaemonSet or mirror pod (its node brings it)";
  }
  return fmt::format(
      "priority {} is below scaleUp.expendablePriorityCutoff {}: expendable pods never "
      "trigger a scale-up",
      pod.PriorityOrZero(), cfg.scale_up.expendable_priority_cutoff);
}

}  // namespace

PodExplanation ScaleUpPlanner::Explain(const PlannerInput& input, std::string_view pod_key) const {
  PodExplanation ex;
  ex.pod = std::string(pod_key);
  const model::Pod* pod = nullptr;
  for (const model::Pod* p : input.pods)
    if (p->Key() == pod_key) pod = p;
  if (pod == nullptr) return ex;
  ex.found = true;
  const auto& cfg = *input.config;
  if (!IsPendingForScaleUp(*pod, cfg.scale_up.expendable_priority_cutoff)) {
    ex.not_pending_reason = NotPendingReason(*pod, cfg);
    return ex;
  }
  ex.pending = true;
  scale_up_detail::Pass pass(input, ex.pod);
  pass.Run();
  ex.fits_node = pass.FitsNodeOf(ex.pod);
  ex.scale_up_pool = pass.PoolFor(ex.pod);
  const auto* reasons = pass.ReasonsFor(ex.pod);
  for (const model::Pool& p : cfg.pools) {
    const PoolReason* r = nullptr;
    if (reasons) {
      auto it = reasons->find(p.name);
      if (it != reasons->end() && !it->second.text.empty()) r = &it->second;
    }
    ex.pools[p.name] = r ? ExplainReason(*pod, p, *r) : "fits the template";
  }
  return ex;
}

}  // namespace tidepool::planner
