// Pods that wait, each of its own Job. For a pool at its max: scale-up skips the search of the
// existing nodes for a pod that asks more than any of them has free (sched::RoomBound), and takes
// that bound again once pods placed in the pass may have filled the roomiest nodes. For nodes on
// their way: the searches walk only the nodes the pods' selector lets them onto (ConstraintLists),
// and pass over the blocks of nodes that have no room for the pod (RoomIndex).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "planner/plan_json.h"
#include "planner/scale_up.h"
#include "tests/planner/diverse_world.h"

namespace tidepool::planner {
namespace {

using testing::Pending;
using testing::Shape;

model::Pod OwnJob(model::Pod p, int priority) {
  p.meta.owner_references = {{"batch/v1", "Job", p.meta.name, "uid-" + p.meta.name, true}};
  p.priority = priority;
  p.Finalize();
  return p;
}

// Pools, nodes running pods, and pending pods, as a pass reads them.
struct Cluster {
  model::AutoscalerConfig config;
  std::deque<model::Node> nodes;
  std::deque<model::Pod> pods;
  PlannerInput in;

  explicit Cluster(std::vector<model::Pool> pools) {
    config.pools = std::move(pools);
    in.config = &config;
  }
  Cluster(const Cluster&) = delete;  // `in` points at `config`
  Cluster& operator=(const Cluster&) = delete;

  // `count` nodes of the first pool named busy-0, busy-1, ..., each running one pod that asks
  // `load` cpu.
  void AddBusyNodes(int count, const std::string& load) {
    for (int n = 0; n < count; ++n) {
      model::Node& node = nodes.emplace_back(config.pools[0].template_node);
      node.meta.name = fmt::format("busy-{}", n);
      in.nodes.push_back(&node);
      model::Pod& running = pods.emplace_back(Pending(fmt::format("load-{}", n), load));
      running.node_name = node.meta.name;
      running.phase = model::PodPhase::kRunning;
      in.pods.push_back(&running);
    }
  }
  void AddPending(model::Pod pod) { in.pods.push_back(&pods.emplace_back(std::move(pod))); }
};

// Pool c4 at its max: one node running a 1-cpu pod (3 cpu free) and one on its way (4 free).
// Four 4-cpu pods come first (priority 10): one takes the node on its way, the next fits nowhere,
// and the bound taken again (3 cpu) turns the last two down without a search. The 3-cpu pod that
// comes last still fits the running node: the bound taken again is the room that is left, not
// less.
TEST(WaitingPods, APodLeftFitsTheRoomLeftAfterTheBoundIsTakenAgain) {
  Cluster c({Shape("c4", "4", "16Gi", 1)});
  c.config.pools[0].max = 2;
  c.AddBusyNodes(1, "1");
  c.in.upcoming = {{"c4", 1}};
  for (int i = 0; i < 4; ++i) c.AddPending(OwnJob(Pending(fmt::format("w{}", i), "4"), 10));
  c.AddPending(OwnJob(Pending("small", "3"), 0));
  ScaleUpPlan plan = ScaleUpPlanner().Plan(c.in);
  EXPECT_TRUE(plan.scale_ups.empty());
  ASSERT_EQ(plan.fits_existing.size(), 2u) << fmt::format("{}", fmt::join(plan.fits_existing, " "));
  EXPECT_NE(std::find(plan.fits_existing.begin(), plan.fits_existing.end(), "default/small"),
            plan.fits_existing.end());
  EXPECT_EQ(plan.unschedulable.size(), 3u);
}

// 30 busy nodes of pool `busy` (500m free each), two of pool `fresh` on their way (4 cpu each),
// and 100 pods of 200m for `fresh`: the first 40 take the nodes on their way, the other 60 need
// three more. Each pod searches the busy nodes until its searches have tried as many nodes as
// there are; then only the nodes on their way.
TEST(WaitingPods, PodsForNodesOnTheirWayFillThemAndAskForTheRest) {
  Cluster c({Shape("busy", "4", "16Gi", 1), Shape("fresh", "4", "16Gi", 1)});
  c.AddBusyNodes(30, "3500m");
  c.in.upcoming = {{"fresh", 2}};
  for (int i = 0; i < 100; ++i) {
    model::Pod p = Pending(fmt::format("w{:03}", i), "200m", "256Mi");
    p.node_selector[std::string(model::kLabelPool)] = "fresh";
    c.AddPending(OwnJob(std::move(p), 0));
  }
  ScaleUpPlan plan = ScaleUpPlanner().Plan(c.in);
  EXPECT_EQ(plan.fits_existing.size(), 40u);
  EXPECT_EQ(testing::Adds(plan), (std::map<std::string, int>{{"fresh", 3}}));
  EXPECT_TRUE(plan.unschedulable.empty());
}

// A pod held by a scheduling gate (Kueue's admission gate on the pods it queues) asks for no node:
// kube-scheduler does not try it until the gate is removed, and a node made for it would sit idle
// or run pods the queue has not admitted. Explain says why; the same pod without its gate asks.
TEST(WaitingPods, APodHeldByASchedulingGateAsksForNoNode) {
  model::AutoscalerConfig config;
  config.pools = {Shape("c4", "4", "16Gi", 1)};
  model::Pod gated = OwnJob(Pending("gated", "2"), 0);
  gated.mutable_scheduling_gates().push_back("kueue.x-k8s.io/admission");
  gated.Finalize();
  PlannerInput in;
  in.config = &config;
  in.pods.push_back(&gated);
  ScaleUpPlan plan = ScaleUpPlanner().Plan(in);
  EXPECT_TRUE(plan.scale_ups.empty());
  EXPECT_TRUE(plan.unschedulable.empty());
  PodExplanation ex = ScaleUpPlanner().Explain(in, "default/gated");
  EXPECT_TRUE(ex.found);
  EXPECT_FALSE(ex.pending);
  EXPECT_EQ(ex.not_pending_reason,
            "held by its scheduling gates (kueue.x-k8s.io/admission): kube-scheduler does not try "
            "it until they are removed (a queue such as Kueue removes its gate when it admits the "
            "pod)");

  gated.ClearSchedulingGates();
  EXPECT_EQ(testing::Adds(ScaleUpPlanner().Plan(in)), (std::map<std::string, int>{{"c4", 1}}));
}

// 200 busy nodes with 1 cpu free each, then four on their way: eight 3-cpu pods of two Jobs pass
// over every busy node to the nodes on their way (four) and ask for the rest (four). A 1-cpu pod
// after them still finds a busy node, and a second 3-cpu pod of the first Job no longer finds the
// node on its way that the first took.
TEST(WaitingPods, LargePodsPassOverFullNodesToTheNodesOnTheirWay) {
  Cluster c({Shape("c4", "4", "16Gi", 1)});
  c.config.pools[0].max = 300;
  c.AddBusyNodes(200, "3");
  c.in.upcoming = {{"c4", 4}};
  for (int i = 0; i < 8; ++i) {
    model::Pod p = Pending(fmt::format("big-{}", i), "3");
    p.meta.owner_references = {{"batch/v1", "Job", fmt::format("job-{}", i % 2), "uid", true}};
    p.Finalize();
    c.AddPending(std::move(p));
  }
  c.AddPending(OwnJob(Pending("small", "1"), -1));
  for (ScaleUpOptions options : {ScaleUpOptions{}, ScaleUpOptions{.placement_cursors = false}}) {
    ScaleUpPlan plan = ScaleUpPlanner().Plan(c.in, options);
    EXPECT_EQ(plan.fits_existing.size(), 5u)
        << fmt::format("{}", fmt::join(plan.fits_existing, " "));
    EXPECT_EQ(testing::Adds(plan), (std::map<std::string, int>{{"c4", 4}}));
    EXPECT_NE(std::find(plan.fits_existing.begin(), plan.fits_existing.end(), "default/small"),
              plan.fits_existing.end());
  }
}

// Searches that pass over nodes without room place every pod where a search of every node does:
// random clusters of 20-150 nodes filled at random, some on their way, and pending pods of a few
// Jobs and sizes, some for one pool only, some in gangs (a gang that does not fit gives back the
// room its members took on existing nodes).
TEST(WaitingPods, PassingOverFullNodesPlansWhatSearchingEveryNodePlans) {
  int compared = 0, fit_existing = 0, added = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    std::mt19937_64 rng(seed);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
    model::AutoscalerConfig config;
    config.pools = {Shape("c4", "4", "16Gi", 1), Shape("c8", "8", "32Gi", 2)};
    for (model::Pool& pool : config.pools) pool.max = 150 + pick(20);
    std::deque<model::Node> nodes;
    std::deque<model::Pod> pods;
    PlannerInput in;
    in.config = &config;
    const std::vector<std::string> sizes = {"250m", "1", "2500m", "3", "5", "7"};
    for (int n = 20 + pick(130); n > 0; --n) {
      const model::Pool& pool = config.pools[static_cast<size_t>(pick(2))];
      model::Node& node = nodes.emplace_back(pool.template_node);
      node.meta.name = fmt::format("n-{:03}", nodes.size());
      in.nodes.push_back(&node);
      for (int k = pick(4); k > 0; --k) {
        model::Pod& load = pods.emplace_back(
            Pending(fmt::format("load-{}", pods.size()), sizes[static_cast<size_t>(pick(4))]));
        load.node_name = node.meta.name;
        load.phase = model::PodPhase::kRunning;
        in.pods.push_back(&load);
      }
    }
    if (pick(2) == 0) in.upcoming["c4"] = pick(4);
    if (pick(2) == 0) in.upcoming["c8"] = pick(4);
    for (int i = 10 + pick(40); i > 0; --i) {
      model::Pod p = Pending(fmt::format("w-{:03}", pods.size()),
                             sizes[static_cast<size_t>(pick(static_cast<int>(sizes.size())))],
                             fmt::format("{}Gi", 1 + pick(6)));
      p.meta.owner_references = {{"batch/v1", "Job", fmt::format("job-{}", pick(5)), "uid", true}};
      if (pick(5) == 0) p.node_selector[std::string(model::kLabelPool)] = "c8";
      if (pick(8) == 0) {
        p.meta.annotations[std::string(kGangSizeAnnotation)] = "2";
        p.meta.labels["scheduling.x-k8s.io/pod-group"] = fmt::format("gang-{}", pick(3));
      }
      p.Finalize();
      in.pods.push_back(&pods.emplace_back(std::move(p)));
    }
    ScaleUpPlan passing = ScaleUpPlanner().Plan(in);
    ScaleUpPlan every = ScaleUpPlanner().Plan(in, {.placement_cursors = false});
    ASSERT_EQ(PlanToJson(passing, {}).dump(1), PlanToJson(every, {}).dump(1)) << "seed " << seed;
    ++compared;
    fit_existing += static_cast<int>(passing.fits_existing.size());
    added += static_cast<int>(passing.scale_ups.size());
  }
  EXPECT_EQ(compared, 300);
  EXPECT_GT(fit_existing, 1000);  // pods did find room on existing nodes
  EXPECT_GT(added, 30);           // and others did not, in a plan of every tenth seed or more
}

}  // namespace
}  // namespace tidepool::planner
