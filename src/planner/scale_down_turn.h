// Which candidates a bounded unneeded pass weighs (scaleDown.candidatesPerPass). Simulating the
// drain of every candidate costs a placement per pod moved: on a cluster of 50,000 nodes with a
// tenth of them underutilized, 100,000 placements at every pass, while the rate limits let only
// a few nodes go at a time. The Cluster Autoscaler bounds the same work
// (--scale-down-non-empty-candidates-count). A bounded pass weighs the nodes the last pass found
// unneeded first, so their unneededTime keeps running, and then the others in name order from
// where the last pass stopped, so every candidate has its turn.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace tidepool::planner {

struct CandidateTurn {
  // The most candidates with pods to move one pass weighs; 0: every one. Empty candidates cost
  // no placement and are always weighed.
  size_t at_most = 0;
  // Nodes the last unneeded pass found removable (weighed first); unset: none.
  std::function<bool(std::string_view)> unneeded_before;
  // The others are taken in name order after this name, wrapping around ("": from the first).
  std::string after;
};

// A candidate with pods to move, and its place in the pass's order (emptiest first).
struct TurnCandidate {
  std::string_view name;
  uint32_t rank = 0;
};

// `by_name`: the candidates with pods to move, in name order. Returns, slot by slot, whether the
// pass weighs each, and sets `ends_at` to where the next pass's turn starts: the last name taken
// in turn (`turn.after` when none was), or "" when every candidate is weighed. Of more nodes
// unneeded before than the bound, the first in the pass's order are weighed.
std::vector<bool> ChooseTurn(const std::vector<TurnCandidate>& by_name, const CandidateTurn& turn,
                             std::string& ends_at);

}  // namespace tidepool::planner
