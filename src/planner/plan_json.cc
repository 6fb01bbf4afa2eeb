#include "planner/plan_json.h"

namespace tidepool::planner {
namespace {

// The numbers behind a consolidation decision (docs/consolidation.md).
nlohmann::json VerdictToJson(const ConsolidationVerdict& v) {
  nlohmann::json j = {
      {"decision", ConsolidationDecisionName(v.decision)},
      {"nodePricePerHour", v.node_price_per_hour},
      {"horizonSeconds", std::chrono::duration_cast<std::chrono::seconds>(v.horizon).count()},
      {"savings", v.savings},
      {"extension", v.extension},
      {"workLost", v.work_lost},
      {"gpuHoursLost", v.gpu_hours_lost},
      {"safetyFactor", v.safety_factor},
      {"trainingPods", v.training_pods}};
  if (!v.replacement_pool.empty()) {
    j["replacementPool"] = v.replacement_pool;
    j["replacementPricePerHour"] = v.replacement_price_per_hour;
  }
  return j;
}

}  // namespace

nlohmann::json PlanToJson(const ScaleUpPlan& up, const ScaleDownPlan& down) {
  nlohmann::json j;
  j["scaleUp"] = nlohmann::json::array();
  for (const auto& s : up.scale_ups) {
    j["scaleUp"].push_back(
        {{"pool", s.pool}, {"add", s.add}, {"pods", s.pods}, {"reason", s.reason}});
  }
  j["unschedulable"] = nlohmann::json::array();
  for (const auto& u : up.unschedulable) {
    nlohmann::json reasons = nlohmann::json::object();
    for (const auto& [pool, r] : u.reasons) reasons[pool] = r.text;
    j["unschedulable"].push_back({{"pod", u.pod}, {"reasons", std::move(reasons)}});
  }
  j["fitsExisting"] = up.fits_existing;
  j["scaleDown"] = nlohmann::json::array();
  for (const auto& s : down.scale_downs) {
    nlohmann::json e = {{"node", s.node},
                        {"pool", s.pool},
                        {"reason", RemovalKindName(s.kind)},
                        {"evict", s.evict},
                        {"detail", s.Detail()}};
    if (s.consolidation) e["consolidation"] = VerdictToJson(*s.consolidation);
    if (!s.replacement_pool.empty()) {
      e["replacement"] = {{"pool", s.replacement_pool}, {"pods", s.replacement_pods}};
      if (!s.replacement_group.empty()) e["replacement"]["group"] = s.replacement_group;
    }
    j["scaleDown"].push_back(std::move(e));
  }
  j["keep"] = nlohmann::json::array();
  for (const auto& k : down.keep) {
    nlohmann::json e = {{"node", k.node}, {"reason", k.Reason()}};
    if (k.consolidation) e["consolidation"] = VerdictToJson(*k.consolidation);
    j["keep"].push_back(std::move(e));
  }
  return j;
}

nlohmann::json ExplanationToJson(const PodExplanation& ex) {
  nlohmann::json j = {{"pod", ex.pod}, {"found", ex.found}, {"pending", ex.pending}};
  if (!ex.not_pending_reason.empty()) j["notPendingReason"] = ex.not_pending_reason;
  if (!ex.fits_node.empty()) j["fitsNode"] = ex.fits_node;
  if (!ex.scale_up_pool.empty()) j["scaleUpPool"] = ex.scale_up_pool;
  j["pools"] = ex.pools;
  return j;
}

}  // namespace tidepool::planner
