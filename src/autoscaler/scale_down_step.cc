// Autoscaler::RunScaleDown: the periodic scale-down pass, between the unneeded tracker (which
// nodes could go, and since when) and the removal tracker (which go now).
#include <algorithm>
#include <set>

#include "autoscaler/loop.h"
#include "autoscaler/planner_input.h"
#include "planner/disruption.h"
#include "planner/scale_down.h"
#include "planner/scale_down_memo.h"
#include "sched/cluster_model.h"

namespace tidepool::autoscaler {

void Autoscaler::RunScaleDown(StepContext& ctx, bool may_start) {
  if (!config_.scale_down.enabled) {
    unneeded_.Disable(ctx, removing_);
    return;
  }
  planner::PlannerInput in = BuildPlannerInput(ctx, InputFor::kScaleDown, removing_);
  in.scale_down_memo = &scale_down_memo_;
  // Backoffs: the replace move does not ask a pool whose scale-up failed for a node.
  pools_.FillPlannerInput(in, ctx.now, /*backoffs=*/true);
  // The model lists its Succeeded pods: the tracker reads the new ones, not every pod.
  if (ctx.obs.model != nullptr) {
    runtimes_.Observe(*ctx.obs.model, ctx.now);
  } else {
    runtimes_.Observe(ctx.obs.pods, ctx.now);
  }
  in.runtime_hints = &runtimes_.hints();
  std::map<std::string, std::string> warm_hosts = warm_.BindPlaceholders(ctx, in, removing_);

  planner::ScaleDownOptions all;
  all.rate_limit = false;
  all.evict_training_pods = options_.evict_training_pods;
  // A node waiting for a checkpoint is unneeded meanwhile, so it goes right after it.
  all.waiting_is_removable = true;
  // On a large cluster, the nodes found unneeded before and then the others in turn.
  all.turn.at_most = static_cast<size_t>(config_.scale_down.candidates_per_pass);
  all.turn.unneeded_before = [this](std::string_view n) { return unneeded_.Unneeded(n); };
  all.turn.after = unneeded_.turn_after();
  planner::ScaleDownPlan plan = planner::ScaleDownPlanner().Plan(in, all);
  UnneededPass pass;
  pass.turn_ends_at = std::move(plan.turn_ends_at);
  pass.turn_left_out = plan.turn_left_out;
  pass.kept = std::move(plan.keep);
  pass.weighed_training = std::any_of(pass.kept.begin(), pass.kept.end(),
                                      [](const auto& k) { return k.consolidation; }) ||
                          std::any_of(plan.scale_downs.begin(), plan.scale_downs.end(),
                                      [](const auto& sd) { return sd.consolidation; });
  for (planner::Keep& k : pass.kept) {
    if (auto it = warm_hosts.find(k.node); it != warm_hosts.end()) k.Say(it->second);
  }
  // A node waiting for its replacement is kept for that, and is not unneeded meanwhile.
  std::erase_if(pass.kept, [this](const planner::Keep& k) { return replacements_.Tied(k.node); });
  // The plan lists its Keeps in name order: only replacements' Keeps need sorting in.
  std::vector<planner::Keep> tied = replacements_.Kept(ctx.now);
  if (!tied.empty()) {
    for (planner::Keep& k : tied) pass.kept.push_back(std::move(k));
    std::sort(pass.kept.begin(), pass.kept.end(),
              [](const planner::Keep& a, const planner::Keep& b) { return a.node < b.node; });
  }
  for (planner::ScaleDown& sd : plan.scale_downs) {
    if (Removing(sd.node) || replacements_.Tied(sd.node)) continue;
    const std::optional<planner::ConsolidationVerdict>& v = sd.consolidation;
    if (v && v->decision == planner::ConsolidationDecision::kWaitForCheckpoint) {
      Time at = planner::WeighTime(ctx.now) + v->wait;  // the time it was weighed at, + wait
      pass.waiting.emplace(sd.node, CheckpointWait{v->waiting_for, at});
    }
    pass.nodes.insert(std::move(sd.node));
  }
  unneeded_.Update(ctx, std::move(pass), removing_);
  if (may_start) StartRipeRemovals(ctx, in);
}

void Autoscaler::StartRipeRemovals(StepContext& ctx, const planner::PlannerInput& in) {
  // A removal started for a replaced node is not in `in`: plan the others at the next pass.
  if (FinishReplacements(ctx, in)) return;
  std::set<std::string, std::less<>> ripe;
  for (std::string& name : unneeded_.Ripe(ctx.now)) {
    if (removals_.NotRemovableReason(ctx, name).empty()) ripe.insert(std::move(name));
  }
  if (ripe.empty()) return;
  planner::ScaleDownOptions options;
  options.rate_limit = true;
  options.evict_training_pods = options_.evict_training_pods;
  options.may_remove = [&](const model::Node& n) { return ripe.contains(n.name()); };
  options.not_yet_reason = [&](const model::Node& n) {
    std::string why = removals_.NotRemovableReason(ctx, n.name());
    return why.empty() ? unneeded_.NotYetReason(n.name(), ctx.now) : why;
  };
  planner::ScaleDownPlan plan = planner::ScaleDownPlanner().Plan(in, options);

  // Non-empty drains per pool, counting the ones still running from earlier passes.
  std::map<std::string, int> draining = removals_.DrainsPerPool();
  for (const planner::ScaleDown& sd : plan.scale_downs) {
    if (replacements_.Tied(sd.node)) continue;  // started with its group
    // One new node for several: all of them start, or none.
    std::vector<const planner::ScaleDown*> members = {&sd};
    if (!sd.replacement_group.empty()) {
      members.clear();
      for (const planner::ScaleDown& other : plan.scale_downs)
        if (other.replacement_group == sd.replacement_group) members.push_back(&other);
    }
    // A group is one move: it counts once in each pool it drains.
    std::set<std::string> pools;
    for (const planner::ScaleDown* m : members)
      if (planner::Drains(m->kind)) pools.insert(m->pool);
    if (std::any_of(pools.begin(), pools.end(), [&](const std::string& p) {
          return draining[p] >= config_.scale_down.max_non_empty_per_pool;
        })) {
      continue;
    }
    for (const std::string& p : pools) ++draining[p];
    if (sd.replacement_pool.empty()) {
      removals_.Start(ctx, sd);
    } else {
      replacements_.Start(ctx, members);  // nothing is evicted before the new node is Ready
    }
  }
}

bool Autoscaler::FinishReplacements(StepContext& ctx, const planner::PlannerInput& in) {
  // Planned again with the new nodes in the cluster (the old plans are not trusted), all in one
  // pass: two nodes planned apart could each count on room the other's pods take.
  std::vector<std::string> ready;
  for (const std::string& name : replacements_.Ready()) {
    if (std::string why = removals_.NotRemovableReason(ctx, name); !why.empty()) {
      replacements_.Drop(ctx, name, why);
      continue;
    }
    ready.push_back(name);
  }
  if (ready.empty()) return false;
  planner::ScaleDownOptions options;
  options.rate_limit = false;
  options.evict_training_pods = options_.evict_training_pods;
  options.may_remove = [&](const model::Node& n) {
    return std::find(ready.begin(), ready.end(), n.name()) != ready.end();
  };
  options.replacement_ready = ready;
  for (const std::string& name : ready)
    if (replacements_.Grouped(name)) options.replacement_group_ready.push_back(name);
  planner::ScaleDownPlan plan = planner::ScaleDownPlanner().Plan(in, options);
  bool started = false;
  for (const std::string& name : ready) {
    auto sd = std::find_if(plan.scale_downs.begin(), plan.scale_downs.end(),
                           [&](const planner::ScaleDown& s) { return s.node == name; });
    if (sd != plan.scale_downs.end() && sd->replacement_pool.empty()) {
      replacements_.Complete(name);
      removals_.Start(ctx, *sd);
      started = true;
      continue;
    }
    std::string why = "its pods no longer fit on the nodes that stay";
    bool wait = false;
    for (const planner::Keep& k : plan.keep) {
      if (k.node != name) continue;
      why = "the new plan keeps it: " + k.Reason();
      // Evicting right after a near checkpoint pays more: the new node waits with it.
      wait = k.consolidation &&
             k.consolidation->decision == planner::ConsolidationDecision::kWaitForCheckpoint;
    }
    if (!wait) replacements_.Drop(ctx, name, why);
  }
  return started;
}

}  // namespace tidepool::autoscaler
