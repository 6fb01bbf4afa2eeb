// Expanders: how the scale-up chooses among pools that could all help. A chain of filters
// (priority, least-waste, price, most-pods, random); each narrows, the next breaks ties.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/pool.h"
#include "model/resources.h"

namespace tidepool::planner {

// One pool's bin-packing result for the pods at hand.
struct ExpanderOption {
  const model::Pool* pool = nullptr;
  int nodes = 0;                 // new nodes needed
  int pods = 0;                  // pods they would take
  model::Resources requested;    // pods plus DaemonSets on the new nodes
  model::Resources allocatable;  // of the new nodes
  // The new nodes' price per hour when they are of several shapes; else nodes x the pool's.
  std::optional<double> cost_per_hour;
};

struct ExpanderChoice {
  size_t index = 0;
  std::string reason;  // e.g. "priority 100 (over gpupool); least-waste 0.12"
};

// Names the chain accepts, for config validation.
bool IsKnownExpander(std::string_view name);

// Unused share of the new nodes after placement: the mean over cpu, memory and (when the nodes
// have any) GPUs of (allocatable - requested) / allocatable. Lower is better.
double Waste(const ExpanderOption& o);

// The index ChooseOption would choose, without the words (for choices made by the thousand).
size_t ChooseIndex(const std::vector<std::string>& chain,
                   const std::vector<ExpanderOption>& options, uint64_t seed, uint64_t round);

// Applies the chain to non-empty `options`; the final tie goes to the lowest pool name.
// `seed` and `round` make `random` deterministic. `outranked`: pools of a lower priority than
// every option, left out before they were estimated (the chain starts with priority); the reason
// names them among those the winner was chosen over.
ExpanderChoice ChooseOption(const std::vector<std::string>& chain,
                            const std::vector<ExpanderOption>& options, uint64_t seed,
                            uint64_t round, const std::vector<std::string>& outranked = {});

}  // namespace tidepool::planner
