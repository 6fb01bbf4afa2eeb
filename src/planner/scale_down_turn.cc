#include "planner/scale_down_turn.h"

#include <algorithm>

namespace tidepool::planner {

std::vector<bool> ChooseTurn(const std::vector<std::string_view>& names, const CandidateTurn& turn,
                             std::string& ends_at) {
  ends_at.clear();
  if (turn.at_most == 0 || names.size() <= turn.at_most)
    return std::vector<bool>(names.size(), true);
  ends_at = turn.after;  // where it stays when the nodes unneeded before take every place
  std::vector<bool> weighed(names.size(), false);
  size_t taken = 0;
  std::vector<size_t> others;  // slots, to be taken in name order
  for (size_t i = 0; i < names.size(); ++i) {
    if (taken < turn.at_most && turn.unneeded_before && turn.unneeded_before(names[i])) {
      weighed[i] = true;
      ++taken;
    } else {
      others.push_back(i);
    }
  }
  std::sort(others.begin(), others.end(), [&](size_t a, size_t b) { return names[a] < names[b]; });
  auto first = std::upper_bound(others.begin(), others.end(), std::string_view(turn.after),
                                [&](std::string_view after, size_t i) { return after < names[i]; });
  // From `first` to the end, then from the start: the names after `after`, wrapping around.
  std::rotate(others.begin(), first, others.end());
  for (size_t i : others) {
    if (taken == turn.at_most) break;
    weighed[i] = true;
    ++taken;
    ends_at = std::string(names[i]);
  }
  return weighed;
}

}  // namespace tidepool::planner
