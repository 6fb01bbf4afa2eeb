#include "controller/action_log.h"

#include <spdlog/spdlog.h>

namespace tidepool::controller {

using namespace autoscaler;

void ActionLog::Carried(const Action& action, const std::string* pod, const Result<void>& r) {
  if (const auto* evict = std::get_if<EvictPods>(&action)) {
    if (!r && r.error().code() != Error::Code::kNotFound) {
      spdlog::info("eviction of {} from {} refused: {}", pod != nullptr ? *pod : "", evict->node,
                   r.error().message());
    }
    if (metrics_ != nullptr) metrics_->RecordEviction(ops::EvictionResultOf(r));
    return;
  }
  if (!r) spdlog::warn("{} failed: {}", ActionName(action), r.error().message());
  if (metrics_ == nullptr) return;
  if (const auto* up = std::get_if<IncreasePool>(&action); up != nullptr && r) {
    metrics_->RecordScaleUp(up->pool, up->replaces.empty() ? "pending_pods" : "replacement",
                            up->count);
  } else if (const auto* del = std::get_if<DeleteNode>(&action); del != nullptr && r) {
    metrics_->RecordScaleDown(del->pool, planner::RemovalKindName(del->kind));
    if (del->consolidation) metrics_->RecordConsolidation(del->pool, *del->consolidation);
  } else if (const auto* e = std::get_if<Event>(&action);
             e != nullptr && e->reason == EventReason::kScaleDownFailed) {
    metrics_->RecordScaleDownFailure(e->pool);
  } else if (e != nullptr && e->reason == EventReason::kConsolidationReplace) {
    metrics_->RecordReplacement(e->pool, e->warning ? "abandoned" : "started");
  } else if (const auto* u = std::get_if<UpdateProvisioningRequest>(&action); u != nullptr && r) {
    for (const model::Condition& c : u->conditions) {
      metrics_->RecordProvisioning(model::ProvisioningClassLabel(u->provisioning_class),
                                   model::ProvisioningOutcomeLabel(c));
    }
  }
}

void ActionLog::SideFailure(const Error& error) { spdlog::warn("{}", error.message()); }

}  // namespace tidepool::controller
