// Rendering of planner decisions for the CLI: the JSON contract of `tidepool plan -o json`
// (DESIGN §3) and the readable text tables.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "planner/decision.h"
#include "planner/scale_up.h"

namespace tidepool::cli {

nlohmann::json PlanToJson(const planner::ScaleUpPlan& up, const planner::ScaleDownPlan& down);
std::string PlanToText(const planner::ScaleUpPlan& up, const planner::ScaleDownPlan& down);
std::string ExplanationToText(const planner::PodExplanation& ex);
nlohmann::json ExplanationToJson(const planner::PodExplanation& ex);

}  // namespace tidepool::cli
