#include "planner/scale_down.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/check.h"
#include "planner/disruption.h"
#include "planner/model_fork.h"
#include "planner/plan_json.h"
#include "planner/scale_down_run.h"

namespace tidepool::planner {
namespace {

using scale_down_detail::kDisabledInConfig;
using scale_down_detail::kNoNode;
using scale_down_detail::NodeEntry;
using scale_down_detail::NodeIndex;
using scale_down_detail::PassOptions;
using scale_down_detail::PassResult;
using scale_down_detail::ScaleDownRun;

// Managed node names in name order (first of duplicates), for the disabled-in-config answer.
std::vector<std::string> ManagedNodeNames(const PlannerInput& input) {
  std::vector<std::string> names;
  for (const model::Node* n : input.nodes)
    if (PoolOf(*n, input) != nullptr) names.push_back(n->name());
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

}  // namespace

ScaleDownPlan ScaleDownPlanner::Plan(const PlannerInput& input, const ScaleDownOptions& options,
                                     std::vector<std::string>* out_unneeded) const {
  if (!VerifyingModel(input)) return PlanOnce(input, options, out_unneeded);
  CheckUnbound(input);
  PlannerInput built = input;
  built.model = nullptr;
  std::vector<std::string> unneeded_built;
  ScaleDownPlan want = PlanOnce(built, options, out_unneeded ? &unneeded_built : nullptr);
  ScaleDownPlan got = PlanOnce(input, options, out_unneeded);
  // The plan, and with it the nodes found unneeded when asked for.
  auto render = [](const ScaleDownPlan& plan, const std::vector<std::string>* unneeded) {
    return fmt::format("{}\nunneeded: {}", PlanToJson({}, plan).dump(1),
                       unneeded ? fmt::format("{}", fmt::join(*unneeded, " ")) : "-");
  };
  CheckSamePlan("scale-down", render(got, out_unneeded),
                render(want, out_unneeded ? &unneeded_built : nullptr));
  return got;
}

ScaleDownPlan ScaleDownPlanner::PlanOnce(const PlannerInput& input, const ScaleDownOptions& options,
                                         std::vector<std::string>* out_unneeded) const {
  TIDEPOOL_CHECK(input.config != nullptr);
  if (out_unneeded) out_unneeded->clear();
  ScaleDownPlan plan;
  if (!input.config->scale_down.enabled) {
    for (std::string& name : ManagedNodeNames(input)) {
      plan.keep.push_back({std::move(name), std::string(kDisabledInConfig)});
    }
    return plan;
  }
  ScaleDownRun run(input, {.evict_training_pods = options.evict_training_pods,
                           .turn = &options.turn,
                           .pods_when_reached = static_cast<bool>(options.may_remove)});
  bool second_pass = out_unneeded && (options.rate_limit || options.may_remove);
  PassOptions pass;
  pass.rate_limit = options.rate_limit;
  pass.may_remove = &options.may_remove;
  pass.not_yet_reason = &options.not_yet_reason;
  pass.replacement_ready = &options.replacement_ready;
  pass.replacement_group_ready = &options.replacement_group_ready;
  pass.waiting_is_removable = options.waiting_is_removable;
  pass.restore = second_pass;
  plan = std::move(run.RunPass(pass).plan);
  plan.turn_ends_at = run.turn_ends_at();
  plan.turn_left_out = run.turn_left_out();
  if (out_unneeded) {
    if (!second_pass) {
      for (const ScaleDown& sd : plan.scale_downs) out_unneeded->push_back(sd.node);
    } else {
      PassOptions all;
      all.rate_limit = false;
      all.waiting_is_removable = options.waiting_is_removable;
      all.names_only = true;
      for (ScaleDown& sd : run.RunPass(all).plan.scale_downs) {
        out_unneeded->push_back(std::move(sd.node));
      }
    }
  }
  return plan;
}

std::string ScaleDownPlanner::Explain(const PlannerInput& input, std::string_view node_name) const {
  TIDEPOOL_CHECK(input.config != nullptr);
  const model::Node* node = nullptr;
  for (const model::Node* n : input.nodes) {
    if (n->name() == node_name) {
      node = n;
      break;
    }
  }
  if (node == nullptr) return fmt::format("node {} is not in the cluster state.", node_name);
  const model::Pool* pool = PoolOf(*node, input);
  if (pool == nullptr) {
    return fmt::format(
        "node {} is in no pool (unmanaged): tidepool never scales it down; its free capacity "
        "still counts when pods move.",
        node_name);
  }
  std::string head = fmt::format("node {} (pool {}, min {})", node_name, pool->name, pool->min);
  if (!input.config->scale_down.enabled) {
    return fmt::format("{}: kept: {}.", head, kDisabledInConfig);
  }
  ScaleDownRun run(input);
  NodeIndex index = run.Find(node_name);
  TIDEPOOL_CHECK(index != kNoNode);
  const NodeEntry& e = run.entry(index);
  std::string utilization = DescribeUtilization(e.util, run.Threshold(e));
  PassOptions pass;
  pass.record = index;
  PassResult result = run.RunPass(pass);
  std::string out = fmt::format("{}: {}.", head, utilization);
  for (const ScaleDown& sd : result.plan.scale_downs) {
    if (sd.node != node_name) continue;
    std::string_view kind = RemovalKindName(sd.kind);
    if (!sd.replacement_group.empty()) {
      // Its pods all go to the group's new node, which the pass does not place them on.
      return out + fmt::format(
                       " Removable now ({}): {}; one new node of pool {} replaces nodes "
                       "{}: {} move there.",
                       kind, DescribeVerdict(*sd.consolidation), sd.replacement_pool,
                       fmt::join(sd.replacement_group, ", "), fmt::join(sd.replacement_pods, ", "));
    }
    if (result.moves.empty()) {
      return out + fmt::format(
                       " Removable now ({}): no pods to move (only DaemonSet, mirror or "
                       "terminating pods).",
                       kind);
    }
    out += fmt::format(" Removable now ({}): ", kind);
    if (sd.consolidation) out += DescribeVerdict(*sd.consolidation) + "; ";
    out += fmt::format("{} pod(s) move:", result.moves.size());
    std::sort(result.moves.begin(), result.moves.end());
    char sep = ' ';
    for (const auto& [pod, to] : result.moves) {
      out += fmt::format("{}{} -> {}", sep, pod, to);
      sep = ',';
    }
    return out + ".";
  }
  for (const Keep& k : result.plan.keep) {
    if (k.node != node_name) continue;
    if (k.busy && k.text.empty()) return out + " Kept: its utilization is not below the threshold.";
    return out + fmt::format(" Kept: {}.", k.Reason());
  }
  return out;
}

}  // namespace tidepool::planner
