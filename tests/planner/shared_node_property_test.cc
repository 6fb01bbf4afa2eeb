// A scale-up plans no node a pod could have shared with the other nodes it opens: on random
// families of shapes in one to three zones, with the constraints of Karpenter's diverse mix, no
// new node's pods all find a place on the plan's other new nodes once the node is gone, and every
// pod passes the filters where the plan puts it. Checked with kube-scheduler's filters
// (sched::FitChecker) on a snapshot rebuilt from the plan alone, with every pool template offered
// as a spread domain as the planner offers them.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "model/node.h"
#include "model/pod.h"
#include "model/pool.h"
#include "planner/scale_up.h"
#include "sched/fit.h"
#include "sched/snapshot.h"
#include "tests/planner/diverse_world.h"
#include "tests/testing/values.h"

namespace tidepool::planner {
namespace {

using testing::DiverseKind;
using testing::DiversePod;
using testing::Shape;
using testing::World;
using tidepool::testing::Res;

World RandomWorld(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  const std::vector<std::string> cpus = {"2", "4", "8", "16"};
  World w;
  w.config.scale_up.expanders = std::vector<std::vector<std::string>>{
      {"price"}, {"least-waste"}, {"priority", "least-waste"}}[pick(3)];
  int zones = 1 + pick(3), shapes = 1 + pick(3);
  for (int z = 0; z < zones; ++z) {
    for (int s = 0; s < shapes; ++s) {
      int c = pick(4);
      std::string memory = fmt::format("{}Gi", 4 << (c + pick(2)));
      double price = (1 << c) * (0.8 + 0.1 * pick(5));
      w.config.pools.push_back(
          Shape(fmt::format("z{}s{}", z, s), cpus[c], memory, price, fmt::format("z{}", z)));
      int most = pick(2) ? 4 : 12;
      w.config.pools.back().max = 1 + pick(most);
    }
  }
  if (pick(3) == 0) {
    model::DaemonSet& ds = w.daemon_sets.emplace_back();
    ds.meta.name = "agent";
    ds.meta.namespace_ = "kube-system";
    ds.pod_template.meta.namespace_ = "kube-system";
    ds.pod_template.containers.push_back(
        {.name = "agent", .requests = Res({{"cpu", "250m"}, {"memory", "256Mi"}})});
    ds.pod_template.Finalize();
  }
  int pods = 1 + pick(40), constrained = pick(2);
  for (int i = 0; i < pods; ++i) {
    auto kind = constrained ? static_cast<DiverseKind>(pick(5)) : DiverseKind::kGeneric;
    std::string value(1, static_cast<char>('a' + pick(3)));
    std::string cpu = std::vector<std::string>{"250m", "1", "1500m", "3", "7"}[pick(5)];
    std::string memory = std::vector<std::string>{"512Mi", "2Gi", "6Gi", "20Gi"}[pick(4)];
    int max_skew = 1 + pick(2);
    w.pods.push_back(DiversePod(fmt::format("p{:03}", i), kind, value, cpu, memory, max_skew,
                                fmt::format("rs-{}", i % 4)));
  }
  return w;
}

// The plan's new nodes as a snapshot: node j is the template of its pool, named "new-<j>".
struct PlannedCluster {
  std::deque<model::Node> nodes;
  sched::ClusterSnapshot snapshot;
  std::vector<std::vector<const model::Pod*>> pods;  // per node

  PlannedCluster(const ScaleUpPlan& plan, const World& w) {
    std::map<std::string, const model::Pod*> by_key;
    for (const model::Pod& p : w.pods) by_key[p.Key()] = &p;
    for (size_t j = 0; j < plan.new_nodes.size(); ++j) {
      nodes.push_back(w.config.FindPool(plan.new_nodes[j].pool)->template_node);
      nodes.back().meta.name = fmt::format("new-{}", j);
      nodes.back().meta.labels[std::string(model::kLabelHostname)] = nodes.back().meta.name;
      EXPECT_TRUE(snapshot.AddNode(&nodes.back()).has_value());
      for (const model::DaemonSet& d : w.daemon_sets)
        EXPECT_TRUE(snapshot.AddPod(&d.pod_template, static_cast<sched::NodeIndex>(j)).has_value());
      pods.emplace_back();
      for (const std::string& key : plan.new_nodes[j].pods) {
        const model::Pod* p = by_key.at(key);
        EXPECT_TRUE(snapshot.AddPod(p, static_cast<sched::NodeIndex>(j)).has_value()) << key;
        pods.back().push_back(p);
      }
    }
  }

  // Whether `pod`, taken off node `j`, passes kube-scheduler's filters there again beside every
  // other pod of the plan (only domains with nodes count, as for the scheduler once they join).
  bool FitsWhereItIs(const model::Pod& pod, size_t j) {
    auto at = static_cast<sched::NodeIndex>(j);
    snapshot.Fork();
    EXPECT_TRUE(snapshot.RemovePod(&pod, at).has_value());
    bool fits = sched::FitChecker(pod, snapshot).Fits(at);
    snapshot.Revert();
    return fits;
  }

  // Whether every pod of node `j` finds a place on the plan's other new nodes, the pods placed one
  // by one largest first on the first node that takes each, with node `j` gone: a witness that
  // the plan did not need it. The snapshot is left as it was.
  bool MovesToOtherNodes(size_t j, const World& w) {
    std::vector<const model::Pod*> moving = pods[j];
    // A pod some pod's required affinity or DoNotSchedule spread selects stays: moving it could
    // leave the pods placed against its domain's count in breach of their own constraints, so
    // its move would be no witness.
    for (const model::Pod* p : moving) {
      for (const model::Pod& other : w.pods) {
        for (const auto& t : other.affinity().pod_affinity_required)
          if (t.label_selector.Matches(p->meta.labels)) return false;
        for (const auto& c : other.topology_spread_constraints())
          if (c.label_selector.Matches(p->meta.labels)) return false;
      }
    }
    std::stable_sort(moving.begin(), moving.end(), [](const model::Pod* a, const model::Pod* b) {
      return std::tuple(a->requests.gpus(), a->requests.cpu_milli(), a->requests.memory()) >
             std::tuple(b->requests.gpus(), b->requests.cpu_milli(), b->requests.memory());
    });
    snapshot.Fork();
    EXPECT_TRUE(snapshot.RemoveNode(nodes[j].meta.name).has_value());
    bool all = true;
    for (const model::Pod* pod : moving) {
      sched::FitChecker checker(*pod, snapshot);
      for (const model::Pool& p : w.config.pools) checker.OfferDomain(p.template_node);
      size_t i = 0;
      while (i < nodes.size() && (i == j || !checker.Fits(static_cast<sched::NodeIndex>(i)))) ++i;
      if (i == nodes.size()) {
        all = false;
        break;
      }
      EXPECT_TRUE(snapshot.AddPod(pod, static_cast<sched::NodeIndex>(i)).has_value());
    }
    snapshot.Revert();
    return all;
  }
};

TEST(SharedNodeProperty, NoNewNodeWhosePodsTheOthersCouldTake) {
  int nodes_checked = 0, worlds_with_nodes = 0;
  for (uint64_t seed = 1; seed <= 1500; ++seed) {
    World w = RandomWorld(seed);
    ScaleUpPlan plan = w.Plan();
    // Each pool grows by its nodes and lists the pods on them (no registered nodes here, so no
    // pod is listed under a pool whose nodes only make room for it).
    std::map<std::string, int> per_pool;
    std::map<std::string, std::set<std::string>> on_pool;
    for (const NewNode& n : plan.new_nodes) {
      ++per_pool[n.pool];
      on_pool[n.pool].insert(n.pods.begin(), n.pods.end());
    }
    for (const ScaleUp& u : plan.scale_ups) {
      ASSERT_EQ(per_pool[u.pool], u.add) << "seed " << seed << ", pool " << u.pool;
      ASSERT_EQ(std::set<std::string>(u.pods.begin(), u.pods.end()), on_pool[u.pool])
          << "seed " << seed << ", pool " << u.pool;
    }
    PlannedCluster cluster(plan, w);
    if (!plan.new_nodes.empty()) ++worlds_with_nodes;
    // Every pod passes the filters where the plan puts it. Not asked of spread pods: their skew
    // depends on the order pods are bound in, and the plan's nodes are opened one after another
    // (spread_from_zero_test.cc replays such plans through the scheduler's filter instead).
    for (size_t j = 0; j < plan.new_nodes.size(); ++j) {
      for (const model::Pod* p : cluster.pods[j]) {
        if (!p->topology_spread_constraints().empty()) continue;
        EXPECT_TRUE(cluster.FitsWhereItIs(*p, j))
            << "seed " << seed << ": pod " << p->meta.name << " on new node " << j;
      }
    }
    for (size_t j = 0; j < plan.new_nodes.size() && plan.new_nodes.size() > 1; ++j) {
      EXPECT_FALSE(cluster.MovesToOtherNodes(j, w))
          << "seed " << seed << ": the pods of new node " << j << " (pool "
          << plan.new_nodes[j].pool << ") all fit the plan's other new nodes";
      ++nodes_checked;
    }
  }
  EXPECT_GT(worlds_with_nodes, 1000);
  EXPECT_GT(nodes_checked, 3000);  // the property is not vacuous
}

// A gang's nodes are its own: a single pod whose node could be dropped onto the gang's room is
// not moved there (an atomic request that fails gives its nodes back whole). Two 3-cpu members of
// a gang take one 8-cpu node; a 2-cpu pod gets a node of its own, with or without the drop.
TEST(SharedNodeProperty, APodIsNotMovedOntoAGangsNode) {
  World w;
  w.config.pools.push_back(Shape("p", "8", "32Gi", 1.0, "z1"));
  w.config.pools.back().max = 10;
  for (int i = 0; i < 2; ++i) {
    model::Pod& m = w.pods.emplace_back(
        DiversePod(fmt::format("p{:03}", i), DiverseKind::kGeneric, "a", "3", "1Gi"));
    m.meta.labels["scheduling.x-k8s.io/pod-group"] = "train";
    m.meta.annotations[std::string(kGangSizeAnnotation)] = "2";
  }
  w.pods.push_back(DiversePod("p002", DiverseKind::kGeneric, "a", "2", "1Gi"));
  for (bool compact : {false, true}) {
    ScaleUpPlan plan = w.Plan({.compact_new_nodes = compact});
    ASSERT_EQ(plan.new_nodes.size(), 2u) << "compact " << compact;
    EXPECT_EQ(plan.new_nodes[0].pods, (std::vector<std::string>{"default/p000", "default/p001"}));
    EXPECT_EQ(plan.new_nodes[1].pods, (std::vector<std::string>{"default/p002"}));
  }
}

int Nodes(const ScaleUpPlan& plan) {
  int n = 0;
  for (const ScaleUp& u : plan.scale_ups) n += u.add;
  return n;
}

double Price(const ScaleUpPlan& plan, const model::AutoscalerConfig& config) {
  double price = 0;
  for (const ScaleUp& u : plan.scale_ups) price += u.add * config.FindPool(u.pool)->price_per_hour;
  return price;
}

std::set<std::string> Planned(const ScaleUpPlan& plan) {
  std::set<std::string> pods;
  for (const ScaleUp& u : plan.scale_ups) pods.insert(u.pods.begin(), u.pods.end());
  return pods;
}

std::set<std::string> Unschedulable(const ScaleUpPlan& plan) {
  std::set<std::string> pods;
  for (const auto& u : plan.unschedulable) pods.insert(u.pod);
  return pods;
}

// What every pod's required affinity term and DoNotSchedule spread constraint counts on the
// plan's new nodes, per term (its index and key): the sorted non-zero counts of matching pods per
// zone, and the largest count on one node for the hostname. The drop keeps every zone's count (a
// pod such a term matches stays in its zone) and raises no node's count above what it was.
struct ConstraintCounts {
  std::map<std::string, std::vector<int>> zones;
  std::map<std::string, int> most_on_a_node;

  ConstraintCounts(const ScaleUpPlan& plan, const World& w) {
    std::map<std::string, const model::Pod*> by_key;
    for (const model::Pod& p : w.pods) by_key[p.Key()] = &p;
    std::vector<std::pair<const model::LabelSelector*, std::string>> terms;
    for (const model::Pod& p : w.pods) {
      for (const auto& t : p.affinity().pod_affinity_required)
        terms.emplace_back(&t.label_selector, t.topology_key);
      for (const auto& c : p.topology_spread_constraints())
        terms.emplace_back(&c.label_selector, c.topology_key);
    }
    for (size_t t = 0; t < terms.size(); ++t) {
      const auto& [selector, key] = terms[t];
      const std::string name = fmt::format("{} {}", t, key);
      std::map<std::string, int> per_zone;
      for (const NewNode& n : plan.new_nodes) {
        int matching = 0;
        for (const std::string& pod : n.pods)
          if (selector->Matches(by_key.at(pod)->meta.labels)) ++matching;
        if (key == model::kLabelHostname) {
          most_on_a_node[name] = std::max(most_on_a_node[name], matching);
        } else {
          per_zone[*w.config.FindPool(n.pool)->template_node.meta.Label(key)] += matching;
        }
      }
      std::vector<int>& counts = zones[name];
      for (const auto& [zone, c] : per_zone)
        if (c > 0) counts.push_back(c);  // a zone left without nodes held none
      std::sort(counts.begin(), counts.end());
    }
  }
};

// Differential against the planner without the drop (ScaleUpOptions::compact_new_nodes), with
// flexible nodes and with every pool packed alone: never more nodes, never a higher price, the
// same pods planned and the same left unschedulable, the same counts for every constraint.
TEST(SharedNodeProperty, DroppingNodesNeverCostsMoreOrPlansOtherPods) {
  for (bool flexible : {true, false}) {
    int dropped = 0, cases = 0, nodes_before = 0, nodes_after = 0;
    for (uint64_t seed = 1; seed <= 1500; ++seed) {
      World w = RandomWorld(seed);
      ScaleUpPlan plain = w.Plan({.flexible_nodes = flexible, .compact_new_nodes = false});
      ScaleUpPlan compact = w.Plan({.flexible_nodes = flexible});
      SCOPED_TRACE(fmt::format("seed {}, flexible {}", seed, flexible));
      ASSERT_LE(Nodes(compact), Nodes(plain));
      ASSERT_LE(Price(compact, w.config), Price(plain, w.config) + 1e-9);
      ASSERT_EQ(Planned(compact), Planned(plain));
      ASSERT_EQ(Unschedulable(compact), Unschedulable(plain));
      ASSERT_EQ(compact.fits_existing, plain.fits_existing);
      ASSERT_EQ(compact.new_nodes.size(), static_cast<size_t>(Nodes(compact)));
      ConstraintCounts after(compact, w), before(plain, w);
      ASSERT_EQ(after.zones, before.zones);
      for (const auto& [term, most] : after.most_on_a_node)
        ASSERT_LE(most, std::max(1, before.most_on_a_node[term])) << term;
      if (Nodes(compact) < Nodes(plain)) ++dropped;
      nodes_before += Nodes(plain);
      nodes_after += Nodes(compact);
      ++cases;
    }
    fmt::print("flexible {}: {} cases, {} with a node dropped, nodes {} -> {}\n", flexible, cases,
               dropped, nodes_before, nodes_after);
    EXPECT_GT(dropped, 0) << "flexible " << flexible;  // the drop is not vacuous
  }
}

}  // namespace
}  // namespace tidepool::planner
