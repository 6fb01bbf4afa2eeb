// Zone twins (scaleUp.balanceZones): families that differ only in their zone share one
// estimate, which opens each new node in the twin with the fewest nodes that takes its pod.
// Hand-computed cases.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "model/node.h"
#include "model/pod.h"
#include "model/pool.h"
#include "planner/scale_up.h"
#include "tests/planner/diverse_world.h"
#include "tests/testing/values.h"

namespace tidepool::planner {
namespace {

using testing::AddRandomDiversePods;
using testing::Adds;
using testing::DiverseKind;
using testing::DiversePod;
using testing::RenderPlan;
using testing::Shape;
using testing::World;

// A 3-cpu pod of a ReplicaSet: a 4-cpu node holds one.
model::Pod Big(std::string name) {
  return DiversePod(std::move(name), DiverseKind::kGeneric, "", "3", "1Gi");
}

std::string render_zones(const std::map<std::string, int>& per_zone) {
  std::string out;
  for (const auto& [zone, n] : per_zone) out += fmt::format("{}={} ", zone, n);
  return out;
}

// One 4-cpu pool per zone at one price.
World ThreeZones() {
  World w;
  for (std::string zone : {"z1", "z2", "z3"})
    w.config.pools.push_back(Shape("c4-" + zone, "4", "16Gi", 1, zone));
  return w;
}

// Six pods that need a node each: two nodes per zone, where without balancing the first zone's
// pool takes all six.
TEST(ZoneTwins, NodesGoRoundTheZones) {
  World w = ThreeZones();
  for (int i = 0; i < 6; ++i) w.pods.push_back(Big(fmt::format("p{}", i)));
  EXPECT_EQ(Adds(w.Plan()), (std::map<std::string, int>{{"c4-z1", 2}, {"c4-z2", 2}, {"c4-z3", 2}}));
  w.config.scale_up.balance_zones = false;
  EXPECT_EQ(Adds(w.Plan()), (std::map<std::string, int>{{"c4-z1", 6}}));
}

// A gang's members stay in one zone: a distributed run split over zones pays for every exchange
// between them. The same pods without the gang label go round the zones.
TEST(ZoneTwins, AGangStaysInOneZone) {
  World w = ThreeZones();
  for (int i = 0; i < 4; ++i) {
    w.pods.push_back(Big(fmt::format("m{}", i)));
    w.pods.back().meta.labels["scheduling.x-k8s.io/pod-group"] = "llm";
    w.pods.back().Finalize();
  }
  ScaleUpPlan plan = w.Plan();
  EXPECT_TRUE(plan.unschedulable.empty());
  EXPECT_EQ(Adds(plan), (std::map<std::string, int>{{"c4-z1", 4}}));
  for (model::Pod& p : w.pods) {
    p.meta.labels.erase("scheduling.x-k8s.io/pod-group");
    p.Finalize();
  }
  EXPECT_EQ(Adds(w.Plan()), (std::map<std::string, int>{{"c4-z1", 2}, {"c4-z2", 1}, {"c4-z3", 1}}));
}

// A pod bound to a zone by its node selector opens its node there; the others go round.
TEST(ZoneTwins, APodBoundToAZoneGetsANodeInIt) {
  World w = ThreeZones();
  model::Pod bound = Big("bound");
  bound.node_selector[std::string(model::kLabelZone)] = "z3";
  bound.Finalize();
  w.pods.push_back(bound);
  for (int i = 0; i < 3; ++i) w.pods.push_back(Big(fmt::format("p{}", i)));
  ScaleUpPlan plan = w.Plan();
  EXPECT_TRUE(plan.unschedulable.empty());
  ASSERT_EQ(plan.new_nodes.size(), 4u);
  int in_z3 = 0;
  for (const NewNode& n : plan.new_nodes) {
    if (n.pool == "c4-z3") ++in_z3;
    if (n.pods == std::vector<std::string>{"default/bound"}) {
      EXPECT_EQ(n.pool, "c4-z3");
    }
  }
  EXPECT_EQ(in_z3, 1);
  EXPECT_EQ(Adds(plan), (std::map<std::string, int>{{"c4-z1", 2}, {"c4-z2", 1}, {"c4-z3", 1}}));
}

// Pools whose prices differ are not twins: the cheaper zone takes every node.
TEST(ZoneTwins, DifferentPricesAreNotTwins) {
  World w = ThreeZones();
  w.config.pools[1].price_per_hour = 2;
  w.config.pools[2].price_per_hour = 2;
  w.config.scale_up.expanders = {"price"};
  for (int i = 0; i < 6; ++i) w.pods.push_back(Big(fmt::format("p{}", i)));
  EXPECT_EQ(Adds(w.Plan()), (std::map<std::string, int>{{"c4-z1", 6}}));
}

// A twin at its max takes no more; the others share what is left, a node apart at most.
TEST(ZoneTwins, ATwinAtItsMaxLeavesTheRestToTheOthers) {
  World w = ThreeZones();
  w.config.pools[0].max = 1;
  for (int i = 0; i < 6; ++i) w.pods.push_back(Big(fmt::format("p{}", i)));
  ScaleUpPlan plan = w.Plan();
  EXPECT_TRUE(plan.unschedulable.empty());
  EXPECT_EQ(Adds(plan), (std::map<std::string, int>{{"c4-z1", 1}, {"c4-z2", 3}, {"c4-z3", 2}}));
}

// The cluster's limit on nodes counts the nodes of every twin: four of six pods get one.
TEST(ZoneTwins, TheClusterLimitCountsEveryTwinsNodes) {
  World w = ThreeZones();
  w.config.limits.max_nodes = 4;
  for (int i = 0; i < 6; ++i) w.pods.push_back(Big(fmt::format("p{}", i)));
  ScaleUpPlan plan = w.Plan();
  int added = 0;
  for (const auto& u : plan.scale_ups) added += u.add;
  EXPECT_EQ(added, 4);
  EXPECT_EQ(plan.unschedulable.size(), 2u);
}

// The same for one family of several shapes: a node of 16 cpu takes five pods and one of 4 cpu
// would take the sixth, but the nodes of every shape count against the limit of one.
TEST(ZoneTwins, TheClusterLimitCountsEveryShapesNodes) {
  World w;
  w.config.pools = {Shape("c4", "4", "16Gi", 1), Shape("c16", "16", "64Gi", 4)};
  w.config.limits.max_nodes = 1;
  for (int i = 0; i < 6; ++i) w.pods.push_back(Big(fmt::format("p{}", i)));
  ScaleUpPlan plan = w.Plan();
  EXPECT_EQ(Adds(plan), (std::map<std::string, int>{{"c16", 1}}));
  EXPECT_EQ(plan.unschedulable.size(), 1u);
}

// The diverse mix in small: six pods that exclude each other by hostname and six zone-spread
// pods, shapes of 2, 4 and 8 cpu in three zones at one price per cpu. Balanced, the spread pods
// share the six nodes the others open (two per zone, each of 2 cpu). Filling one zone first,
// the six nodes are in z1 and the spread pods, which may put only one more there than in the
// emptiest zone, need nodes of their own in z2 and z3.
TEST(ZoneTwins, SpreadPodsShareTheNodesOthersOpenInEveryZone) {
  World w;
  for (std::string zone : {"z1", "z2", "z3"}) {
    w.config.pools.push_back(Shape("c2-" + zone, "2", "8Gi", 2, zone));
    w.config.pools.push_back(Shape("c4-" + zone, "4", "16Gi", 4, zone));
    w.config.pools.push_back(Shape("c8-" + zone, "8", "32Gi", 8, zone));
  }
  w.config.scale_up.expanders = {"price"};
  for (int i = 0; i < 6; ++i) {
    w.pods.push_back(
        DiversePod(fmt::format("anti{}", i), DiverseKind::kAntiAffinity, "", "1", "1Gi"));
    w.pods.push_back(
        DiversePod(fmt::format("spread{}", i), DiverseKind::kZoneSpread, "a", "1", "1Gi"));
  }
  ScaleUpPlan plan = w.Plan();
  EXPECT_TRUE(plan.unschedulable.empty());
  EXPECT_EQ(Adds(plan), (std::map<std::string, int>{{"c2-z1", 2}, {"c2-z2", 2}, {"c2-z3", 2}}));
  w.config.scale_up.balance_zones = false;
  ScaleUpPlan one_zone = w.Plan();
  EXPECT_TRUE(one_zone.unschedulable.empty());
  int nodes = 0;
  for (const auto& u : one_zone.scale_ups) nodes += u.add;
  EXPECT_GT(nodes, 6);
}

// Random twins: 2-3 zones with the same 1-3 shapes, pods of every diverse kind, pools' max binding
// at times. Packing with placement cursors plans what full scans plan, as without twins; and
// over the sample, balancing leaves no more pods unplaced, opens no more nodes and, where both
// leave the same number of pods over, costs no more than filling one zone per round.
TEST(ZoneTwins, RandomTwinsPlanAsFullScansAndCostNoMore) {
  const std::vector<std::string> cpus = {"2", "4", "8", "16"};
  struct Totals {
    int nodes = 0, left = 0;
    double price = 0, price_same_left = 0;
  } on, off;
  auto price = [](const ScaleUpPlan& plan, const World& w) {
    double total = 0;
    for (const auto& u : plan.scale_ups) total += u.add * w.config.FindPool(u.pool)->price_per_hour;
    return total;
  };
  auto add = [&](Totals& t, const ScaleUpPlan& plan, const World& w, bool same_left) {
    for (const auto& u : plan.scale_ups) t.nodes += u.add;
    t.left += static_cast<int>(plan.unschedulable.size());
    t.price += price(plan, w);
    if (same_left) t.price_same_left += price(plan, w);
  };
  int same_left_cases = 0;
  for (uint64_t seed = 1; seed <= 1000; ++seed) {
    std::mt19937_64 rng(seed);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
    World w;
    w.config.scale_up.expanders = std::vector<std::vector<std::string>>{
        {"price"}, {"least-waste"}, {"priority", "least-waste"}}[pick(3)];
    int zones = 2 + pick(2), shapes = 1 + pick(3);
    std::vector<int> sizes;
    for (int s = 0; s < shapes; ++s) sizes.push_back(pick(4));
    for (int z = 0; z < zones; ++z) {
      for (int s = 0; s < shapes; ++s) {
        int c = sizes[s];
        w.config.pools.push_back(Shape(fmt::format("z{}s{}", z, s), cpus[c],
                                       fmt::format("{}Gi", 4 << c), 1 << c, fmt::format("z{}", z)));
        w.config.pools.back().max = 1 + pick(pick(2) ? 4 : 12);
      }
    }
    AddRandomDiversePods(w, pick);
    ScaleUpPlan balanced = w.Plan();
    ASSERT_EQ(RenderPlan(balanced), RenderPlan(w.Plan({.placement_cursors = false})))
        << "seed " << seed;
    w.config.scale_up.balance_zones = false;
    ScaleUpPlan one_zone = w.Plan();
    bool same_left = balanced.unschedulable.size() == one_zone.unschedulable.size();
    same_left_cases += same_left;
    add(on, balanced, w, same_left);
    add(off, one_zone, w, same_left);
  }
  fmt::print(
      "balanced: {} nodes, price {:.0f}, {} left; one zone per round: {} nodes, price "
      "{:.0f}, {} left; where as many are left ({} cases): price {:.0f} vs {:.0f}\n",
      on.nodes, on.price, on.left, off.nodes, off.price, off.left, same_left_cases,
      on.price_same_left, off.price_same_left);
  EXPECT_LE(on.left, off.left);
  EXPECT_LE(on.nodes, off.nodes);
  EXPECT_LE(on.price_same_left, off.price_same_left);
  EXPECT_GT(same_left_cases, 500);
}

// Pods that ask nothing of zones, no limit binding and no node dropped afterwards: the zones'
// node counts end at most one apart.
TEST(ZoneTwins, UnboundPodsLeaveTheZonesANodeApartAtMost) {
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    std::mt19937_64 rng(seed);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
    World w;
    int zones = 2 + pick(2);
    for (int z = 0; z < zones; ++z) {
      w.config.pools.push_back(
          Shape(fmt::format("a-z{}", z), "4", "16Gi", 4, fmt::format("z{}", z)));
      w.config.pools.push_back(
          Shape(fmt::format("b-z{}", z), "8", "32Gi", 8, fmt::format("z{}", z)));
    }
    const DiverseKind kinds[] = {DiverseKind::kGeneric, DiverseKind::kHostnameSpread,
                                 DiverseKind::kAntiAffinity};
    int pods = 1 + pick(60);
    for (int i = 0; i < pods; ++i) {
      w.pods.push_back(DiversePod(fmt::format("p{}", i), kinds[pick(3)],
                                  std::string(1, static_cast<char>('a' + pick(3))),
                                  std::vector<std::string>{"250m", "1", "3"}[pick(3)], "1Gi"));
    }
    ScaleUpPlan plan = w.Plan({.compact_new_nodes = false});
    EXPECT_TRUE(plan.unschedulable.empty()) << "seed " << seed;
    std::map<std::string, int> per_zone;
    for (int z = 0; z < zones; ++z) per_zone[fmt::format("z{}", z)] = 0;
    for (const auto& u : plan.scale_ups) per_zone[u.pool.substr(u.pool.size() - 2)] += u.add;
    auto [lo, hi] =
        std::minmax_element(per_zone.begin(), per_zone.end(),
                            [](const auto& a, const auto& b) { return a.second < b.second; });
    EXPECT_LE(hi->second - lo->second, 1) << "seed " << seed << ": " << render_zones(per_zone);
  }
}

}  // namespace
}  // namespace tidepool::planner
