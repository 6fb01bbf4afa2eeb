// The plan's JSON contract: what `tidepool plan -o json` and `tidepool explain -o json` print
// (docs/architecture.md, "Interfaces"). It lives with the planner so the decisions and the
// keys other tools read change together.
#pragma once

#include <nlohmann/json.hpp>

#include "planner/decision.h"
#include "planner/scale_up.h"

namespace tidepool::planner {

// {"scaleUp": [...], "unschedulable": [...], "fitsExisting": [...], "scaleDown": [...],
// "keep": [...]}, each list in the plan's own (deterministic) order.
nlohmann::json PlanToJson(const ScaleUpPlan& up, const ScaleDownPlan& down);

// {"pod", "found", "pending", "pools"} and, when set, "notPendingReason", "fitsNode",
// "scaleUpPool".
nlohmann::json ExplanationToJson(const PodExplanation& ex);

}  // namespace tidepool::planner
