// The input's pods without a node (PlannerInput::unbound): the passes read them from the list
// when it is given, AddUnmodelledPod keeps the list, and the model's debug mode stops on a list
// that is not the input's.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "planner/cluster.h"
#include "planner/model_fork.h"
#include "planner/scale_up.h"
#include "sched/cluster_model.h"
#include "tests/sched/builders.h"

namespace tidepool::planner {
namespace {

using sched::testing::PodBuilder;

model::Pod MakePod(std::string name, std::string node, const std::string& cpu) {
  PodBuilder b(std::move(name));
  b.Requests({{"cpu", cpu}});
  if (!node.empty()) b.NodeName(std::move(node)).Phase(model::PodPhase::kRunning);
  return b.Build();
}

struct World {
  model::AutoscalerConfig config;
  model::Node node;
  model::Pod running = MakePod("running", "n1", "500m");
  model::Pod pending = MakePod("pending", "", "3");  // fits no node: a scale-up
  PlannerInput input;

  World() {
    model::Pool& pool = config.pools.emplace_back();
    pool.name = "cpu";
    pool.max = 5;
    pool.template_node.allocatable.Set(model::kCpu, 4000);
    pool.template_node.allocatable.Set(model::kPods, 110);
    pool.template_node.capacity = pool.template_node.allocatable;
    pool.template_node.ready = true;
    pool.template_node.meta.labels[std::string(model::kLabelPool)] = "cpu";
    node = pool.template_node;
    node.meta.name = "n1";
    node.allocatable.Set(model::kCpu, 2000);
    input.config = &config;
    input.nodes = {&node};
    input.pods = {&running, &pending};
  }
};

int NodesAdded(const ScaleUpPlan& plan) {
  int n = 0;
  for (const auto& u : plan.scale_ups) n += u.add;
  return n;
}

TEST(UnboundPods, ReadFromTheListWhenGiven) {
  World w;
  EXPECT_EQ(UnboundPods(w.input), std::vector<const model::Pod*>{&w.pending});
  EXPECT_EQ(NodesAdded(ScaleUpPlanner().Plan(w.input)), 1);
  // A list without the pending pod: the pass does not read every pod to find it.
  w.input.unbound.emplace();
  EXPECT_TRUE(UnboundPods(w.input).empty());
  EXPECT_EQ(NodesAdded(ScaleUpPlanner().Plan(w.input)), 0);
}

TEST(UnboundPods, AddUnmodelledPodKeepsTheList) {
  World w;
  w.input.unbound = UnboundPods(w.input);
  sched::ClusterModel model;
  w.input.model = &model;
  model::Pod copy = MakePod("copy", "", "100m");
  model::Pod done = MakePod("done", "", "100m");
  done.phase = model::PodPhase::kSucceeded;
  AddUnmodelledPod(w.input, &copy);
  AddUnmodelledPod(w.input, &done);
  EXPECT_EQ(*w.input.unbound, (std::vector<const model::Pod*>{&w.pending, &copy}));
  EXPECT_EQ(w.input.model, &model);
  // One bound to a node takes the model out, and is not unbound.
  model::Pod held = MakePod("held", "n1", "100m");
  AddUnmodelledPod(w.input, &held);
  EXPECT_EQ(w.input.model, nullptr);
  EXPECT_EQ(w.input.unbound->size(), 2u);
  EXPECT_EQ(w.input.pods.size(), 5u);
}

TEST(UnboundPodsDeathTest, TheDebugModeStopsOnAListThatIsNotTheInputs) {
  World w;
  w.input.unbound = UnboundPods(w.input);
  CheckUnbound(w.input);  // right: nothing happens
  w.input.unbound->push_back(&w.running);
  EXPECT_DEATH(CheckUnbound(w.input), "1 too many \\(first default/running\\), 0 missing");
  w.input.unbound.emplace();
  EXPECT_DEATH(CheckUnbound(w.input),
               "0 too many \\(first none\\), 1 missing \\(first "
               "default/pending\\)");
}

}  // namespace
}  // namespace tidepool::planner
