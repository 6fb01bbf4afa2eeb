// The readable text of `tidepool plan` and `tidepool explain` (-o text): tables and lines for
// people. The JSON contract other tools read is planner/plan_json.h.
#pragma once

#include <string>

#include "planner/decision.h"
#include "planner/scale_up.h"

namespace tidepool::cli {

std::string PlanToText(const planner::ScaleUpPlan& up, const planner::ScaleDownPlan& down);
std::string ExplanationToText(const planner::PodExplanation& ex);

}  // namespace tidepool::cli
