#include "planner/plan_json.h"

namespace tidepool::planner {

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
    j["scaleDown"].push_back({{"node", s.node},
                              {"pool", s.pool},
                              {"reason", RemovalKindName(s.kind)},
                              {"evict", s.evict},
                              {"detail", s.detail}});
  }
  j["keep"] = nlohmann::json::array();
  for (const auto& k : down.keep) j["keep"].push_back({{"node", k.node}, {"reason", k.reason}});
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
