// DemandProfile: what one pool's demand looked like at each time of day and of the week, learned
// from the loop's own observations, for predictive pre-warming (pools[].warm.predictive).
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "base/error.h"
#include "base/time.h"

namespace tidepool::autoscaler {

// Two profiles of quarter-hour slots: time of day (96 slots) and time of week (672 slots, from
// Thursday 00:00 UTC, the epoch's weekday). The loop reports the pool's demand at every Step; at
// the end of each slot its peak is folded into both profiles as an exponentially weighted average
// (weight kAlpha on the newest day, resp. week) together with a weight of evidence that grows
// 0.5, 0.75, 0.875, ... per occurrence seen; the weighted mean of the squares is kept too. A
// slot's expected demand is its weighted mean plus one weighted standard deviation (bursts that
// vary in size are covered beyond their average). A slot of the week profile seen at least once
// wins over the time-of-day slot. Slots during which the loop did not run are not updated.
//
// Plain value, deterministic, no clock: time comes in as arguments. Not thread-safe.
class DemandProfile {
 public:
  static constexpr Duration kSlot = std::chrono::minutes(15);
  static constexpr int kDaySlots = 96;
  static constexpr int kWeekSlots = 7 * kDaySlots;
  static constexpr double kAlpha = 0.5;

  // The demand seen at `now` (GPUs, or CPU cores for pools without GPUs). Time going backwards
  // is ignored.
  void Observe(Time now, double demand);

  struct Prediction {
    double demand = 0;      // the largest expected demand over the window (0: nothing known)
    double confidence = 0;  // that slot's weight of evidence, 0..1
    Time at{};              // the start of that slot, or `now` for the current one
    Time slot_end{};
    bool weekly = false;  // from the time-of-week profile (else time of day)
  };
  // The largest expected demand over [now, now + horizon] (the earliest slot on ties).
  Prediction Predict(Time now, Duration horizon) const;
  // The start of the earliest slot in [now, now + horizon] whose expected demand exceeds
  // `level` (`now` for the current slot), or nullopt: when a burst starts to need more than the
  // demand there is now, which is when pre-warmed nodes must be ready.
  std::optional<Time> FirstAbove(Time now, Duration horizon, double level) const;

  // Slots folded so far (96 a day), the slot being accumulated and its peak (for the loop's
  // change digest and the status).
  int64_t folded() const { return folded_; }
  int64_t current_slot() const { return current_; }
  double current_peak() const { return peak_; }

  // {"slot", "peak", "folded", "daily": [[index, value, weight, square], ...], "weekly": [...]},
  // slots never seen left out.
  nlohmann::json ToJson() const;
  // The inverse; anything malformed (missing keys, indices out of range, negative or non-finite
  // numbers, weights above 1) is an error naming `where` and the key. Never throws.
  static Result<DemandProfile> FromJson(const nlohmann::json& j, std::string_view where);

  friend bool operator==(const DemandProfile&, const DemandProfile&) = default;

 private:
  struct Slot {
    double value = 0;   // weighted sum of peaks
    double weight = 0;  // weight of evidence; value / weight is the mean
    double square = 0;  // weighted sum of squared peaks
    friend bool operator==(const Slot&, const Slot&) = default;
  };
  static int64_t SlotOf(Time t);
  // The expected demand of absolute slot `s` (0 when never seen), with its confidence.
  double Estimate(int64_t s, double* confidence, bool* weekly) const;
  void Fold();

  std::array<Slot, kDaySlots> daily_{};
  std::array<Slot, kWeekSlots> weekly_{};
  int64_t current_ = -1;  // absolute slot index being accumulated; -1: none yet
  double peak_ = 0;
  int64_t folded_ = 0;
};

}  // namespace tidepool::autoscaler
