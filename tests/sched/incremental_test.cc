// FitChecker::OnNodeAdded / OnPodAdded must leave the checker exactly where a fresh one built
// on the changed snapshot would be: checked here over seeded random clusters and pod shapes.
#include <gtest/gtest.h>

#include <random>

#include "sched/fit.h"
#include "tests/sched/builders.h"

namespace tidepool::sched {
namespace {

using testing::NodeBuilder;
using testing::PodBuilder;
using testing::SpreadOn;
using testing::Term;
using testing::TestCluster;

model::Pod Shape(int kind, const std::string& name, const std::string& app) {
  PodBuilder b(name);
  b.Requests({{"cpu", "500m"}, {"memory", "256Mi"}}).Label("app", app);
  switch (kind) {
    case 0:
      break;
    case 1:
      b.Spread(SpreadOn(std::string(model::kLabelZone), 1, {{"app", app}}));
      break;
    case 2:
      b.Spread(SpreadOn(std::string(model::kLabelHostname), 1, {{"app", app}}));
      break;
    case 3:
      b.Affinity(Term(std::string(model::kLabelZone), {{"app", app}}));
      break;
    default:
      b.AntiAffinity(Term(std::string(model::kLabelHostname), {{"app", app}}));
      break;
  }
  return b.Build();
}

model::Node RandomNode(std::mt19937& rng, int n) {
  NodeBuilder nb("node-" + std::to_string(n));
  nb.Allocatable({{"cpu", "4"}, {"memory", "16Gi"}, {"pods", "110"}})
      .Label(std::string(model::kLabelHostname), "node-" + std::to_string(n));
  if (rng() % 5 != 0) nb.Zone("zone-" + std::to_string(rng() % 3));  // some nodes lack a zone
  return nb.Build();
}

// One random change, told to the checker: a node added (one time in `node_odds`) or a pod of a
// random shape placed on a random node.
void RandomChange(std::mt19937& rng, TestCluster& c, FitChecker& checker, int& nodes, int step,
                  int node_odds) {
  if (rng() % node_odds == 0) {
    checker.OnNodeAdded(c.AddNode(RandomNode(rng, nodes++)));
    return;
  }
  std::string node = "node-" + std::to_string(rng() % nodes);
  const model::Pod* p = c.AddPod(Shape(static_cast<int>(rng() % 5), "new-" + std::to_string(step),
                                       "a" + std::to_string(rng() % 2)),
                                 node);
  checker.OnPodAdded(*p, c.Index(node));
}

TEST(FitCheckerIncremental, MatchesAFreshCheckerAfterEveryChange) {
  for (int seed = 1; seed <= 40; ++seed) {
    std::mt19937 rng(seed);
    TestCluster c;
    int nodes = 0;
    for (; nodes < 6; ++nodes) c.AddNode(RandomNode(rng, nodes));
    for (int i = 0; i < 10; ++i) {
      c.AddPod(Shape(static_cast<int>(rng() % 5), "old-" + std::to_string(i),
                     "a" + std::to_string(rng() % 2)),
               "node-" + std::to_string(rng() % nodes));
    }
    const model::Pod* incoming =
        c.Keep(Shape(static_cast<int>(rng() % 5), "incoming", "a" + std::to_string(rng() % 2)));
    FitChecker checker(*incoming, c.snapshot());
    for (int step = 0; step < 25; ++step) {
      RandomChange(rng, c, checker, nodes, step, 4);
      FitChecker fresh(*incoming, c.snapshot());
      for (NodeIndex i = 0; i < c.snapshot().NodeSlots(); ++i) {
        ASSERT_EQ(checker.Check(i).code, fresh.Check(i).code)
            << "seed " << seed << " step " << step << " node " << i;
      }
    }
  }
}

// Scale-up estimates skip the nodes a pod failed until SpreadLoosened() changes (the planner's
// PackCursor), so for a pod without required affinity no update may open a node it failed
// without changing it.
TEST(FitCheckerIncremental, OnlyARaisedSpreadMinimumOpensANode) {
  int opened_after_a_rise = 0;
  for (int seed = 1; seed <= 40; ++seed) {
    std::mt19937 rng(seed);
    TestCluster c;
    int nodes = 0;
    for (; nodes < 4; ++nodes) c.AddNode(RandomNode(rng, nodes));
    // Zone or hostname spread.
    const model::Pod* incoming = c.Keep(Shape(1 + static_cast<int>(rng() % 2), "incoming", "a0"));
    FitChecker checker(*incoming, c.snapshot());
    uint64_t loosened = checker.SpreadLoosened();
    std::vector<uint8_t> failed;  // per node: failed since `loosened` last changed
    std::vector<uint8_t> failed_before_rise;
    for (int step = 0; step < 60; ++step) {
      RandomChange(rng, c, checker, nodes, step, 6);
      if (checker.SpreadLoosened() != loosened) {
        loosened = checker.SpreadLoosened();
        failed_before_rise = failed;
        failed.assign(failed.size(), 0);
      }
      failed.resize(c.snapshot().NodeSlots(), 0);
      failed_before_rise.resize(failed.size(), 0);
      for (NodeIndex i = 0; i < c.snapshot().NodeSlots(); ++i) {
        if (!checker.Fits(i)) {
          failed[i] = 1;
          continue;
        }
        ASSERT_FALSE(failed[i]) << "seed " << seed << " step " << step << " node " << i
                                << " opened without a raised spread minimum";
        if (failed_before_rise[i]) ++opened_after_a_rise;
        failed_before_rise[i] = 0;
      }
    }
  }
  // The rises happen and open nodes: the test would see a missed one.
  EXPECT_GT(opened_after_a_rise, 0);
}

TEST(FitCheckerIncremental, PlacedAntiAffinityPodCreatesThePrecompute) {
  TestCluster c;
  NodeIndex n0 = c.AddNode(NodeBuilder("n0")
                               .Allocatable({{"cpu", "4"}, {"memory", "4Gi"}, {"pods", "10"}})
                               .Label(std::string(model::kLabelHostname), "n0")
                               .Build());
  const model::Pod* incoming =
      c.Keep(PodBuilder("web").Requests({{"cpu", "100m"}}).Label("app", "web").Build());
  FitChecker checker(*incoming, c.snapshot());  // nothing inter-pod in the cluster yet
  EXPECT_TRUE(checker.Check(n0).fits());
  const model::Pod* guard =
      c.AddPod(PodBuilder("guard")
                   .Requests({{"cpu", "100m"}})
                   .AntiAffinity(Term(std::string(model::kLabelHostname), {{"app", "web"}}))
                   .Build(),
               "n0");
  checker.OnPodAdded(*guard, n0);
  EXPECT_EQ(checker.Check(n0).code, FitCode::kExistingAntiAffinity);
}

}  // namespace
}  // namespace tidepool::sched
