// ConstraintLists: a walk over the positions its list keeps finds what a walk over every position
// finds, and pods of one NodeConstraintsKey pass the node-local filters on the same nodes.
#include "planner/constraint_lists.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "planner/equivalence.h"
#include "sched/fit.h"
#include "tests/sched/builders.h"

namespace tidepool::planner {
namespace {

using model::TaintEffect;
using model::TolerationOp;
using sched::testing::NodeBuilder;
using sched::testing::PodBuilder;
using sched::testing::TestCluster;

// What a walk of every position from `start` on and around finds.
size_t FullWalk(const std::vector<bool>& fits, size_t start) {
  const size_t n = fits.size();
  for (size_t k = 0; k < n; ++k)
    if (fits[(start + k) % n]) return (start + k) % n;
  return ConstraintLists::kNotFound;
}

// Random walks of a few sets over positions, or over their first ones only, that are appended
// (nodes a pass adds), dropped and taken by others (a revert, then Forget), and whose room fills
// and frees (where a pod fits
// changes; whether it passes its constraints does not, while the position holds one node). A
// position fits only where it passes.
TEST(ConstraintLists, AWalkFindsWhatAWalkOfEveryPositionFinds) {
  std::mt19937 rng(23);
  auto pick = [&rng](size_t n) { return static_cast<size_t>(rng() % n); };
  int made = 0, walks = 0, found = 0;
  for (int round = 0; round < 200; ++round) {
    constexpr size_t kSets = 3;
    ConstraintLists lists;
    std::vector<uint32_t> ids;
    for (size_t s = 0; s < kSets; ++s) {
      PodBuilder b(fmt::format("p{}", s));
      b.NodeSelector("set", std::to_string(s));
      ids.push_back(lists.IdOf(b.Build()));
    }
    std::vector<std::vector<bool>> passes(kSets), fits(kSets);
    auto append = [&](size_t count) {
      for (size_t s = 0; s < kSets; ++s) {
        for (size_t k = 0; k < count; ++k) {
          const bool p = pick(4) == 0;  // few positions pass: the lists get made
          passes[s].push_back(p);
          fits[s].push_back(p && pick(4) == 0);
        }
      }
    };
    append(20 + pick(80));  // most walks run past kShortWalk
    for (int step = 0; step < 60; ++step) {
      const size_t n = passes[0].size();
      switch (pick(8)) {
        case 0:
          append(1 + pick(5));
          break;
        case 1: {  // a revert drops the last positions; new nodes take them
          const size_t keep = 1 + pick(n);
          for (size_t s = 0; s < kSets; ++s) {
            passes[s].resize(keep);
            fits[s].resize(keep);
          }
          lists.Forget();
          append(pick(6));
          break;
        }
        case 2:  // room fills and frees
          for (size_t s = 0; s < kSets; ++s)
            for (size_t k = 0; k < n; ++k) fits[s][k] = passes[s][k] && pick(4) == 0;
          break;
        default: {
          const size_t s = pick(kSets);
          // Some walks cover the first positions only (scale-up's singles: the registered and
          // upcoming nodes), with lists made over more.
          const size_t upto = pick(3) == 0 ? 1 + pick(n) : n;
          const size_t start = pick(upto + 3);  // a hint may lie past the end
          auto set_of = [&] { return ids[s]; };
          auto passes_at = [&](size_t k) { return static_cast<bool>(passes[s][k]); };
          auto fits_at = [&](size_t k) {
            EXPECT_LT(k, upto);
            return static_cast<bool>(fits[s][k]);
          };
          // Half the walks pass over some of the positions that do not fit, as a room index
          // does (never over one that fits).
          std::vector<bool> skip(upto);
          for (size_t k = 0; k < upto; ++k) skip[k] = !fits[s][k] && pick(3) != 0;
          auto next = [&](size_t from, size_t end) {
            EXPECT_LE(end, upto);
            while (from < end && skip[from]) ++from;
            return from;
          };
          const size_t got = pick(2) == 0
                                 ? lists.Walk(set_of, upto, start, passes_at, fits_at)
                                 : lists.Walk(set_of, upto, start, passes_at, fits_at, next);
          const std::vector<bool> first(fits[s].begin(), fits[s].begin() + upto);
          ASSERT_EQ(got, FullWalk(first, start % upto)) << "round " << round << " step " << step;
          ++walks;
          found += got != ConstraintLists::kNotFound;
          made += lists.Made(ids[s]);
        }
      }
    }
  }
  // Both kinds of walk ran, and both found and missed.
  EXPECT_GT(made, walks / 20);  // walks that went through a list: 724 of 7,556
  EXPECT_LT(made, walks);
  EXPECT_GT(found, walks / 10);
  EXPECT_LT(found, walks);
}

// A set searched little gets no list: pods that fit where the last one did never pay for one,
// and a walk that ends within its first kShortWalk tries does not even ask for the set.
TEST(ConstraintLists, ASetGetsItsListOnceItsLongSearchesTriedEveryPosition) {
  constexpr size_t kShort = ConstraintLists::kShortWalk;
  constexpr size_t kN = 3 * kShort;
  ConstraintLists lists;
  const uint32_t id = lists.IdOf(PodBuilder("p").Build());
  int asked = 0;
  auto set_of = [&] {
    ++asked;
    return id;
  };
  auto passes = [](size_t) { return true; };
  auto at = [](size_t target) { return [target](size_t k) { return k == target; }; };
  EXPECT_EQ(lists.Walk(set_of, kN, 0, passes, at(kShort - 1)), kShort - 1);
  EXPECT_EQ(asked, 0);
  EXPECT_EQ(lists.Walk(set_of, kN, 0, passes, at(2 * kShort - 1)), 2 * kShort - 1);  // tried 32
  EXPECT_EQ(asked, 1);
  EXPECT_FALSE(lists.Made(id));
  EXPECT_EQ(lists.Walk(set_of, kN, 1, passes, at(kN - 1)), kN - 1);  // 79 in all
  EXPECT_FALSE(lists.Made(id));
  EXPECT_EQ(lists.Walk(set_of, kN, 5, passes, at(4)), 4u);  // 79 >= 48: made
  EXPECT_TRUE(lists.Made(id));
  EXPECT_EQ(asked, 3);
}

// A walk that passes over positions (a room index's blocks without room) counts only the ones it
// tried toward its set's list: two walks that pass over all but their answer make none, where two
// walks of every position do.
TEST(ConstraintLists, PositionsPassedOverDoNotCountTowardTheList) {
  constexpr size_t kN = 3 * ConstraintLists::kShortWalk;
  auto passes = [](size_t) { return true; };
  auto last = [](size_t k) { return k == kN - 1; };
  auto to_last = [](size_t from, size_t end) { return end == kN ? std::max(from, kN - 1) : end; };
  ConstraintLists passing, walking;
  const model::Pod pod = PodBuilder("p").Build();
  const uint32_t a = passing.IdOf(pod), b = walking.IdOf(pod);
  for (int k = 0; k < 2; ++k) {
    EXPECT_EQ(passing.Walk([&] { return a; }, kN, 0, passes, last, to_last), kN - 1);
    EXPECT_EQ(walking.Walk([&] { return b; }, kN, 0, passes, last), kN - 1);
  }
  EXPECT_FALSE(passing.Made(a));
  EXPECT_TRUE(walking.Made(b));
}

// Pods with one key pass the node-local filters on the same nodes: random pods that differ in
// every field those filters read (selector, required node affinity, tolerations, the cordon's
// toleration) and in one they do not (spec.nodeName), on random labelled, tainted and cordoned
// nodes.
TEST(NodeConstraintsKey, PodsWithOneKeyPassOnTheSameNodes) {
  std::mt19937 rng(29);
  auto pick = [&rng](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  TestCluster c;
  for (int n = 0; n < 24; ++n) {
    NodeBuilder b(fmt::format("n{}", n));
    b.Label("pool", pick(2) == 0 ? "a" : "b");
    if (pick(2) == 0) b.Label("zone", pick(2) == 0 ? "z1" : "z2");
    if (pick(3) == 0) b.Taint("gpu", "true", TaintEffect::kNoSchedule);
    if (pick(4) == 0) b.Taint("spot", "true", TaintEffect::kNoSchedule);
    if (pick(5) == 0) b.Unschedulable();
    c.AddNode(b.Build());
  }
  std::vector<model::Pod> pods;
  for (int k = 0; k < 400; ++k) {
    PodBuilder b(fmt::format("p{}", k));
    if (pick(2) == 0) b.NodeSelector("pool", pick(2) == 0 ? "a" : "b");
    if (pick(3) == 0) {
      b.NodeAffinityTerm({{"zone", model::SelectorOp::kIn, {pick(2) == 0 ? "z1" : "z2"}}});
    }
    if (pick(2) == 0) b.Tolerate("gpu", TolerationOp::kExists);
    if (pick(3) == 0) b.Tolerate("spot", TolerationOp::kEqual, "true");
    if (pick(4) == 0) b.Tolerate("node.kubernetes.io/unschedulable", TolerationOp::kExists);
    if (pick(2) == 0) b.NodeName(fmt::format("n{}", pick(24)));
    pods.push_back(b.Build());
  }
  int same_key = 0, passes_differ = 0;
  for (size_t i = 0; i < pods.size(); ++i) {
    for (size_t j = i + 1; j < pods.size(); ++j) {
      bool differ = false;
      for (sched::NodeIndex n = 0; n < c.snapshot().NodeSlots(); ++n) {
        const sched::NodeInfo& info = c.snapshot().Get(n);
        differ |= sched::PassesNodeConstraints(pods[i], info) !=
                  sched::PassesNodeConstraints(pods[j], info);
      }
      if (NodeConstraintsKey(pods[i]) != NodeConstraintsKey(pods[j])) {
        passes_differ += differ;
        continue;
      }
      ++same_key;
      ASSERT_FALSE(differ) << pods[i].meta.name << " and " << pods[j].meta.name;
    }
  }
  EXPECT_GT(same_key, 100);
  EXPECT_GT(passes_differ, 1000);
}

}  // namespace
}  // namespace tidepool::planner
