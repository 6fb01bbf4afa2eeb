#include "autoscaler/demand_profile.h"

#include <fmt/format.h>

#include <cmath>
#include <string>

namespace tidepool::autoscaler {

int64_t DemandProfile::SlotOf(Time t) {
  auto since = std::chrono::floor<std::chrono::minutes>(t.time_since_epoch()).count();
  int64_t slot_minutes = std::chrono::duration_cast<std::chrono::minutes>(kSlot).count();
  int64_t q = since / slot_minutes;
  if (since % slot_minutes < 0) --q;  // floor for times before the epoch
  return q;
}

namespace {

int64_t Mod(int64_t a, int64_t m) { return ((a % m) + m) % m; }

}  // namespace

void DemandProfile::Fold() {
  if (current_ < 0) return;
  for (Slot* s : {&daily_[Mod(current_, kDaySlots)], &weekly_[Mod(current_, kWeekSlots)]}) {
    s->value = (1 - kAlpha) * s->value + kAlpha * peak_;
    s->square = (1 - kAlpha) * s->square + kAlpha * peak_ * peak_;
    s->weight = (1 - kAlpha) * s->weight + kAlpha;
  }
  ++folded_;
}

void DemandProfile::Observe(Time now, double demand) {
  int64_t slot = SlotOf(now);
  if (!std::isfinite(demand) || demand < 0) demand = 0;
  if (slot == current_) {
    peak_ = std::max(peak_, demand);
    return;
  }
  if (slot < current_) return;
  Fold();
  current_ = slot;
  peak_ = demand;
}

double DemandProfile::Estimate(int64_t s, double* confidence, bool* weekly) const {
  const Slot& w = weekly_[Mod(s, kWeekSlots)];
  const Slot& d = daily_[Mod(s, kDaySlots)];
  const Slot& use = w.weight > 0 ? w : d;
  *confidence = use.weight;
  *weekly = w.weight > 0;
  if (use.weight <= 0) return 0;
  double mean = use.value / use.weight;
  double variance = std::max(0.0, use.square / use.weight - mean * mean);
  return mean + std::sqrt(variance);
}

DemandProfile::Prediction DemandProfile::Predict(Time now, Duration horizon) const {
  Prediction best;
  int64_t first = SlotOf(now);
  int64_t last = SlotOf(now + horizon);
  for (int64_t s = first; s <= last; ++s) {
    double confidence = 0;
    bool weekly = false;
    double estimate = Estimate(s, &confidence, &weekly);
    if (estimate <= best.demand) continue;
    best.demand = estimate;
    best.confidence = confidence;
    best.weekly = weekly;
    Time start = Time(std::chrono::duration_cast<Duration>(kSlot * s));
    best.at = std::max(now, start);
    best.slot_end = start + kSlot;
  }
  return best;
}

std::optional<Time> DemandProfile::FirstAbove(Time now, Duration horizon, double level) const {
  int64_t first = SlotOf(now);
  int64_t last = SlotOf(now + horizon);
  for (int64_t s = first; s <= last; ++s) {
    double confidence = 0;
    bool weekly = false;
    if (Estimate(s, &confidence, &weekly) > level) {
      return std::max(now, Time(std::chrono::duration_cast<Duration>(kSlot * s)));
    }
  }
  return std::nullopt;
}

nlohmann::json DemandProfile::ToJson() const {
  nlohmann::json j;
  j["slot"] = current_;
  j["peak"] = peak_;
  j["folded"] = folded_;
  auto slots = [](const auto& array) {
    nlohmann::json list = nlohmann::json::array();
    for (size_t i = 0; i < array.size(); ++i) {
      if (array[i].weight > 0) {
        list.push_back({i, array[i].value, array[i].weight, array[i].square});
      }
    }
    return list;
  };
  j["daily"] = slots(daily_);
  j["weekly"] = slots(weekly_);
  return j;
}

Result<DemandProfile> DemandProfile::FromJson(const nlohmann::json& j, std::string_view where) {
  DemandProfile p;
  if (!j.is_object()) return InvalidArgument("{}: expected an object", where);
  auto number = [&](std::string_view key, bool integer) -> Result<double> {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number() || (integer && !it->is_number_integer())) {
      return InvalidArgument("{}.{}: expected {}", where, key, integer ? "an integer" : "a number");
    }
    double v = it->get<double>();
    if (!std::isfinite(v) || (v < 0 && key != "slot")) {
      return InvalidArgument("{}.{}: expected a finite non-negative number", where, key);
    }
    return v;
  };
  TIDEPOOL_ASSIGN_OR_RETURN(double slot, number("slot", true));
  TIDEPOOL_ASSIGN_OR_RETURN(p.peak_, number("peak", false));
  TIDEPOOL_ASSIGN_OR_RETURN(double folded, number("folded", true));
  if (slot < -1) return InvalidArgument("{}.slot: expected -1 or a slot index", where);
  p.current_ = static_cast<int64_t>(j.at("slot").get<int64_t>());
  p.folded_ = static_cast<int64_t>(folded);
  auto read = [&](std::string_view key, auto& array) -> Result<void> {
    auto it = j.find(key);
    if (it == j.end() || !it->is_array()) {
      return InvalidArgument("{}.{}: expected a list of [index, value, weight, square]", where,
                             key);
    }
    for (const auto& e : *it) {
      if (!e.is_array() || e.size() != 4 || !e[0].is_number_unsigned() || !e[1].is_number() ||
          !e[2].is_number() || !e[3].is_number()) {
        return InvalidArgument("{}.{}: expected [index, value, weight, square] entries, got {}",
                               where, key, e.dump());
      }
      uint64_t i = e[0].get<uint64_t>();
      double value = e[1].get<double>();
      double weight = e[2].get<double>();
      double square = e[3].get<double>();
      if (i >= array.size() || !std::isfinite(value) || !std::isfinite(weight) ||
          !std::isfinite(square) || value < 0 || square < 0 || weight <= 0 || weight > 1) {
        return InvalidArgument(
            "{}.{}: entry {} out of range (expected index < {}, value >= 0, 0 < weight <= 1, "
            "square >= 0)",
            where, key, e.dump(), array.size());
      }
      array[i] = Slot{value, weight, square};
    }
    return {};
  };
  TIDEPOOL_RETURN_IF_ERROR(read("daily", p.daily_));
  TIDEPOOL_RETURN_IF_ERROR(read("weekly", p.weekly_));
  return p;
}

}  // namespace tidepool::autoscaler
