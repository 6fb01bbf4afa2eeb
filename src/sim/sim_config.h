// Settings of the simulated world (boot delays, spot stockouts and evictions, scheduler scoring,
// checkpoints), read from the optional `--sim-config` YAML file; every key has a default.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/time.h"

namespace tidepool::sim {

// A uniform range [lo, hi].
struct DurationRange {
  Duration lo{};
  Duration hi{};
};

struct PoolSimConfig {
  std::optional<DurationRange> boot_delay;               // unset: the cpu/gpu default
  std::vector<std::pair<Duration, Duration>> stockouts;  // [start, end) offsets from the start
  double evictions_per_node_hour = 0;                    // spot evictions (Poisson rate)
};

enum class ScoringPolicy { kLeastAllocated, kMostAllocated };

struct SimConfig {
  uint64_t seed = 1;
  DurationRange cpu_boot_delay{std::chrono::minutes(3), std::chrono::minutes(4)};
  DurationRange gpu_boot_delay{std::chrono::minutes(8), std::chrono::minutes(15)};
  std::map<std::string, PoolSimConfig, std::less<>> pools;
  ScoringPolicy scheduler = ScoringPolicy::kLeastAllocated;
  std::optional<Duration> checkpoint_every;  // unset: an evicted pod loses all its progress
  Duration eviction_notice = std::chrono::seconds(30);
  // Check invariants after every event (tests); a violation ends the run with an error.
  bool check_invariants = false;
};

// Parses the YAML text of a sim config. Keys: seed, bootDelay: {cpu: [3m, 4m], gpu: [8m, 15m]},
// pools: {<name>: {bootDelay: [a, b], stockouts: [[start, end], ...], evictionsPerNodeHour: x}},
// scheduler: least-allocated | most-allocated, checkpointEvery: <duration>. Unknown keys and
// wrong types are errors "file:line: key: expected ...". Pool names are checked by the
// simulator against the autoscaler config.
Result<SimConfig> ParseSimConfig(std::string_view yaml, std::string_view source);
Result<SimConfig> LoadSimConfig(const std::string& path);

}  // namespace tidepool::sim
