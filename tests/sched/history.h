// Random snapshot histories for the index tests (label counts, spread eligibility): the changes
// every such history makes besides the pods and nodes its own test adds.
#pragma once

#include <random>
#include <string>

#include "sched/snapshot.h"

namespace tidepool::sched::testing {

// For `choice` 1, 2 and 3: removes a random node of the `nodes` named node-0.., opens a layer, or
// reverts or commits the newest (`depth` counts the open layers). False for any other choice.
inline bool RemoveForkOrClose(ClusterSnapshot& s, std::mt19937& rng, unsigned choice, int nodes,
                              int& depth) {
  switch (choice) {
    case 1:
      (void)s.RemoveNode("node-" + std::to_string(rng() % nodes));
      return true;
    case 2:
      s.Fork();
      ++depth;
      return true;
    case 3:
      if (depth > 0) {
        rng() % 2 == 0 ? s.Revert() : s.Commit();
        --depth;
      }
      return true;
    default:
      return false;
  }
}

}  // namespace tidepool::sched::testing
