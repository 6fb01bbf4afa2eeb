#include "planner/scale_down_turn.h"

#include <algorithm>

namespace tidepool::planner {

std::vector<bool> ChooseTurn(const std::vector<TurnCandidate>& by_name, const CandidateTurn& turn,
                             std::string& ends_at) {
  ends_at.clear();
  const size_t n = by_name.size();
  if (turn.at_most == 0 || n <= turn.at_most) return std::vector<bool>(n, true);
  ends_at = turn.after;  // where it stays when the nodes unneeded before take every place
  std::vector<bool> weighed(n, false);
  std::vector<size_t> before;  // slots of the nodes unneeded before
  if (turn.unneeded_before) {
    for (size_t i = 0; i < n; ++i)
      if (turn.unneeded_before(by_name[i].name)) before.push_back(i);
  }
  if (before.size() > turn.at_most) {
    std::nth_element(before.begin(), before.begin() + static_cast<long>(turn.at_most), before.end(),
                     [&](size_t a, size_t b) { return by_name[a].rank < by_name[b].rank; });
    before.resize(turn.at_most);
  }
  for (size_t i : before) weighed[i] = true;
  size_t taken = before.size();
  // The others in name order after `after`, wrapping around.
  auto first = std::upper_bound(
      by_name.begin(), by_name.end(), std::string_view(turn.after),
      [](std::string_view after, const TurnCandidate& c) { return after < c.name; });
  const size_t start = static_cast<size_t>(first - by_name.begin());
  for (size_t k = 0; k < n && taken < turn.at_most; ++k) {
    const size_t i = (start + k) % n;
    if (weighed[i]) continue;
    weighed[i] = true;
    ++taken;
    ends_at = std::string(by_name[i].name);
  }
  return weighed;
}

}  // namespace tidepool::planner
