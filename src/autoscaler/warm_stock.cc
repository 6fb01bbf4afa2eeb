// WarmPlanner::StockStopped: machines kept created and stopped for a fast restart
// (pools[].warm.stoppedNodes; docs/configuration.md, "Stopped machines").
//
// A deallocate pool gathers stopped machines only from its own scale-downs, so its first bursts
// (and any burst larger than the last) wait for full boots. With stoppedNodes N, tidepool keeps
// at least N machines in the pool, up, coming or stopped, creating nodes for the shortfall.
// Idle ones are stopped by scale-down (fewer than maxStopped >= N are stopped), so between
// bursts N machines are stopped, each a restart away. A machine created for the stock boots once
// at full price, is stopped once idle for unneededTime, and then costs its disks only.
#include <fmt/format.h>

#include <algorithm>

#include "autoscaler/warm_planner.h"

namespace tidepool::autoscaler {

namespace {

// Nodes of `pool` that are up: busy, idle (scale-down stops them) or being removed.
int UpNodes(const StepContext& ctx, const model::Pool& pool) {
  int up = 0;
  for (const auto& [name, p] : ctx.pool_of)
    if (p == &pool && ctx.ClassOf(name) == NodeClass::kReady) ++up;
  return up;
}

}  // namespace

void WarmPlanner::StockStopped(StepContext& ctx, PoolTracker& pools) {
  for (const model::Pool& pool : config_.pools) {
    const int want = pool.warm.stopped_nodes;
    if (want <= 0 || !pool.scale_down.Deallocates()) continue;
    WarmState& ws = warm_.at(pool.name);
    const int stopped = pools.Stopped(pool.name);
    const int up = UpNodes(ctx, pool);
    const int coming = pools.Upcoming(pool.name);
    const int short_by = want - stopped - up - coming;
    std::string state = fmt::format("warm: stoppedNodes {} ({} stopped, {} up, {} coming)", want,
                                    stopped, up, coming);
    if (short_by <= 0) {
      ws.stock_reason = std::move(state);
      continue;
    }
    // A scale-up starts stopped machines before it creates: with some stopped, adding now would
    // restart them only to stop them again. They are used by the next burst; then the pool is
    // topped up.
    if (stopped > 0) {
      ws.stock_reason =
          fmt::format("{}: {} short; adding waits until no machine is stopped", state, short_by);
      continue;
    }
    const int target = pools.Target(pool.name);
    const int add = std::min(short_by, pool.max - target);
    if (add <= 0) {
      ws.stock_reason =
          fmt::format("{}: {} short, but the pool is at its max {}", state, short_by, pool.max);
      continue;
    }
    if (pools.InBackoff(pool.name, ctx.now)) {
      ws.stock_reason = fmt::format("{}: {} short, the pool is in backoff", state, short_by);
      continue;
    }
    ws.stock_reason =
        fmt::format("{}: creating {} node(s) to stop at {}", state, add, FormatRfc3339(ctx.now));
    ctx.actions.push_back(IncreasePool{pool.name, add, {}, add, state});
    pools.RecordIncrease(pool.name, add, ctx.now);
    ctx.actions.push_back(Event{EventObject::kStatus, "", EventReason::kWarmScaleUp,
                                fmt::format("pool {} {}->{} (max: {}): {} node(s) to stop: {}",
                                            pool.name, target, target + add, pool.max, add, state),
                                false, pool.name});
  }
}

}  // namespace tidepool::autoscaler
