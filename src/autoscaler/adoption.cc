// RemovalTracker::Adopt: nodes found with the ToBeDeleted taint that the loop is not removing
// (a restart, a leader change, another autoscaler's leftovers) are resumed or untainted.
#include <fmt/format.h>

#include "autoscaler/planner_input.h"
#include "autoscaler/removal_tracker.h"
#include "planner/scale_down.h"

namespace tidepool::autoscaler {

using planner::kToBeDeletedTaint;

std::set<std::string_view> RemovalTracker::Orphans(const StepContext& ctx) const {
  std::set<std::string_view> orphans;
  for (std::string_view name : ctx.tainted) {
    if (removals_.contains(name) || deleted_.contains(name)) continue;
    // Untainted a moment ago and the observation does not show it yet.
    auto u = untainted_.find(name);
    if (u != untainted_.end() && ctx.now < u->second + options_.observe_grace) continue;
    orphans.insert(name);
  }
  return orphans;
}

void RemovalTracker::Adopt(StepContext& ctx) {
  std::set<std::string_view> orphans = Orphans(ctx);
  if (orphans.empty()) return;

  // Ask the planner whether each one would still go if it were not tainted: then resume its
  // removal, else take the taint off.
  planner::PlannerInput in = BuildPlannerInput(
      ctx, InputFor::kAdoption, [&](std::string_view n) { return Removing(n); }, &orphans);
  planner::ScaleDownOptions options;
  options.rate_limit = false;
  options.evict_training_pods = options_.evict_training_pods;
  options.may_remove = [&](const model::Node& n) {
    auto cd = cooldown_.find(n.name());
    return orphans.contains(n.name()) && (cd == cooldown_.end() || cd->second <= ctx.now);
  };
  // An orphan held back is one whose removal failed a moment ago: its Keep says so.
  options.not_yet_reason = [&](const model::Node& n) {
    return orphans.contains(n.name()) ? NotRemovableReason(ctx, n.name()) : std::string();
  };
  planner::ScaleDownPlan plan = planner::ScaleDownPlanner().Plan(in, options);

  std::set<std::string_view> resumed;
  for (const planner::ScaleDown& sd : plan.scale_downs) {
    if (!orphans.contains(sd.node)) continue;
    Resume(ctx, sd);
    resumed.insert(sd.node);  // the plan outlives this loop; a resumed removal may end at once
  }
  for (std::string_view name : orphans) {
    if (resumed.contains(name)) continue;
    std::string why = "no longer removable";
    for (const planner::Keep& k : plan.keep) {
      if (k.node == name) why = fmt::format("no longer removable: {}", k.Reason());
    }
    const model::Pool* pool = ctx.pool_of.at(name);
    untainted_[std::string(name)] = ctx.now;
    ctx.actions.push_back(UntaintNode{
        std::string(name), pool->name,
        fmt::format("found with the {} taint and not being removed: {}", kToBeDeletedTaint, why)});
  }
}

void RemovalTracker::Resume(StepContext& ctx, const planner::ScaleDown& sd) {
  Removal r = FromPlan(sd, ctx.now);
  r.taint_confirmed = true;
  Removal& stored = removals_[sd.node] = std::move(r);
  ctx.actions.push_back(
      Event{EventObject::kNode, sd.node, EventReason::kScaleDown,
            fmt::format("resuming the removal of the node found with the {} taint: {}, {}",
                        kToBeDeletedTaint, planner::RemovalKindName(sd.kind), sd.Detail()),
            false, sd.pool});
  last_scale_down_ = ScaleDownRecord{ctx.now, sd.node, sd.pool, "started", sd.Detail()};
  AdvanceOne(ctx, stored);
}

}  // namespace tidepool::autoscaler
