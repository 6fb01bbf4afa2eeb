// WarmPlanner's predictive pre-warming: how many idle nodes a predicted burst needs, and
// whether holding them pays (expected wait saved against idle cost, within maxCostPerDay).
#include <fmt/format.h>

#include <cmath>

#include "autoscaler/warm_planner.h"

namespace tidepool::autoscaler {

void WarmPlanner::PlanPrewarm(StepContext& ctx, const model::Pool& pool, WarmState& ws,
                              double expected, bool scan, bool in_backoff) {
  const Time now = ctx.now;
  const model::WarmConfig::Predictive& cfg = pool.warm.predictive;
  WarmPoolStep& wp = ctx.warm.at(pool.name);
  const model::ResourceId id = PrimaryResource(pool);
  const double per_node = std::max(1e-9, WarmUnits(id, wp.whole_request.Get(id)));
  std::erase_if(ws.ledger,
                [&](const PrewarmCharge& c) { return c.at + std::chrono::hours(24) <= now; });
  double spent = 0;
  for (const PrewarmCharge& c : ws.ledger) spent += c.cost;

  ws.prediction = ws.profile.Predict(now, cfg.horizon);
  ws.next_prewarm.reset();
  const DemandProfile::Prediction& pred = ws.prediction;
  // Idle nodes the burst needs beyond the demand already there and the room busy nodes have.
  int want = pred.demand > expected
                 ? static_cast<int>(std::ceil((pred.demand - expected) / per_node - 1e-9))
                 : 0;
  // Nodes held for earlier charges whose burst has not passed.
  int held = 0;
  for (const PrewarmCharge& c : ws.ledger)
    if (c.until > now) held += c.nodes;
  int shortfall = want - held;
  if (pred.demand <= 0) {
    if (scan) {
      ws.reason = fmt::format("no burst predicted within {} ({} quarter-hours observed)",
                              FormatDuration(cfg.horizon), ws.profile.folded());
    }
  } else if (want == 0 && scan) {
    ws.reason =
        fmt::format("predicted {:.1f} {} at {}: the demand there now and the free room cover it",
                    pred.demand, WarmUnitWord(id), FormatRfc3339(pred.at));
  }
  if (scan && shortfall > 0 && !in_backoff) {
    DecidePrewarm(ctx, pool, ws, shortfall, expected, spent);
  }
  wp.prewarm = std::max(0, std::min(want, held + wp.approved));
  ws.prewarm_nodes = wp.prewarm;
  if (wp.prewarm > 0) {
    wp.prewarm_reason = fmt::format("warm: predicted burst of {:.1f} {} at {}", pred.demand,
                                    WarmUnitWord(id), FormatRfc3339(pred.at));
  }
}

void WarmPlanner::DecidePrewarm(StepContext& ctx, const model::Pool& pool, WarmState& ws,
                                int shortfall, double expected, double& spent) {
  const Time now = ctx.now;
  const model::WarmConfig::Predictive& cfg = pool.warm.predictive;
  const DemandProfile::Prediction& pred = ws.prediction;
  WarmPoolStep& wp = ctx.warm.at(pool.name);
  const model::ResourceId id = PrimaryResource(pool);
  const double per_node = std::max(1e-9, WarmUnits(id, wp.whole_request.Get(id)));
  const Duration lead = BootEstimate(pool);
  // The burst starts needing nodes when the expected demand first exceeds what is there.
  const Time starts = ws.profile.FirstAbove(now, cfg.horizon, expected).value_or(pred.at);
  const double hold_h =
      Hours(pred.slot_end - std::min(pred.at, starts) + config_.scale_down.unneeded_time);
  const double value = per_node * Hours(lead) * cfg.wait_value_per_gpu_hour * pred.confidence;
  const double idle_h =
      Hours(std::max(Duration(0), starts - now - lead)) + (1 - pred.confidence) * hold_h;
  const double idle_cost = pool.price_per_hour * idle_h;
  const double commit =
      pool.price_per_hour * Hours(pred.slot_end - now + config_.scale_down.unneeded_time);
  std::string head = fmt::format(
      "predicted burst of {:.1f} {} at {} ({} profile, confidence {:.2f}), {} node(s) short",
      pred.demand, WarmUnitWord(id), FormatRfc3339(pred.at), pred.weekly ? "day-of-week" : "daily",
      pred.confidence, shortfall);
  // Starting earlier than the boot time (plus a quarter for its variance) saves no more wait,
  // it only adds idle time.
  const Duration earliest = lead + lead / 4;
  if (starts - now > earliest) {
    ws.next_prewarm = starts - earliest;
    ws.reason = fmt::format("{}: not yet, nodes take {} to come; starting at {}", head,
                            FormatDuration(std::chrono::floor<std::chrono::seconds>(lead)),
                            FormatRfc3339(*ws.next_prewarm));
    return;
  }
  if (value <= idle_cost) {
    // When the idle cost falls below the value: the burst is closer than the lead plus the
    // idle hours the value pays for.
    double x = value / std::max(1e-12, pool.price_per_hour) - (1 - pred.confidence) * hold_h;
    if (x > 0) ws.next_prewarm = starts - lead - Duration(static_cast<int64_t>(x * 3600e3));
    ws.reason = fmt::format(
        "{}: not yet, expected wait saved ${:.2f} <= expected idle cost ${:.2f} per node{}", head,
        value, idle_cost,
        ws.next_prewarm ? fmt::format(" (until {})", FormatRfc3339(*ws.next_prewarm)) : "");
    return;
  }
  int approved = 0;
  while (approved < shortfall && spent + commit <= cfg.max_cost_per_day + 1e-9) {
    spent += commit;
    ++approved;
  }
  if (approved > 0) {
    ws.ledger.push_back({now, approved, approved * commit, pred.slot_end});
    wp.approved = approved;
  }
  ws.reason = fmt::format(
      "{}: pre-warming {} node(s) (wait saved ${:.2f} > idle cost ${:.2f} per node; "
      "committed ${:.2f} each, ${:.2f} of ${:.2f} in 24h){}",
      head, approved, value, idle_cost, commit, spent, cfg.max_cost_per_day,
      approved < shortfall
          ? fmt::format("; {} not pre-warmed: maxCostPerDay reached", shortfall - approved)
          : "");
}

}  // namespace tidepool::autoscaler
