// What the loop's state is waiting for, collected from every tracker in one pass: the time the
// driver must call Step again at the latest, and the earliest time a decision could change.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

#include "base/time.h"

namespace tidepool::autoscaler {

// Each tracker adds its deadlines. Wake: a timer the loop acts on (a batch closing, a timeout,
// an eviction retry); the driver must Step by then. Decide: a moment after which the same
// observation could decide differently (a node old enough for scale-down, a predicted slot);
// only needed to know how long an unchanged Step may be skipped. Every wake time is also a
// decide time.
class Timers {
 public:
  Timers(Time now, bool want_decide) : now_(now), want_decide_(want_decide) {}

  void Wake(Time t) {
    wake_ = std::min(wake_, t);
    Decide(t);
  }
  void Decide(Time t) {
    if (want_decide_ && t > now_) decide_ = std::min(decide_, t);
  }
  bool want_decide() const { return want_decide_; }
  Time now() const { return now_; }
  Time wake() const { return wake_; }
  Time decide() const { return decide_; }

 private:
  Time now_;
  bool want_decide_;
  Time wake_ = Time::max();
  Time decide_ = Time::max();
};

// A streaming 64-bit digest of loop state, to tell whether a Step changed anything
// (collisions are not a practical concern at 64 bits for comparing two consecutive states).
class Digest {
 public:
  void Add(uint64_t v) { h_ ^= v + 0x9e3779b97f4a7c15ULL + (h_ << 6) + (h_ >> 2); }
  void Add(std::string_view s) {
    Add(std::hash<std::string_view>()(s));
    Add(s.size());
  }
  void Add(Time t) { Add(static_cast<uint64_t>(t.time_since_epoch().count())); }
  void Add(const std::optional<Time>& t) {
    Add(uint64_t{t.has_value()});
    if (t) Add(*t);
  }
  void Add(double v) { Add(std::bit_cast<uint64_t>(v)); }
  void AddInt(int64_t v) { Add(static_cast<uint64_t>(v)); }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 0xcbf29ce484222325ULL;
};

}  // namespace tidepool::autoscaler
