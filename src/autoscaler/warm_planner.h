// Warm capacity (pools[].warm): spare nodes, headroom and predictive pre-warming, planned as
// placeholder demand that exists only inside the loop (docs/configuration.md, Warm capacity).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "autoscaler/pool_tracker.h"
#include "autoscaler/state.h"
#include "autoscaler/status.h"
#include "autoscaler/step_context.h"
#include "autoscaler/timers.h"
#include "base/error.h"
#include "planner/cluster.h"
#include "planner/decision.h"

namespace tidepool::autoscaler {

// Spare nodes and headroom are placeholder pods pinned to their pool, planned after every real
// pod (so a scale-up adds nodes when the room is not there) and bound to nodes in the scale-down
// simulation (so the nodes holding them are not unneeded). Predictive pools learn a
// DemandProfile of the GPUs (CPU cores) requested by pods on their nodes and hold idle nodes for
// a predicted burst when the wait it saves is worth more than the idle cost, within
// maxCostPerDay. Placeholders never appear in actions, pending counts or pod Events.
class WarmPlanner {
 public:
  using PlannedPools = std::map<std::string, std::string, std::less<>>;  // pod -> pool

  explicit WarmPlanner(const model::AutoscalerConfig& config);

  bool Any() const { return !warm_.empty(); }
  bool IsWarm(std::string_view pool) const { return warm_.contains(pool); }
  bool HasPredictive() const;
  // Warm pools learn how long a new node takes from the request to joining (restarts of
  // stopped machines left out).
  void LearnBoot(const std::vector<PoolTracker::Arrival>& arrivals);

  // This Step's warm demand, pre-warm decisions (approvals only when `scan`) and placeholders
  // (ctx.warm, ctx.placeholders, ctx.loads). `planned` are pending pods a scale-up plan added
  // nodes for: they count as their pool's demand until bound.
  void Update(StepContext& ctx, bool scan, const PlannedPools& planned, const PoolTracker& pools,
              const std::function<bool(std::string_view)>& removing);
  // Binds placeholders to nodes for the scale-down simulation; returns why each host is kept.
  std::map<std::string, std::string> BindPlaceholders(
      StepContext& ctx, planner::PlannerInput& in,
      const std::function<bool(std::string_view)>& removing) const;
  // A scale-up that adds warm nodes: trims them to what may go now, records why (a WarmScaleUp
  // Event on the status ConfigMap), and returns the scale-up's reason in words.
  std::string AdjustScaleUp(StepContext& ctx, planner::ScaleUp& su, int upcoming, int target,
                            int max);
  // Why the last plan could not place every placeholder, per pool.
  void SetUnmet(const std::map<std::string, std::string>& unmet);

  // What was learned (profiles, boot time estimates, the pre-warm ledger) as versioned JSON,
  // and back. A malformed state is an error naming what is wrong and changes nothing.
  std::string Export() const;
  Result<void> Import(std::string_view json);

  void AddDigest(Digest& d) const;
  void AddTimers(Timers& t) const;
  void FillStatus(PoolStatus& p, const model::Pool& pool, Time now) const;
  // Pools with scaleDown.mode deallocate and warm.predictive, once a day of demand is learned:
  // the stopped machines worth keeping, those the profile expects to be needed before their
  // disks cost more than the boot time a restart saves (warm_stopped.cc). Else nullopt.
  std::optional<PoolTracker::StoppedKeep> StoppedWorthKeeping(const model::Pool& pool,
                                                              Time now) const;
  // Pools with warm.stoppedNodes (warm_stock.cc): when the pool's machines (up, coming or
  // stopped) fall short of it and none is stopped, creates nodes for the shortfall (an
  // IncreasePool with a WarmScaleUp Event). They come up idle, and scale-down stops them after
  // unneededTime like any idle node of the pool. Runs at periodic passes.
  void StockStopped(StepContext& ctx, PoolTracker& pools);

 private:
  void ComputeLoads(StepContext& ctx, const PlannedPools& planned,
                    std::map<std::string_view, double>& demand) const;
  void SizePool(StepContext& ctx, const model::Pool& pool, WarmPoolStep& wp) const;
  // Pending demand for the pool not yet planned, and free room on its busy nodes.
  double PendingUnits(const StepContext& ctx, const model::Pool& pool,
                      const PlannedPools& planned) const;
  double FreeUnits(const StepContext& ctx, const model::Pool& pool,
                   const std::function<bool(std::string_view)>& removing) const;
  void PlanPrewarm(StepContext& ctx, const model::Pool& pool, WarmState& ws, double expected,
                   bool scan, bool in_backoff);
  void DecidePrewarm(StepContext& ctx, const model::Pool& pool, WarmState& ws, int shortfall,
                     double expected, double& spent);
  void AddPlaceholders(StepContext& ctx, const model::Pool& pool, const WarmPoolStep& wp) const;
  Duration BootEstimate(const model::Pool& pool) const;

  const model::AutoscalerConfig& config_;
  std::map<std::string, WarmState, std::less<>> warm_;  // pools with pools[].warm
};

// What a stopped (deallocated) machine costs per hour, as a share of the pool's pricePerHour:
// its disks. Managed disks of a GPU VM cost well under 2% of the VM; the simulator bills stopped
// machines at this unless simulation.pools.<name>.stoppedPricePerHour says otherwise.
inline constexpr double kStoppedPriceShare = 0.02;

// The resource a pool's demand is counted in: GPUs when its nodes have them, else CPU cores.
model::ResourceId PrimaryResource(const model::Pool& pool);
// A placeholder pod: pinned to `pool` (node selector, tolerating its template's taints), never
// sent anywhere. `node` binds it for the scale-down simulation.
model::Pod MakePlaceholder(const model::Pool& pool, std::string name, const model::Resources& req,
                           bool whole, int32_t priority, std::string node = "");
double WarmUnits(model::ResourceId id, int64_t amount);
std::string_view WarmUnitWord(model::ResourceId id);

}  // namespace tidepool::autoscaler
