// Nodes a pass makes up: numbered ones added outside the snapshot's name index keep their
// hostnames apart from every real node's, looked up or known free from the model's name order.
#include "planner/made_up_node.h"

#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <string>

#include "model/node.h"
#include "model/pod.h"
#include "planner/scale_up.h"
#include "sched/cluster_model.h"
#include "tests/planner/diverse_world.h"
#include "tests/sched/builders.h"

namespace tidepool::planner {
namespace {

using testing::Adds;
using testing::DiverseKind;
using testing::DiversePod;
using testing::Shape;

// A node with its hostname label.
model::Node Named(std::string name) { return sched::testing::NodeBuilder(std::move(name)).Build(); }

TEST(MadeUpNodes, ANumberedNodeTakesADashWhereARealNodeHoldsItsName) {
  sched::ClusterSnapshot snapshot;
  model::Node real = Named("new-a-0");
  ASSERT_TRUE(snapshot.AddNode(&real).has_value());
  model::Node made;
  made.meta.name = "new-a-0";
  const sched::NodeIndex i = AddNumberedNode(snapshot, made);
  EXPECT_EQ(made.meta.name, "new-a-0-");
  EXPECT_EQ(made.meta.labels.at(std::string(model::kLabelHostname)), "new-a-0-");
  EXPECT_EQ(snapshot.FindNode("new-a-0"), 0u);  // the real node's
  EXPECT_EQ(snapshot.FindNode("new-a-0-"), sched::kNoNode);
  EXPECT_EQ(snapshot.Get(i).node, &made);
  // Told no real name can clash, it keeps its name.
  model::Node trusted;
  trusted.meta.name = "new-a-1";
  (void)AddNumberedNode(snapshot, trusted, /*may_clash=*/false);
  EXPECT_EQ(trusted.meta.labels.at(std::string(model::kLabelHostname)), "new-a-1");
}

TEST(MadeUpNodes, SomeNameStartsWithReadsTheModelsNameOrder) {
  sched::ClusterModel model;
  std::deque<model::Node> nodes;
  for (const char* name : {"zz", "a", "new-x-1", "upcoming"})
    ASSERT_TRUE(model.SetNode(sched::ClusterModel::Borrow(&nodes.emplace_back(Named(name)))));
  EXPECT_TRUE(SomeNameStartsWith(model, kNewNodePrefix));
  EXPECT_FALSE(SomeNameStartsWith(model, kUpcomingNodePrefix));  // "upcoming" lacks the '-'
  EXPECT_TRUE(SomeNameStartsWith(model, "a"));
  EXPECT_TRUE(SomeNameStartsWith(model, "zz"));
  EXPECT_FALSE(SomeNameStartsWith(model, "zzz"));
  EXPECT_FALSE(SomeNameStartsWith(model, "b"));
}

// A full real node named as the pass's first new c4 node runs a pod that keeps app=nginx pods
// off its host. Two pending app=nginx pods share one new node: it is another host, on a built
// snapshot and on the cluster model alike. Had it kept the real node's hostname, the second pod
// to join it would have been kept off, and taken a node of its own.
TEST(MadeUpNodes, ARealNodeNamedLikeANewOneIsAnotherHost) {
  model::AutoscalerConfig config;
  config.pools = {Shape("c4", "4", "16Gi", 1)};
  model::Node real = config.pools[0].template_node;
  real.meta.name = "new-c4-0";
  real.meta.labels[std::string(model::kLabelHostname)] = real.meta.name;
  model::Pod running = DiversePod("running", DiverseKind::kAntiAffinity, "", "4", "1Gi");
  running.meta.labels.erase("app");  // keeps app=nginx pods away, is not one
  running.node_name = real.meta.name;
  running.phase = model::PodPhase::kRunning;
  running.Finalize();
  std::deque<model::Pod> pending;
  PlannerInput in;
  in.config = &config;
  in.nodes = {&real};
  in.pods = {&running};
  for (const char* name : {"a", "b"}) {
    model::Pod& p = pending.emplace_back(testing::Pending(name, "1"));
    p.meta.labels["app"] = "nginx";
    p.Finalize();
    in.pods.push_back(&p);
  }
  sched::ClusterModel model;
  ASSERT_TRUE(model.SetNode(sched::ClusterModel::Borrow(&real)));
  for (const model::Pod* p : in.pods) ASSERT_TRUE(model.SetPod(sched::ClusterModel::Borrow(p)));
  PlannerInput on_model = in;
  on_model.model = &model;
  on_model.unbound = model.Unbound();
  for (const PlannerInput* input : {&in, &on_model}) {
    ScaleUpPlan plan = ScaleUpPlanner().Plan(*input);
    EXPECT_EQ(Adds(plan), (std::map<std::string, int>{{"c4", 1}}))
        << (input->model ? "on the model" : "built");
    EXPECT_TRUE(plan.unschedulable.empty()) << (input->model ? "on the model" : "built");
  }
}

}  // namespace
}  // namespace tidepool::planner
