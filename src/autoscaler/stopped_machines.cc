// PoolTracker's part for pools with scaleDown.mode deallocate: how many of their machines are
// stopped, whether a removed node is stopped or deleted, and trimming stopped machines beyond
// maxStopped (docs/configuration.md, "Stopped machines").
#include <fmt/format.h>

#include "autoscaler/pool_tracker.h"

namespace tidepool::autoscaler {

void PoolTracker::ReadStopped(PoolState& ps, const PoolObservation* reported, Time now) {
  ps.observed_stopped = reported != nullptr ? reported->stopped : 0;
  if (!ps.expected_stopped) return;
  bool shows = reported != nullptr && ps.observed_stopped == *ps.expected_stopped;
  if (shows || now - ps.expected_stopped_touched >= options_.observe_grace) {
    ps.expected_stopped.reset();
  }
}

void PoolTracker::ExpectStoppedChange(PoolState& ps, int delta, Time now) {
  ps.expected_stopped = std::max(0, ps.stopped() + delta);
  ps.expected_stopped_touched = now;
}

PoolTracker::RemovalChoice PoolTracker::ChooseRemoval(const std::string& pool, Time now) {
  const model::Pool* p = config_.FindPool(pool);
  auto it = pools_.find(pool);
  if (p == nullptr || it == pools_.end() || !p->scale_down.Deallocates()) return {};
  PoolState& ps = it->second;
  const int max = p->scale_down.max_stopped;
  RemovalChoice c;
  if (ps.stopped() >= max) {
    c.why =
        fmt::format("deleted, not stopped: {} stopped already (maxStopped {})", ps.stopped(), max);
  } else {
    c.stop = true;
    ExpectStoppedChange(ps, +1, now);
    c.why =
        fmt::format("stopped for a fast restart ({} of maxStopped {} stopped)", ps.stopped(), max);
  }
  ps.stopped_reason = c.why;
  return c;
}

void PoolTracker::OnStopReported(const std::string& pool, bool ok, Time now) {
  auto it = pools_.find(pool);
  if (it == pools_.end() || ok) return;
  ExpectStoppedChange(it->second, -1, now);
}

void PoolTracker::NoteIncrease(PoolState& ps, int count, Time now) {
  // A deallocate pool starts its stopped machines first (cloud::MachineStopper).
  if (ps.expected_stopped) ExpectStoppedChange(ps, -std::min(count, ps.stopped()), now);
}

void PoolTracker::TrimStopped(StepContext& ctx, const KeepStopped& worth_keeping) {
  for (const model::Pool& pool : config_.pools) {
    if (!pool.scale_down.Deallocates()) continue;
    PoolState& ps = pools_[pool.name];
    const int stopped = ps.stopped();
    if (stopped == 0) continue;
    int keep = pool.scale_down.max_stopped;
    std::string why = fmt::format("maxStopped {}", keep);
    if (auto worth = worth_keeping ? worth_keeping(pool, ctx.now) : std::nullopt;
        worth && worth->keep < keep) {
      keep = worth->keep;
      why = std::move(worth->why);
    }
    if (keep < pool.warm.stopped_nodes) {  // the stock is kept whatever the profile says
      keep = pool.warm.stopped_nodes;
      why = fmt::format("warm.stoppedNodes {}", keep);
    }
    const int excess = stopped - keep;
    if (excess <= 0) continue;
    ps.stopped_reason =
        fmt::format("deleted {} of {} stopped machine(s): {}", excess, stopped, why);
    ctx.actions.push_back(DeleteStopped{pool.name, excess, ps.stopped_reason});
    ExpectStoppedChange(ps, -excess, ctx.now);
  }
}

}  // namespace tidepool::autoscaler
