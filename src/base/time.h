// Time values and the injected Clock: the planner and the decision loop take time as an argument,
// the controller reads a RealClock and the simulator advances a ManualClock.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/error.h"

namespace tidepool {

using Duration = std::chrono::milliseconds;
using Time = std::chrono::sys_time<std::chrono::milliseconds>;

// A duration in hours, for prices per hour.
inline double Hours(Duration d) {
  return std::chrono::duration<double, std::ratio<3600>>(d).count();
}

// Parses a Go-style duration as Kubernetes and CA flags write them: "10m", "1h30m", "1.5s",
// "500ms", "0". A bare number without a unit is rejected (ambiguous).
Result<Duration> ParseDuration(std::string_view text);

// Formats a duration the way ParseDuration reads it back ("1h30m", "45s", "250ms", "0s").
std::string FormatDuration(Duration d);

// Parses an RFC 3339 timestamp ("2026-11-22T01:40:05Z", with optional fraction and offset).
Result<Time> ParseRfc3339(std::string_view text);

// Formats as RFC 3339 in UTC with second precision (fraction only when non-zero).
std::string FormatRfc3339(Time t);

// The source of "now". Implementations are thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual Time Now() const = 0;
};

// Wall-clock time; the only place outside tests that reads the system clock.
class RealClock final : public Clock {
 public:
  Time Now() const override;
};

// A clock that moves only when told; for tests and the simulator. Not thread-safe.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(Time start) : now_(start) {}
  Time Now() const override { return now_; }
  void Set(Time t) { now_ = t; }
  void Advance(Duration d) { now_ += d; }

 private:
  Time now_;
};

}  // namespace tidepool
