// With the priority expander first, scale-up does not estimate the pools of a lower priority than
// an option that places pods (PackCandidates): none of them could win. Hand-computed cases, then
// a differential property against estimating every candidate
// (ScaleUpOptions::estimate_outranked).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "model/pod.h"
#include "model/pool.h"
#include "planner/scale_up.h"
#include "tests/planner/diverse_world.h"

namespace tidepool::planner {
namespace {

using testing::AddRandomDiversePods;
using testing::AddRandomPools;
using testing::Adds;
using ::testing::HasSubstr;
using testing::Pending;
using testing::RenderPlan;
using testing::Shape;
using testing::World;

// Three 3-cpu pods; pools of 4 cpus: "spot" at priority 10, "od" at 0, in different zones so
// that they are not one family. Spot takes all three, and the reason still names on-demand among
// the pools it was chosen over, by priority, though on-demand was not estimated.
struct TwoPriorities {
  World w;
  ScaleUpPlan Plan(const ScaleUpOptions& options = {}) const { return w.Plan(options); }
  TwoPriorities() {
    w.config.pools = {Shape("od", "4", "16Gi", 2, "z1"), Shape("spot", "4", "16Gi", 1, "z2")};
    w.config.pools[1].priority = 10;
    w.config.scale_up.expanders = {"priority", "least-waste"};
    for (const char* name : {"a", "b", "c"}) w.pods.push_back(Pending(name, "3"));
  }
};

TEST(Outranked, TheHigherPriorityWinsAndTheReasonNamesTheOther) {
  TwoPriorities t;
  ScaleUpPlan plan = t.Plan();
  EXPECT_EQ(Adds(plan), (std::map<std::string, int>{{"spot", 3}})) << RenderPlan(plan);
  ASSERT_EQ(plan.scale_ups.size(), 1u);
  EXPECT_THAT(plan.scale_ups[0].reason, HasSubstr("chosen over od by priority 10"));
  // Estimating on-demand too gives the same words.
  EXPECT_EQ(t.Plan({.estimate_outranked = true}).scale_ups[0].reason, plan.scale_ups[0].reason);
}

// Spot may add one node: its estimate places one pod, so on-demand is outranked in the first
// round; in the next, spot is at its max and on-demand, estimated now, takes the other two.
TEST(Outranked, ALowerPriorityIsEstimatedOnceTheHigherOnePlacesNothing) {
  TwoPriorities t;
  t.w.config.pools[1].max = 1;
  ScaleUpPlan plan = t.Plan();
  EXPECT_EQ(Adds(plan), (std::map<std::string, int>{{"od", 2}, {"spot", 1}})) << RenderPlan(plan);
  EXPECT_EQ(RenderPlan(plan), RenderPlan(t.Plan({.estimate_outranked = true})));
}

// Without priority first, priority decides nothing: "od" (first in name order) now has the
// higher priority, and spot, cheaper, must still be estimated and win by price.
TEST(Outranked, WithoutPriorityFirstEveryCandidateIsEstimated) {
  TwoPriorities t;
  t.w.config.pools[0].priority = 20;
  t.w.config.scale_up.expanders = {"price"};
  ScaleUpPlan plan = t.Plan();
  EXPECT_EQ(Adds(plan), (std::map<std::string, int>{{"spot", 3}})) << RenderPlan(plan);
  // With priority first, od's higher priority wins.
  t.w.config.scale_up.expanders = {"priority", "price"};
  plan = t.Plan();
  EXPECT_EQ(Adds(plan), (std::map<std::string, int>{{"od", 3}})) << RenderPlan(plan);
}

// Random pools (one to three zones and shapes, priorities 0-1, maxima that bind at times) and
// diverse pods, under chains that start with priority, with and without families: not estimating
// the outranked candidates plans what estimating every one plans.
TEST(Outranked, PlansWhatEstimatingEveryCandidatePlans) {
  int mixed = 0;
  for (uint64_t seed = 1; seed <= 600; ++seed) {
    std::mt19937_64 rng(seed);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
    World w;
    w.config.scale_up.expanders = std::vector<std::vector<std::string>>{{"priority", "least-waste"},
                                                                        {"priority", "price"},
                                                                        {"priority", "most-pods"},
                                                                        {"priority", "random"},
                                                                        {"priority"}}[pick(5)];
    AddRandomPools(w, pick);
    std::map<int, int> priorities;
    for (model::Pool& p : w.config.pools) ++priorities[p.priority = pick(2)];
    AddRandomDiversePods(w, pick);
    // Without families, every pool is a candidate of its own: more of one priority.
    const bool flexible = pick(2) == 0;
    ScaleUpPlan skipping = w.Plan({.flexible_nodes = flexible});
    ScaleUpPlan every = w.Plan({.flexible_nodes = flexible, .estimate_outranked = true});
    ASSERT_EQ(RenderPlan(skipping), RenderPlan(every)) << "seed " << seed;
    if (priorities.size() > 1 && !skipping.scale_ups.empty()) ++mixed;
  }
  EXPECT_GT(mixed, 300);  // most cases have candidates of several priorities
}

}  // namespace
}  // namespace tidepool::planner
