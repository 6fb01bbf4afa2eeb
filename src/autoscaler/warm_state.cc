// WarmPlanner's memory: what it learned as versioned JSON for a restart, its status, its part
// of the loop's digest and its deadlines.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "autoscaler/warm_planner.h"

namespace tidepool::autoscaler {
namespace {

constexpr int kWarmStateVersion = 1;

bool IsLedgerEntry(const nlohmann::json& e) {
  return e.is_array() && e.size() == 4 && e[0].is_number_integer() && e[1].is_number_integer() &&
         e[2].is_number() && e[2].get<double>() >= 0 && std::isfinite(e[2].get<double>()) &&
         e[3].is_number_integer();
}

Result<WarmState> ParsePoolState(const nlohmann::json& p, const std::string& where) {
  if (!p.is_object() || !p.contains("profile")) {
    return InvalidArgument("{}: expected an object with a profile", where);
  }
  WarmState ws;
  TIDEPOOL_ASSIGN_OR_RETURN(ws.profile,
                            DemandProfile::FromJson(p.at("profile"), where + ".profile"));
  if (auto boot = p.find("bootMs"); boot != p.end()) {
    if (!boot->is_number_integer() || boot->get<int64_t>() < 0) {
      return InvalidArgument("{}.bootMs: expected a non-negative integer", where);
    }
    ws.boot_estimate = Duration(boot->get<int64_t>());
  }
  if (auto ledger = p.find("ledger"); ledger != p.end()) {
    if (!ledger->is_array()) return InvalidArgument("{}.ledger: expected a list", where);
    for (const auto& e : *ledger) {
      if (!IsLedgerEntry(e)) {
        return InvalidArgument(
            "{}.ledger: expected [time ms, nodes, cost, until ms] entries, got {}", where,
            e.dump());
      }
      ws.ledger.push_back({Time(Duration(e[0].get<int64_t>())), e[1].get<int>(), e[2].get<double>(),
                           Time(Duration(e[3].get<int64_t>()))});
    }
  }
  return ws;
}

}  // namespace

std::string WarmPlanner::Export() const {
  nlohmann::json j;
  j["version"] = kWarmStateVersion;
  nlohmann::json pools = nlohmann::json::object();
  for (const auto& [name, ws] : warm_) {
    nlohmann::json p;
    p["profile"] = ws.profile.ToJson();
    if (ws.boot_estimate) p["bootMs"] = ws.boot_estimate->count();
    nlohmann::json ledger = nlohmann::json::array();
    for (const PrewarmCharge& c : ws.ledger) {
      ledger.push_back(
          {c.at.time_since_epoch().count(), c.nodes, c.cost, c.until.time_since_epoch().count()});
    }
    p["ledger"] = std::move(ledger);
    pools[name] = std::move(p);
  }
  j["pools"] = std::move(pools);
  return j.dump();
}

Result<void> WarmPlanner::Import(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return InvalidArgument("warm state: not a JSON object");
  }
  auto version = j.find("version");
  if (version == j.end() || !version->is_number_integer() ||
      version->get<int64_t>() != kWarmStateVersion) {
    return InvalidArgument("warm state: version: expected {}", kWarmStateVersion);
  }
  auto pools = j.find("pools");
  if (pools == j.end() || !pools->is_object()) {
    return InvalidArgument("warm state: pools: expected an object of pool name -> state");
  }
  std::map<std::string, WarmState, std::less<>> next = warm_;
  for (const auto& [name, p] : pools->items()) {
    auto it = next.find(name);
    if (it == next.end()) continue;  // no longer a warm pool
    TIDEPOOL_ASSIGN_OR_RETURN(it->second,
                              ParsePoolState(p, fmt::format("warm state: pools.{}", name)));
  }
  warm_ = std::move(next);
  return {};
}

void WarmPlanner::AddDigest(Digest& d) const {
  for (const auto& [name, ws] : warm_) {
    d.Add(name);
    d.AddInt(ws.profile.current_slot());
    d.AddInt(ws.profile.folded());
    d.Add(ws.profile.current_peak());
    d.AddInt(ws.boot_estimate.value_or(Duration(-1)).count());
    d.Add(ws.ledger.size());
    if (!ws.ledger.empty()) d.Add(ws.ledger.back().at);
  }
}

// Predictive pools: the next slot of the profile, the next slot entering the horizon, the
// value/cost rule turning, a pre-warm charge leaving the 24 h window.
void WarmPlanner::AddTimers(Timers& t) const {
  if (!t.want_decide()) return;
  const Time now = t.now();
  for (const model::Pool& pool : config_.pools) {
    auto it = warm_.find(pool.name);
    if (it == warm_.end() || !pool.warm.predictive.enabled) continue;
    const WarmState& ws = it->second;
    const Duration slot = DemandProfile::kSlot;
    Time slot_start = Time(Duration((now.time_since_epoch() / slot) * slot));
    t.Decide(slot_start + slot);
    Time horizon_end = now + pool.warm.predictive.horizon;
    Time horizon_slot = Time(Duration((horizon_end.time_since_epoch() / slot) * slot));
    t.Decide(horizon_slot + slot - pool.warm.predictive.horizon);
    if (ws.next_prewarm) t.Decide(*ws.next_prewarm);
    for (const PrewarmCharge& c : ws.ledger) {
      t.Decide(c.at + std::chrono::hours(24));
      t.Decide(c.until);
    }
  }
}

void WarmPlanner::FillStatus(PoolStatus& p, const model::Pool& pool, Time now) const {
  auto it = warm_.find(pool.name);
  if (it == warm_.end()) return;
  const WarmState& ws = it->second;
  p.warm = true;
  p.warm_spare_nodes = pool.warm.spare_nodes;
  p.warm_stopped_nodes = pool.warm.stopped_nodes;
  std::vector<std::string> headroom;
  for (model::ResourceId id : pool.warm.headroom_set) {
    headroom.push_back(fmt::format("{} {}", model::ResourceName(id),
                                   model::FormatAmount(id, pool.warm.headroom.Get(id))));
  }
  p.warm_headroom = fmt::format("{}", fmt::join(headroom, ", "));
  p.warm_predictive = pool.warm.predictive.enabled;
  p.warm_demand = ws.demand;
  if (ws.prediction.demand > 0) {
    p.warm_predicted = ws.prediction.demand;
    p.warm_confidence = ws.prediction.confidence;
    p.warm_predicted_at = ws.prediction.at;
  }
  p.warm_prewarm_nodes = ws.prewarm_nodes;
  for (const PrewarmCharge& c : ws.ledger)
    if (c.at + std::chrono::hours(24) > now) p.warm_spend_24h += c.cost;
  p.warm_max_cost_per_day = pool.warm.predictive.max_cost_per_day;
  p.warm_reason = ws.unmet.empty()
                      ? ws.reason
                      : fmt::format("{} (warm room not all made: {})", ws.reason, ws.unmet);
  if (!ws.stock_reason.empty()) {
    p.warm_reason += fmt::format("{}{}", p.warm_reason.empty() ? "" : "; ", ws.stock_reason);
  }
}

}  // namespace tidepool::autoscaler
