// scaleDown.candidatesPerPass: which candidates a bounded unneeded pass weighs (ChooseTurn), and
// the plan of such a pass.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>
#include <vector>

#include "planner/scale_down_turn.h"
#include "tests/planner/scale_down_cluster.h"

namespace tidepool::planner {
namespace {

using scale_down_testing::Cluster;
using scale_down_testing::KeepReason;
using scale_down_testing::Names;
using scale_down_testing::Removed;
using scale_down_testing::Render;
using ::testing::HasSubstr;

// Candidates in name order, ranked by the place of each in `pass_order`.
std::vector<TurnCandidate> ByName(const std::vector<std::string_view>& pass_order) {
  std::vector<TurnCandidate> out;
  for (size_t i = 0; i < pass_order.size(); ++i)
    out.push_back({pass_order[i], static_cast<uint32_t>(i)});
  std::sort(out.begin(), out.end(),
            [](const TurnCandidate& a, const TurnCandidate& b) { return a.name < b.name; });
  return out;
}

std::vector<std::string> Weighed(const std::vector<TurnCandidate>& by_name,
                                 const std::vector<bool>& weighed) {
  std::vector<std::string> out;
  for (size_t i = 0; i < by_name.size(); ++i)
    if (weighed[i]) out.emplace_back(by_name[i].name);
  return out;
}

TEST(ChooseTurn, WeighsEveryNameWithinTheBound) {
  const std::vector<TurnCandidate> names = ByName({"c", "a", "b"});
  std::string ends_at = "stale";
  for (size_t at_most : {0u, 3u, 10u}) {
    std::vector<bool> w = ChooseTurn(names, {.at_most = at_most, .after = "b"}, ends_at);
    EXPECT_EQ(w, std::vector<bool>(3, true)) << at_most;
    EXPECT_EQ(ends_at, "") << at_most;
  }
}

// The nodes unneeded before first, wherever the pass's order has them; then the others by name
// after `after`, wrapping around.
TEST(ChooseTurn, UnneededFirstThenTheOthersByNameAfterTheCursor) {
  const std::vector<TurnCandidate> names = ByName({"e", "b", "d", "a", "c", "f"});
  auto before = [](std::string_view n) { return n == "f"; };
  std::string ends_at;
  std::vector<bool> w = ChooseTurn(names, {3, before, "c"}, ends_at);
  EXPECT_EQ(Weighed(names, w), (Names{"d", "e", "f"}));
  EXPECT_EQ(ends_at, "e");
  w = ChooseTurn(names, {3, before, "e"}, ends_at);  // wraps: f is taken as unneeded, then a, b
  EXPECT_EQ(Weighed(names, w), (Names{"a", "b", "f"}));
  EXPECT_EQ(ends_at, "b");
  // A cursor that names no candidate (a node gone since) starts at the next name.
  w = ChooseTurn(names, {2, nullptr, "bb"}, ends_at);
  EXPECT_EQ(Weighed(names, w), (Names{"c", "d"}));
  EXPECT_EQ(ends_at, "d");
}

// More nodes unneeded before than the bound: the first ones in the pass's order; the rest wait
// their turn like any other, and the cursor stays where it was when none is taken in turn.
TEST(ChooseTurn, UnneededBeyondTheBoundTakeTheirTurn) {
  const std::vector<TurnCandidate> names = ByName({"d", "c", "b", "a"});
  auto all = [](std::string_view) { return true; };
  std::string ends_at;
  std::vector<bool> w = ChooseTurn(names, {2, all, "b"}, ends_at);
  EXPECT_EQ(Weighed(names, w), (Names{"c", "d"}));
  EXPECT_EQ(ends_at, "b");
}

// Without nodes unneeded before, passes that each start where the last ended weigh every
// candidate within ceil(n / bound) passes, whatever the order of the pass.
TEST(ChooseTurn, EveryCandidateHasItsTurnWithinAFewPasses) {
  std::mt19937 rng(5);
  for (int round = 0; round < 200; ++round) {
    const size_t n = 1 + rng() % 40, at_most = 1 + rng() % 12;
    std::vector<std::string> owned;
    for (size_t i = 0; i < n; ++i)
      owned.push_back("node-" + std::to_string(rng() % 1000) + "-" + std::to_string(i));
    std::set<std::string> seen;
    std::string after;
    const size_t passes = (n + at_most - 1) / at_most;
    for (size_t p = 0; p < passes; ++p) {
      std::shuffle(owned.begin(), owned.end(), rng);  // each pass orders its candidates anew
      const std::vector<TurnCandidate> names =
          ByName(std::vector<std::string_view>(owned.begin(), owned.end()));
      std::string ends_at;
      std::vector<bool> w = ChooseTurn(names, {.at_most = at_most, .after = after}, ends_at);
      std::vector<std::string> taken = Weighed(names, w);
      ASSERT_EQ(taken.size(), std::min(n, at_most));
      seen.insert(taken.begin(), taken.end());
      after = ends_at;
    }
    EXPECT_EQ(seen.size(), n) << "n " << n << " at most " << at_most;
  }
}

// Six nodes that could each go, one busy node with room for all their pods: a pass bounded to
// two weighs the node unneeded before and the next name in turn; the others stay, saying why.
TEST(CandidateTurn, ABoundedPassWeighsUnneededFirstAndTheNextInTurn) {
  Cluster c;
  for (std::string n : {"n1", "n2", "n3", "n4", "n5", "n6"}) {
    c.AddNode(n);
    c.AddPod("p-" + n, n, {{"cpu", "200m"}});
  }
  c.AddNode("big", "cpupool", {{"cpu", "16"}, {"memory", "64Gi"}});
  c.AddPod("busy", "big", {{"cpu", "9"}});
  c.AddNode("empty");  // empty: always weighed, not counted
  ScaleDownOptions o = scale_down_testing::NoRateLimit();
  ScaleDownPlan all = c.Plan(o);
  ASSERT_EQ(all.scale_downs.size(), 7u) << Render(all);
  EXPECT_EQ(all.turn_ends_at, "");

  o.turn = {2, [](std::string_view n) { return n == "n5"; }, "n2"};
  for (bool on_model : {false, true}) {
    ScaleDownPlan plan = on_model ? c.PlanOnModel(o) : c.Plan(o);
    std::vector<std::string> removed = Removed(plan);
    std::sort(removed.begin(), removed.end());
    EXPECT_EQ(removed, (Names{"empty", "n3", "n5"})) << Render(plan);
    EXPECT_EQ(plan.turn_ends_at, "n3");
    for (std::string n : {"n1", "n2", "n4", "n6"}) {
      EXPECT_EQ(KeepReason(plan, n),
                "not weighed in this pass: scaleDown.candidatesPerPass 2 reached (it has its turn "
                "in a later pass)")
          << n;
    }
    EXPECT_THAT(KeepReason(plan, "big"), HasSubstr("utilization"));
  }
}

}  // namespace
}  // namespace tidepool::planner
