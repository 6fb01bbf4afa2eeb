// Warm placeholders: planned after every real pod, on the room left, else on new nodes of
// their pool; what cannot be placed is reported per pool (ScaleUpPlan::warm_unmet).
#include <fmt/format.h>

#include <algorithm>

#include "planner/scale_up_pass.h"

namespace tidepool::planner::scale_up_detail {

NodeIndex Pass::FindWarmRoom(const Pod& pod,
                             const std::unordered_set<const Pod*>& daemon_set_pods) {
  const std::string* pool_name = pod.meta.Annotation(kWarmPoolAnnotation);
  if (pool_name == nullptr) return sched::kNoNode;
  const std::string* whole_value = pod.meta.Annotation(kWarmWholeNodeAnnotation);
  const bool whole = whole_value != nullptr && *whole_value == "true";
  for (size_t rank = 0; rank < Ranks(); ++rank) {
    const NodeIndex i = SlotAt(rank);
    const sched::NodeInfo& info = snap_.Get(i);
    if (info.removed || info.unschedulable) continue;
    const Pool* pool = PoolOf(*info.node, in_, pool_names_);
    if (pool == nullptr || pool->name != *pool_name) continue;
    if (model::FindUntoleratedTaint(info.node->taints, pod.tolerations) != nullptr) continue;
    if (whole) {
      // Idle: nothing placed but what every node runs.
      bool idle = std::all_of(info.pods.begin(), info.pods.end(), [&](const Pod* p) {
        return p->IsDaemonSetPod() || p->IsMirrorPod() || daemon_set_pods.contains(p);
      });
      if (idle) return i;
    } else if (sched::CheckResources(pod, info.allocatable, info.requested).fits()) {
      return i;
    }
  }
  return sched::kNoNode;
}

void Pass::PlanWarm(ScaleUpPlan& plan, std::map<std::string, ScaleUp>& ups) {
  std::vector<const Pod*> need;
  const std::unordered_set<const Pod*> daemon_set_pods = DaemonSetPods();
  for (const Pod* p : in_.placeholders) {
    NodeIndex i = FindWarmRoom(*p, daemon_set_pods);
    if (i == sched::kNoNode) {
      need.push_back(p);
    } else {
      // A whole-node placeholder takes the node whatever its exact size.
      (void)snap_.AddPod(p, i);
      no_fit_groups_.clear();
    }
  }
  SortForPacking(need);
  std::map<std::string, ScaleUp> warm_ups;
  while (!need.empty() && GrowOnce(need, warm_ups)) {
  }
  for (auto& [pool, up] : warm_ups) {
    ScaleUp& dst = ups[pool];
    dst.pool = pool;
    dst.add += up.add;
    dst.warm_add += up.add;
    if (dst.reason.empty()) dst.reason = up.reason;
  }
  NoteWarmUnmet(need, plan);
}

void Pass::NoteWarmUnmet(const std::vector<const Pod*>& need, ScaleUpPlan& plan) {
  for (const Pod* p : need) {
    const std::string& pool = *p->meta.Annotation(kWarmPoolAnnotation);
    if (plan.warm_unmet.contains(pool)) continue;
    FlushFamilyNotes(*p);
    std::string why = reasons_[p->Key()][pool].text;
    for (const PoolState& ps : pools_) {
      if (ps.pool->name != pool) continue;
      if (ps.backoff_until) {
        why = ps.BackoffReason().text;
      } else if (why.empty()) {
        if (auto limit = LimitReason(ps, 0, Resources())) why = std::move(limit->text);
      }
    }
    plan.warm_unmet[pool] = why.empty() ? "no room for it in this pass" : why;
  }
}

}  // namespace tidepool::planner::scale_up_detail
