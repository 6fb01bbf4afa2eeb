// Topology spread when scaling from zero: the zones the eligible pools offer count as domains
// with no pods, so new nodes go across them, each holding what maxSkew allows in its zone; and
// hostname spread opens no more nodes than the skew needs. Each plan is replayed: its nodes join
// a snapshot and kube-scheduler's Filter (FitChecker, without offered domains) places every pod.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "model/node.h"
#include "model/pod.h"
#include "model/pool.h"
#include "planner/scale_up.h"
#include "sched/fit.h"
#include "sched/snapshot.h"
#include "tests/testing/values.h"

namespace tidepool::planner {
namespace {

using tidepool::testing::Res;

model::Pool ZonePool(std::string name, std::string zone, std::string cpu = "4",
                     std::string pods = "110") {
  model::Pool p;
  p.name = std::move(name);
  p.max = 100;
  p.price_per_hour = 1;
  model::Node& t = p.template_node;
  t.meta.name = "template-" + p.name;
  t.meta.labels[std::string(model::kLabelPool)] = p.name;
  t.meta.labels[std::string(model::kLabelZone)] = std::move(zone);
  t.capacity = Res({{"cpu", cpu}, {"memory", "16Gi"}, {"pods", pods}});
  t.allocatable = t.capacity;
  t.ready = true;
  return p;
}

model::TopologySpreadConstraint Spread(std::string_view key, int max_skew,
                                       std::optional<int> min_domains = std::nullopt) {
  model::TopologySpreadConstraint c;
  c.topology_key = std::string(key);
  c.max_skew = max_skew;
  c.min_domains = min_domains;
  c.label_selector.match_labels["app"] = "spread";
  c.has_label_selector = true;
  return c;
}

model::Pod SpreadPod(std::string name, model::TopologySpreadConstraint c, std::string cpu = "1",
                     std::string memory = "1Gi") {
  model::Pod p;
  p.meta.name = std::move(name);
  p.meta.namespace_ = "default";
  p.meta.labels["app"] = "spread";
  p.meta.owner_references.push_back({"apps/v1", "ReplicaSet", "rs", "rs-uid", true});
  p.containers.push_back({.name = "main", .requests = Res({{"cpu", cpu}, {"memory", memory}})});
  p.mutable_topology_spread_constraints().push_back(std::move(c));
  p.Finalize();
  return p;
}

struct World {
  model::AutoscalerConfig config;
  std::vector<model::Node> nodes;
  std::vector<model::Pod> pods;

  PlannerInput Input() const {
    PlannerInput in;
    in.config = &config;
    for (const auto& n : nodes) in.nodes.push_back(&n);
    for (const auto& p : pods) in.pods.push_back(&p);
    return in;
  }
  ScaleUpPlan Plan() const { return ScaleUpPlanner().Plan(Input()); }

  // Nodes per pool and planned pods per pool, as {pool: {nodes, pods}}.
  static std::map<std::string, std::pair<int, int>> Shape(const ScaleUpPlan& plan) {
    std::map<std::string, std::pair<int, int>> shape;
    for (const auto& u : plan.scale_ups) shape[u.pool] = {u.add, static_cast<int>(u.pods.size())};
    return shape;
  }

  // The pods that fit a registered node are placed first, as they are now; then the plan's nodes
  // join (pool templates with their own hostnames) and kube-scheduler places the pods of each
  // scale-up, one at a time, preferring the nodes of the pool grown for them, the one with the
  // fewest pods first, among those its Filter (FitChecker, no offered domains) accepts. Returns
  // the pods it could not place.
  std::vector<std::string> Replay(const ScaleUpPlan& plan) const {
    sched::ClusterSnapshot snap;
    std::deque<model::Node> added;
    for (const auto& n : nodes) (void)snap.AddNode(&n);
    for (const auto& p : pods)
      if (!p.node_name.empty()) (void)snap.AddPod(&p, p.node_name);
    std::vector<std::string> left;
    auto place = [&](const std::string& key, std::string_view prefer) {
      const model::Pod* pod = nullptr;
      for (const auto& p : pods)
        if (p.Key() == key) pod = &p;
      sched::FitChecker checker(*pod, snap);
      sched::NodeIndex best = sched::kNoNode;
      std::pair<bool, size_t> best_rank{true, SIZE_MAX};
      for (sched::NodeIndex i = 0; i < snap.NodeSlots(); ++i) {
        if (!checker.Check(i).fits()) continue;
        const std::string& name = snap.Get(i).node->name();
        std::pair<bool, size_t> rank{!name.starts_with(prefer), snap.Get(i).pods.size()};
        if (rank < best_rank) std::tie(best, best_rank) = std::pair(i, rank);
      }
      if (best == sched::kNoNode) {
        left.push_back(key);
      } else {
        (void)snap.AddPod(pod, best);
      }
    };
    for (const auto& key : plan.fits_existing) place(key, "");
    for (const auto& u : plan.scale_ups) {
      for (int k = 0; k < u.add; ++k) {
        added.push_back(config.FindPool(u.pool)->template_node);
        added.back().meta.name = fmt::format("new/{}/{}", u.pool, k);
        added.back().meta.labels[std::string(model::kLabelHostname)] = added.back().meta.name;
        (void)snap.AddNode(&added.back());
      }
    }
    for (const auto& u : plan.scale_ups)
      for (const auto& key : u.pods) place(key, fmt::format("new/{}/", u.pool));
    return left;
  }
};

using Shape = std::map<std::string, std::pair<int, int>>;

World ThreeZones() {
  World w;
  for (std::string zone : {"z1", "z2", "z3"}) w.config.pools.push_back(ZonePool("p-" + zone, zone));
  return w;
}

// Four zone-spread pods on an empty cluster: one node per zone, 2/1/1 pods. kube-scheduler's
// view alone (no domain without a node) would put all four on one node in one zone.
TEST(SpreadFromZero, FourPodsOpenAllThreeZones) {
  World w = ThreeZones();
  for (int i = 0; i < 4; ++i)
    w.pods.push_back(SpreadPod(fmt::format("p{}", i), Spread(model::kLabelZone, 1)));
  ScaleUpPlan plan = w.Plan();
  EXPECT_TRUE(plan.unschedulable.empty());
  Shape shape = World::Shape(plan);
  ASSERT_EQ(shape.size(), 3u);
  std::vector<int> pods;
  for (const auto& [pool, np] : shape) {
    EXPECT_EQ(np.first, 1) << pool;
    pods.push_back(np.second);
  }
  std::sort(pods.begin(), pods.end());
  EXPECT_EQ(pods, (std::vector<int>{1, 1, 2}));
  EXPECT_TRUE(w.Replay(plan).empty());
}

// minDomains 2 with three zones offered and maxSkew 1: six pods go 2/2/2. Counting only zones
// with nodes, minDomains would be met once two zones had one, and those two would take all six.
TEST(SpreadFromZero, MinDomainsBelowTheZonesOffered) {
  World w = ThreeZones();
  for (int i = 0; i < 6; ++i)
    w.pods.push_back(SpreadPod(fmt::format("p{}", i), Spread(model::kLabelZone, 1, 2)));
  ScaleUpPlan plan = w.Plan();
  EXPECT_TRUE(plan.unschedulable.empty());
  EXPECT_EQ(World::Shape(plan), (Shape{{"p-z1", {1, 2}}, {"p-z2", {1, 2}}, {"p-z3", {1, 2}}}));
  EXPECT_TRUE(w.Replay(plan).empty());
}

// Only the zones whose pools the pods' node affinity allows count: z3 is neither opened nor
// holds the minimum at 0.
TEST(SpreadFromZero, OnlyEligiblePoolsOfferZones) {
  World w = ThreeZones();
  for (int i = 0; i < 4; ++i) {
    model::Pod p = SpreadPod(fmt::format("p{}", i), Spread(model::kLabelZone, 1));
    model::NodeSelectorTerm term;
    term.match_expressions.push_back(
        {std::string(model::kLabelZone), model::SelectorOp::kIn, {"z1", "z2"}});
    p.mutable_affinity().node_required = model::NodeSelector{{term}};
    p.Finalize();
    w.pods.push_back(std::move(p));
  }
  ScaleUpPlan plan = w.Plan();
  EXPECT_TRUE(plan.unschedulable.empty());
  EXPECT_EQ(World::Shape(plan), (Shape{{"p-z1", {1, 2}}, {"p-z2", {1, 2}}}));
  EXPECT_TRUE(w.Replay(plan).empty());
}

// A registered node in z1 already holds a matching pod and has no room: the new nodes go to the
// two empty zones, and the third pod joins z2's node once z3 has one (no third node).
TEST(SpreadFromZero, ExistingNodesCoverAZone) {
  World w = ThreeZones();
  model::Node n = w.config.pools[0].template_node;
  n.meta.name = "old-z1";
  n.meta.labels[std::string(model::kLabelHostname)] = n.meta.name;
  n.allocatable = Res({{"cpu", "1"}, {"memory", "16Gi"}, {"pods", "110"}});
  n.capacity = n.allocatable;
  w.nodes.push_back(n);
  model::Pod bound = SpreadPod("bound", Spread(model::kLabelZone, 1));
  bound.node_name = "old-z1";
  w.pods.push_back(bound);
  for (int i = 0; i < 3; ++i)
    w.pods.push_back(SpreadPod(fmt::format("p{}", i), Spread(model::kLabelZone, 1)));
  ScaleUpPlan plan = w.Plan();
  EXPECT_TRUE(plan.unschedulable.empty());
  Shape shape = World::Shape(plan);
  EXPECT_FALSE(shape.contains("p-z1"));
  int nodes = 0, pods = 0;
  for (const auto& [pool, np] : shape) nodes += np.first, pods += np.second;
  EXPECT_EQ(nodes, 2);
  EXPECT_EQ(pods, 3);
  EXPECT_TRUE(w.Replay(plan).empty());
}

// The Cluster Autoscaler's estimator case (binpacking_estimator_test.go, "hostname topology
// spreading with maxSkew=1 with a large scaleup handles scheduling pods retroactively"): an empty
// node "oldnode" (100m, 100Mi, 10 pods) in zone-jupiter, a template of 1000m, 5000Mi, 10 pods in
// zone-mars, twelve pods of 20m and 100 bytes in namespace universe labelled app=estimatee with
// hostname spread maxSkew 1, minDomains 3. The CA estimates 3 nodes. oldnode takes the first pod
// (fewer than 3 domains: the minimum is 0), which used to hold the global minimum at 1 while the
// estimate filled only its own new nodes, 2 pods each: 6 nodes. Now a spread pod no new node
// takes may go to a node outside the estimate once the new nodes raise the minimum: oldnode,
// the first new node and the second end at 4/4/4, so 2 nodes hold all twelve, and the replay
// shows kube-scheduler placing every pod there.
TEST(SpreadFromZero, ClusterAutoscalerHostnameCase) {
  // The CA test's makeNode: hostname and zone labels, capacity = allocatable.
  auto make_node = [](std::string name, std::string zone, std::string cpu, std::string memory) {
    model::Node n;
    n.meta.name = name;
    n.meta.labels[std::string(model::kLabelHostname)] = std::move(name);
    n.meta.labels[std::string(model::kLabelZone)] = std::move(zone);
    n.capacity = Res({{"cpu", std::move(cpu)}, {"memory", std::move(memory)}, {"pods", "10"}});
    n.allocatable = n.capacity;
    n.ready = true;
    return n;
  };
  World w;
  model::Pool pool;
  pool.name = "template";
  pool.max = 100;
  pool.price_per_hour = 1;
  pool.template_node = make_node("template", "zone-mars", "1000m", "5000Mi");
  w.config.pools.push_back(pool);
  w.nodes.push_back(make_node("oldnode", "zone-jupiter", "100m", "100Mi"));
  for (int i = 0; i < 12; ++i) {
    model::TopologySpreadConstraint c = Spread(model::kLabelHostname, 1, 3);
    c.label_selector.match_labels = {{"app", "estimatee"}};
    model::Pod p = SpreadPod(fmt::format("estimatee-{}", i), c, "20m", "100");
    p.meta.namespace_ = "universe";
    p.meta.labels = {{"app", "estimatee"}};
    p.Finalize();
    w.pods.push_back(std::move(p));
  }
  ScaleUpPlan plan = w.Plan();
  EXPECT_TRUE(plan.unschedulable.empty());
  int nodes = 0;
  for (const auto& u : plan.scale_ups) nodes += u.add;
  EXPECT_EQ(nodes, 2);
  EXPECT_EQ(plan.fits_existing.size(), 1u);
  EXPECT_TRUE(w.Replay(plan).empty());
}

// Property over seeded random clusters: zones z1..zK (K 1-4) with one or two pools each (the
// pods' node affinity may leave some out), registered nodes holding some matching pods, pending
// pods with zone or hostname spread (maxSkew 1-3, sometimes minDomains), all of one size so that
// only the spread, not the packing order, decides where they can go. Whatever the plan, once its
// nodes join, kube-scheduler's Filter places every pod it counts on (fits an existing node or
// grows a pool for it).
TEST(SpreadFromZero, PlannedPodsPassTheRealFilterOnceTheNodesJoin) {
  int planned = 0;
  for (uint64_t seed = 1; seed <= 1000; ++seed) {
    std::mt19937_64 rng(seed);
    auto pick = [&](int lo, int hi) { return lo + static_cast<int>(rng() % (hi - lo + 1)); };
    World w;
    int zones = pick(1, 4);
    for (int z = 1; z <= zones; ++z) {
      std::string zone = fmt::format("z{}", z);
      w.config.pools.push_back(ZonePool("a-" + zone, zone, std::to_string(pick(2, 8))));
      if (pick(0, 1)) w.config.pools.push_back(ZonePool("b-" + zone, zone, "16"));
    }
    for (int n = pick(0, 3); n > 0; --n) {
      model::Node node = w.config.pools[rng() % w.config.pools.size()].template_node;
      node.meta.name = fmt::format("old-{}", n);
      node.meta.labels[std::string(model::kLabelHostname)] = node.meta.name;
      node.allocatable =
          Res({{"cpu", std::to_string(pick(1, 4))}, {"memory", "16Gi"}, {"pods", "110"}});
      node.capacity = node.allocatable;
      w.nodes.push_back(node);
    }
    bool hostname = pick(0, 2) == 0;
    model::TopologySpreadConstraint c =
        Spread(hostname ? model::kLabelHostname : model::kLabelZone, pick(1, 3),
               pick(0, 2) == 0 ? std::optional<int>(pick(1, 4)) : std::nullopt);
    std::vector<std::string> allowed;
    for (int z = 1; z <= zones; ++z)
      if (pick(0, 3) != 0) allowed.push_back(fmt::format("z{}", z));
    for (size_t n = 0; n < w.nodes.size(); ++n) {
      if (pick(0, 1) == 0) continue;
      model::Pod bound = SpreadPod(fmt::format("bound-{}", n), c);
      bound.node_name = w.nodes[n].meta.name;
      w.pods.push_back(bound);
    }
    for (int i = pick(1, 12); i > 0; --i) {
      model::Pod p = SpreadPod(fmt::format("p{}", i), c);
      if (!allowed.empty() && zones > 1) {
        model::NodeSelectorTerm term;
        term.match_expressions.push_back(
            {std::string(model::kLabelZone), model::SelectorOp::kIn, allowed});
        p.mutable_affinity().node_required = model::NodeSelector{{term}};
        p.Finalize();
      }
      w.pods.push_back(std::move(p));
    }
    ScaleUpPlan plan = w.Plan();
    for (const auto& u : plan.scale_ups) planned += static_cast<int>(u.pods.size());
    std::vector<std::string> left = w.Replay(plan);
    EXPECT_TRUE(left.empty()) << "seed " << seed << ": " << left.size() << " pods left, first "
                              << left.front();
  }
  EXPECT_GT(planned, 1000);  // the cases do plan new nodes
}

}  // namespace
}  // namespace tidepool::planner
