// The one place the loop builds the planner's view of the cluster from a Step's observation:
// which nodes the planner sees, and which it sees changed (tainted, cordoned) and why.
#pragma once

#include <functional>
#include <set>
#include <string_view>

#include "autoscaler/step_context.h"
#include "planner/cluster.h"

namespace tidepool::autoscaler {

enum class InputFor {
  // Scale-up: starting nodes are left out (the planner models them from the template as
  // upcoming), unusable ones hold nothing, nodes being removed take no pod.
  kScaleUp,
  // Scale-down: nodes being removed carry the ToBeDeleted taint whether or not it shows yet.
  kScaleDown,
  // Adoption after a restart: as scale-down, but the `adopting` nodes are seen without their
  // ToBeDeleted taint, as if the loop had not started their removal.
  kAdoption,
};

// ctx.base plus the nodes of the observation as `purpose` needs them (nodes the loop is
// deleting are left out in every case). Changed nodes are copies kept in `ctx`.
planner::PlannerInput BuildPlannerInput(StepContext& ctx, InputFor purpose,
                                        const std::function<bool(std::string_view)>& removing,
                                        const std::set<std::string_view>* adopting = nullptr);

}  // namespace tidepool::autoscaler
