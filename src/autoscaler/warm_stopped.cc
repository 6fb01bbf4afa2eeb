// WarmPlanner::StoppedWorthKeeping: how many stopped machines of a deallocate pool the learned
// demand profile says are worth their disks (docs/configuration.md, "Stopped machines").
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "autoscaler/warm_planner.h"

namespace tidepool::autoscaler {

std::optional<PoolTracker::StoppedKeep> WarmPlanner::StoppedWorthKeeping(const model::Pool& pool,
                                                                         Time now) const {
  if (!pool.scale_down.Deallocates() || !pool.warm.predictive.enabled) return std::nullopt;
  auto it = warm_.find(pool.name);
  if (it == warm_.end()) return std::nullopt;
  const WarmState& ws = it->second;
  if (ws.profile.folded() < DemandProfile::kDaySlots) return std::nullopt;  // under a day learned
  const model::ResourceId id = PrimaryResource(pool);
  const double per_node = WarmUnits(id, pool.template_node.allocatable.Get(id));
  const double stopped_price = kStoppedPriceShare * pool.price_per_hour;
  const double value = pool.warm.predictive.wait_value_per_gpu_hour;
  if (per_node <= 0 || stopped_price <= 0 || value <= 0) return std::nullopt;
  // A stopped machine pays for itself while its disks cost less than the wait its restart saves
  // (a whole boot, valued at waitValuePerGpuHour): that long ahead is worth looking.
  const Duration boot = BootEstimate(pool);
  const double hours = per_node * std::chrono::duration<double, std::ratio<3600>>(boot).count() *
                       value / stopped_price;
  const Duration horizon = std::clamp<Duration>(
      std::chrono::duration_cast<Duration>(std::chrono::duration<double, std::ratio<3600>>(hours)),
      DemandProfile::kSlot, std::chrono::hours(24));
  const DemandProfile::Prediction p = ws.profile.Predict(now, horizon);
  const int keep = static_cast<int>(std::ceil(std::max(0.0, p.demand - ws.demand) / per_node));
  return PoolTracker::StoppedKeep{
      keep, fmt::format("the demand profile expects at most {} more node(s) within {}, the time "
                        "a stopped node's disks take to cost more than the {} boot its restart "
                        "saves",
                        keep, FormatDuration(horizon), FormatDuration(boot))};
}

}  // namespace tidepool::autoscaler
