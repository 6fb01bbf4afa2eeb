// Settings of the simulated world (boot delays, spot stockouts and evictions, scheduler scoring,
// checkpoints, GPU sharing), read from the `simulation:` section of the AutoscalerConfig file or
// from a `--sim-config` YAML file (which wins); every key has a default.
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
#include "kube/config/yaml_reader.h"

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
  // Pools with scaleDown.mode deallocate: how long a stopped machine takes from start to a
  // joined node (unset: kDefaultRestartDelay), and what it costs per hour while stopped (its
  // disks; unset: autoscaler::kStoppedPriceShare of the pool's pricePerHour).
  std::optional<DurationRange> restart_delay;
  std::optional<double> stopped_price_per_hour;
};

inline constexpr DurationRange kDefaultRestartDelay{std::chrono::minutes(1),
                                                    std::chrono::minutes(2)};

enum class ScoringPolicy { kLeastAllocated, kMostAllocated };

struct SimConfig {
  uint64_t seed = 1;
  DurationRange cpu_boot_delay{std::chrono::minutes(3), std::chrono::minutes(4)};
  DurationRange gpu_boot_delay{std::chrono::minutes(8), std::chrono::minutes(15)};
  std::map<std::string, PoolSimConfig, std::less<>> pools;
  ScoringPolicy scheduler = ScoringPolicy::kLeastAllocated;
  std::optional<Duration> checkpoint_every;  // unset: an evicted pod loses all its progress
  Duration eviction_notice = std::chrono::seconds(30);
  // GPU sharing (Alibaba `gpu_milli` < 1000): off, a share counts as a whole GPU; on, it
  // requests kGpuMilliResource and GPU nodes advertise 1000 of it per GPU (see trace.h).
  bool gpu_sharing = false;
  // Gang jobs queued as Kueue queues them (sim/kueue_queue.h): held at submit, their pods made
  // only once a best-effort-atomic ProvisioningRequest for all of them is Provisioned.
  bool queue_gangs = false;
  // Check invariants after every event (tests); a violation ends the run with an error.
  bool check_invariants = false;
};

// Parses the settings map at `section`. Keys: seed, bootDelay: {cpu: [3m, 4m], gpu: [8m, 15m]},
// pools: {<name>: {bootDelay: [a, b], stockouts: [[start, end], ...], evictionsPerNodeHour: x,
//   restartDelay: [a, b], stoppedPricePerHour: y}},
// scheduler: least-allocated | most-allocated, checkpointEvery: <duration>, gpuSharing: bool.
// Unknown keys and wrong types are errors "file:line: key.path: expected ..." with the key path
// from the document root (e.g. "simulation.bootDelay.cpu" for the config file's section). Pool
// names are checked by the simulator against the autoscaler config. Never throws.
Result<SimConfig> ParseSimSection(const kube::config::YamlValue& section);

// Parses the YAML text of a stand-alone sim config file (the settings map at its root).
Result<SimConfig> ParseSimConfig(std::string_view yaml, std::string_view source);
Result<SimConfig> LoadSimConfig(const std::string& path);

}  // namespace tidepool::sim
