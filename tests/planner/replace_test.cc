// Consolidation's replace move (docs/consolidation.md): hand-computed cases of a node replaced by
// one node of a cheaper pool (a spot pool, a smaller shape), and of the ones that must not be.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "base/time.h"
#include "planner/disruption.h"
#include "planner/scale_down.h"
#include "tests/planner/scale_down_cluster.h"

namespace tidepool::planner {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using namespace scale_down_testing;  // NOLINT: the builder and plan readers
using std::chrono::hours;
using std::chrono::minutes;

const model::Taint kSpotTaint{"kubernetes.azure.com/scalesetpriority", "spot",
                              model::TaintEffect::kNoSchedule};

// n1: an on-demand 4-GPU node at $8/h, the only node, running one 1-GPU training pod (it holds
// $2/h) that has run 2h without checkpoint information and is expected to run 4h50m in all:
// horizon 2h50m, work lost (2h + 2m restart) x $2/h = $4.07, x safety 2 = $8.13. A spot pool of
// the same shape at $2.40/h: replacing saves ($8 - $2.40) x 2h50m = $15.87. It pays.
struct ReplaceCase {
  Cluster c;
  model::Pool* spot;
  model::Pod* pod;
  ReplaceCase() {
    c.config().scale_down.consolidation.replace = true;
    c.config().pools[0].price_per_hour = 0.5;  // cpupool: cheaper, but holds no GPU pod
    c.config().pools[0].template_node.allocatable = Res({{"cpu", "4"}, {"memory", "16Gi"}});
    ResourceList shape = {{"cpu", "32"}, {"memory", "256Gi"}, {"nvidia.com/gpu", "4"}};
    model::Pool& od = c.AddPool("gpu-od", 0);
    od.price_per_hour = 8;
    spot = &c.AddPool("gpu-spot", 0, 10);
    spot->price_per_hour = 2.4;
    spot->capacity_type = model::CapacityType::kSpot;
    model::Node& t = spot->template_node;
    t.meta.labels[std::string(model::kLabelPool)] = "gpu-spot";
    t.taints = {kSpotTaint};
    t.allocatable = Res(shape);
    t.allocatable.Set(model::kPods, 110);
    t.capacity = t.allocatable;
    t.ready = true;
    c.AddNode("n1", "gpu-od", shape);
    pod = &c.AddPod("train-0", "n1", {{"cpu", "2"}, {"nvidia.com/gpu", "1"}}, "ml");
    pod->meta.owner_references = {{"batch/v1", "Job", "train", "job-uid", true}};
    pod->start_time = c.now() - hours(2);
    pod->meta.annotations[std::string(kExpectedRuntimeAnnotation)] = "4h50m";
    pod->tolerations = {{kSpotTaint.key, model::TolerationOp::kEqual, "spot", std::nullopt, {}}};
  }
};

TEST(Replace, AnOnDemandNodeGoesToSpotWhenItPays) {
  ReplaceCase r;
  ScaleDownPlan plan = r.c.Plan(NoRateLimit());
  ASSERT_EQ(Removed(plan), Names{"n1"}) << Render(plan);
  const ScaleDown& sd = plan.scale_downs[0];
  EXPECT_EQ(sd.replacement_pool, "gpu-spot");
  EXPECT_THAT(sd.replacement_pods, ElementsAre("ml/train-0"));
  EXPECT_THAT(sd.evict, ElementsAre("ml/train-0"));
  ASSERT_TRUE(sd.consolidation.has_value());
  const ConsolidationVerdict& v = *sd.consolidation;
  EXPECT_EQ(v.decision, ConsolidationDecision::kPays);
  EXPECT_EQ(v.replacement_pool, "gpu-spot");
  EXPECT_DOUBLE_EQ(v.replacement_price_per_hour, 2.4);
  EXPECT_DOUBLE_EQ(v.node_price_per_hour, 8);
  EXPECT_EQ(v.horizon, hours(2) + minutes(50));
  EXPECT_NEAR(v.savings, 5.6 * (2 + 50 / 60.0), 1e-9);
  EXPECT_NEAR(v.work_lost, 2.0 * (2 + 2 / 60.0), 1e-9);
  EXPECT_THAT(sd.Detail(), HasSubstr("consolidation pays: replacing the $8.00/h node with one of "
                                     "pool gpu-spot at $2.40/h saves $15.87 over 2h50m against "
                                     "$4.07 of work lost"));
}

// At $6/h the replacement saves ($8 - $6) x 2h50m = $5.67 < $8.13: kept, with the numbers.
// (Deleting the node would pay, $22.67, but its pod fits nowhere else.)
TEST(Replace, KeptWhenTheNumbersDoNotPay) {
  ReplaceCase r;
  r.spot->price_per_hour = 6;
  ScaleDownPlan plan = r.c.Plan(NoRateLimit());
  EXPECT_TRUE(plan.scale_downs.empty()) << Render(plan);
  EXPECT_THAT(KeepReason(plan, "n1"),
              HasSubstr("consolidation does not pay: replacing the $8.00/h node with one of pool "
                        "gpu-spot at $6.00/h saves $5.67 over 2h50m against $4.07 of work lost"));
  const Keep* keep = nullptr;
  for (const Keep& k : plan.keep)
    if (k.node == "n1") keep = &k;
  ASSERT_NE(keep, nullptr);
  ASSERT_NE(keep->consolidation, nullptr);
  EXPECT_EQ(keep->consolidation->decision, ConsolidationDecision::kDoesNotPay);
  EXPECT_EQ(keep->consolidation->replacement_pool, "gpu-spot");
}

TEST(Replace, NeverProposesAReplacementAsDearAsTheNode) {
  for (double price : {8.0, 9.0}) {
    ReplaceCase r;
    r.spot->price_per_hour = price;
    ScaleDownPlan plan = r.c.Plan(NoRateLimit());
    EXPECT_TRUE(plan.scale_downs.empty()) << price << "\n" << Render(plan);
    EXPECT_THAT(KeepReason(plan, "n1"), HasSubstr("pod ml/train-0 cannot be moved"));
    EXPECT_THAT(KeepReason(plan, "n1"), Not(HasSubstr("gpu-spot")));
  }
}

// The pod's constraints must fit the new node's template: here it asks for the old shape's label,
// or does not tolerate the spot taint.
TEST(Replace, APodThatOnlyFitsTheOldShapeIsNotReplaced) {
  ReplaceCase r;
  r.pod->node_selector["shape"] = "big";
  ScaleDownPlan plan = r.c.Plan(NoRateLimit());
  EXPECT_TRUE(plan.scale_downs.empty()) << Render(plan);
  EXPECT_THAT(KeepReason(plan, "n1"),
              HasSubstr("pod ml/train-0 does not fit a node of pool gpu-spot: node(s) didn't "
                        "match Pod's node affinity/selector"));

  ReplaceCase t;
  t.pod->tolerations.clear();
  plan = t.c.Plan(NoRateLimit());
  EXPECT_TRUE(plan.scale_downs.empty()) << Render(plan);
  EXPECT_THAT(KeepReason(plan, "n1"),
              HasSubstr("pod ml/train-0 does not fit a node of pool gpu-spot: node(s) had "
                        "untolerated taint"));

  ReplaceCase g;  // more GPUs than the smaller shape has
  g.spot->template_node.allocatable.Set(model::InternResource("nvidia.com/gpu"), 0);
  plan = g.c.Plan(NoRateLimit());
  EXPECT_TRUE(plan.scale_downs.empty()) << Render(plan);
  EXPECT_THAT(KeepReason(plan, "n1"), HasSubstr("does not fit a node of pool gpu-spot"));
}

// A pool that may not grow is not chosen: in backoff (a spot stockout or a failed scale-up), at
// its max, or the cluster at maxNodes.
TEST(Replace, OnlyAPoolThatMayGrow) {
  ReplaceCase r;
  PlannerInput in = r.c.Input();
  in.backoff_until["gpu-spot"] = r.c.now() + minutes(5);
  ScaleDownPlan plan = ScaleDownPlanner().Plan(in, NoRateLimit());
  EXPECT_TRUE(plan.scale_downs.empty()) << Render(plan);
  EXPECT_THAT(KeepReason(plan, "n1"), HasSubstr("pool gpu-spot in backoff until"));
  in.backoff_until["gpu-spot"] = r.c.now();  // over
  EXPECT_EQ(Removed(ScaleDownPlanner().Plan(in, NoRateLimit())), Names{"n1"});

  in.upcoming["gpu-spot"] = 10;  // max 10
  plan = ScaleDownPlanner().Plan(in, NoRateLimit());
  EXPECT_TRUE(plan.scale_downs.empty()) << Render(plan);
  EXPECT_THAT(KeepReason(plan, "n1"), HasSubstr("pool gpu-spot at max 10"));

  in.upcoming.clear();
  r.c.config().limits.max_nodes = 1;
  plan = ScaleDownPlanner().Plan(in, NoRateLimit());
  EXPECT_TRUE(plan.scale_downs.empty()) << Render(plan);
  EXPECT_THAT(KeepReason(plan, "n1"), HasSubstr("cluster limit maxNodes 1 reached"));
}

TEST(Replace, TheSwitchTurnsItOff) {
  ReplaceCase r;
  r.c.config().scale_down.consolidation.replace = false;
  ScaleDownPlan plan = r.c.Plan(NoRateLimit());
  EXPECT_TRUE(plan.scale_downs.empty()) << Render(plan);
  EXPECT_THAT(KeepReason(plan, "n1"), Not(HasSubstr("gpu-spot")));
  // The Cluster Autoscaler-like policy evicts training regardless and never replaces.
  ReplaceCase ca;
  ScaleDownOptions o = NoRateLimit();
  o.evict_training_pods = true;
  EXPECT_TRUE(ca.c.Plan(o).scale_downs.empty());
}

// Pods that fit on the nodes that stay go there; only the rest go to the new node, and the
// extension of the nodes they land on is charged as for the delete move.
TEST(Replace, OnlyThePodsThatFitNowhereGoToTheNewNode) {
  ReplaceCase r;
  r.c.AddNode("cpu-1", "cpupool", {{"cpu", "8"}, {"memory", "32Gi"}});
  r.c.AddPod("web", "cpu-1", {{"cpu", "6"}});  // busy: stays
  r.c.AddPod("helper", "n1", {{"cpu", "1"}});  // a ReplicaSet's pod: fits on cpu-1
  ScaleDownPlan plan = r.c.Plan(NoRateLimit());
  ASSERT_EQ(Removed(plan), Names{"n1"}) << Render(plan);
  EXPECT_THAT(plan.scale_downs[0].replacement_pods, ElementsAre("ml/train-0"));
  EXPECT_THAT(plan.scale_downs[0].evict, ElementsAre("default/helper", "ml/train-0"));
  // The helper keeps a node for good: the horizon is maxHorizon, 6h x $5.60.
  EXPECT_NEAR(plan.scale_downs[0].consolidation->savings, 5.6 * 6, 1e-9);
}

// Back to spot: a busy on-demand node (above the utilization threshold) whose pods all tolerate
// spot is replaced by a spot node that holds them all. Two ReplicaSet pods: no work lost, the
// savings are ($8 - $2.40) x maxHorizon.
TEST(Replace, BackToSpotForABusyNode) {
  ReplaceCase r;
  r.pod->meta.owner_references = {{"apps/v1", "ReplicaSet", "rs", "rs-uid", true}};
  model::Pod& second = r.c.AddPod("serve-1", "n1", {{"cpu", "2"}, {"nvidia.com/gpu", "3"}}, "ml");
  second.tolerations = r.pod->tolerations;
  ScaleDownPlan plan = r.c.Plan(NoRateLimit());
  ASSERT_EQ(Removed(plan), Names{"n1"}) << Render(plan);
  EXPECT_THAT(plan.scale_downs[0].replacement_pods, ElementsAre("ml/serve-1", "ml/train-0"));
  EXPECT_NEAR(plan.scale_downs[0].consolidation->savings, 5.6 * 6, 1e-9);
  EXPECT_DOUBLE_EQ(plan.scale_downs[0].consolidation->work_lost, 0);

  // The spot pool at its max: the busy node stays for its utilization, as without the move.
  r.spot->max = 0;
  plan = r.c.Plan(NoRateLimit());
  EXPECT_TRUE(plan.scale_downs.empty()) << Render(plan);
  EXPECT_THAT(KeepReason(plan, "n1"), HasSubstr("utilization"));
}

// Two busy nodes of one pool, both worth moving to spot: maxNonEmptyPerPool 1 lets one go per
// pass. A busy node's pods are read only once the pass gets past the rate limit, so which one goes
// and why the other stays must be what they were when every busy node's pods were read first.
TEST(Replace, BusyNodesGoOneAPassUnderTheRateLimit) {
  ReplaceCase r;
  r.pod->meta.owner_references = {{"apps/v1", "ReplicaSet", "rs", "rs-uid", true}};
  ResourceList shape = {{"cpu", "32"}, {"memory", "256Gi"}, {"nvidia.com/gpu", "4"}};
  r.c.AddNode("n2", "gpu-od", shape);
  model::Pod* on_n2 = nullptr;
  for (const char* n : {"n1", "n2"}) {
    on_n2 =
        &r.c.AddPod(std::string("serve-") + n, n, {{"cpu", "2"}, {"nvidia.com/gpu", "3"}}, "ml");
    on_n2->tolerations = r.pod->tolerations;
  }
  // n1 at 4 of 4 GPUs, n2 at 3 of 4: the lower utilization goes first.
  for (const ScaleDownPlan& plan : {r.c.Plan(), r.c.PlanOnModel()}) {
    EXPECT_EQ(Removed(plan), Names{"n2"}) << Render(plan);
    EXPECT_THAT(KeepReason(plan, "n1"), HasSubstr("utilization"));
  }
  // n2's pod may not be evicted: n2 stays (for its utilization, as any busy node the move does
  // not take), and the pool's one removal of the pass goes to n1.
  on_n2->meta.annotations[std::string(kDoNotDisruptAnnotation)] = "true";
  for (const ScaleDownPlan& plan : {r.c.Plan(), r.c.PlanOnModel()}) {
    EXPECT_EQ(Removed(plan), Names{"n1"}) << Render(plan);
    EXPECT_THAT(KeepReason(plan, "n2"), HasSubstr("utilization"));
  }
}
// --- One new node for several nodes ------------------------------------------------------------

// n1 and n2: on-demand 4-GPU nodes at $8/h, each running one 1-GPU pod that asks for 6 of its 8
// cpus, so neither pod fits on the other node (25 % GPU: both are candidates). No pool is cheaper
// than one node; pool "pair" (2 GPUs, 16 cpus) at $10/h is cheaper than both. Each member is
// weighed at its share of the new node's price: $10 x 8/16 = $5/h.
struct GroupCase {
  Cluster c;
  model::Pool* pair;
  std::vector<model::Pod*> pods;
  GroupCase() {
    c.config().scale_down.consolidation.replace = true;
    ResourceList shape = {{"cpu", "8"}, {"memory", "64Gi"}, {"nvidia.com/gpu", "4"}};
    c.AddPool("gpu-od", 0).price_per_hour = 8;
    pair = &c.AddPool("pair", 0, 10);
    pair->price_per_hour = 10;
    model::Node& t = pair->template_node;
    t.meta.labels[std::string(model::kLabelPool)] = "pair";
    t.allocatable = Res({{"cpu", "16"}, {"memory", "128Gi"}, {"nvidia.com/gpu", "2"}});
    t.allocatable.Set(model::kPods, 110);
    t.capacity = t.allocatable;
    t.ready = true;
    for (const char* n : {"n1", "n2"}) {
      c.AddNode(n, "gpu-od", shape);
      pods.push_back(
          &c.AddPod(std::string("serve-") + n, n, {{"cpu", "6"}, {"nvidia.com/gpu", "1"}}, "ml"));
    }
  }
  // Makes the pods training pods that ran 2h of an expected 4h50m, without checkpoints: horizon
  // 2h50m, work lost (2h + 2m restart) x $2/h (a quarter of the node) = $4.07, x safety 2.
  void Training() {
    for (model::Pod* p : pods) {
      p->meta.owner_references = {{"batch/v1", "Job", p->meta.name, p->meta.name + "-uid", true}};
      p->start_time = c.now() - hours(2);
      p->meta.annotations[std::string(kExpectedRuntimeAnnotation)] = "4h50m";
    }
  }
};

TEST(ReplaceTogether, TwoNodesGoToOneNewNodeCheaperThanBoth) {
  GroupCase g;
  ScaleDownPlan plan = g.c.Plan(NoRateLimit());
  ASSERT_EQ(Removed(plan), (Names{"n1", "n2"})) << Render(plan);
  for (const ScaleDown& sd : plan.scale_downs) {
    EXPECT_EQ(sd.replacement_pool, "pair");
    EXPECT_THAT(sd.replacement_group, ElementsAre("n1", "n2"));
    EXPECT_THAT(sd.replacement_pods, ElementsAre("ml/serve-" + sd.node));
    ASSERT_TRUE(sd.consolidation.has_value());
    // Services keep a node for good: ($8 - $5) x maxHorizon 6h, nothing lost.
    EXPECT_NEAR(sd.consolidation->savings, 3.0 * 6, 1e-9);
    EXPECT_DOUBLE_EQ(sd.consolidation->replacement_price_per_hour, 5);
    EXPECT_DOUBLE_EQ(sd.consolidation->work_lost, 0);
  }
  EXPECT_THAT(ScaleDownPlanner().Explain(g.c.Input(), "n2"),
              HasSubstr("Removable now (underutilized): consolidation pays: replacing the $8.00/h "
                        "node with one of pool pair at $5.00/h saves $18.00 over 6h against $0.00 "
                        "of work lost (0.00 GPU-h unsaved, 0 training pod(s), restarts included) x "
                        "safety 2; one new node of pool pair replaces nodes n1, n2: ml/serve-n2 "
                        "move there."));
  // Alone, neither node has a cheaper replacement.
  g.c.config().pools.back().price_per_hour = 16;  // as dear as both
  plan = g.c.Plan(NoRateLimit());
  EXPECT_TRUE(plan.scale_downs.empty()) << Render(plan);
  EXPECT_THAT(KeepReason(plan, "n1"), HasSubstr("ml/serve-n1 cannot be moved"));
}

// Training pods: each member saves ($8 - $5) x 2h50m = $8.50 against $4.07 x 2 = $8.13: it pays.
// With the pair at $12/h ($6 each), $5.67: it does not, and both stay.
TEST(ReplaceTogether, EachMemberMustPayForItsWorkLost) {
  GroupCase g;
  g.Training();
  ScaleDownPlan plan = g.c.Plan(NoRateLimit());
  ASSERT_EQ(Removed(plan), (Names{"n1", "n2"})) << Render(plan);
  EXPECT_NEAR(plan.scale_downs[0].consolidation->savings, 3.0 * (2 + 50 / 60.0), 1e-9);
  EXPECT_NEAR(plan.scale_downs[0].consolidation->work_lost, 2.0 * (2 + 2 / 60.0), 1e-9);
  EXPECT_THAT(plan.scale_downs[0].Detail(),
              HasSubstr("replacing the $8.00/h node with one of pool pair at $5.00/h saves $8.50"));

  g.pair->price_per_hour = 12;
  plan = g.c.Plan(NoRateLimit());
  EXPECT_TRUE(plan.scale_downs.empty()) << Render(plan);
}

// All or none: a PodDisruptionBudget that allows one eviction lets neither go (the group needs
// two); a pool that may not grow is not chosen; the switch turns the move off.
TEST(ReplaceTogether, AllMembersOrNone) {
  GroupCase g;
  for (model::Pod* p : g.pods) p->meta.labels["app"] = "serve";
  model::PodDisruptionBudget& pdb = g.c.AddPdb("serve", {{"app", "serve"}}, "ml");
  pdb.disruptions_allowed = 1;
  ScaleDownPlan plan = g.c.Plan(NoRateLimit());
  EXPECT_TRUE(plan.scale_downs.empty()) << Render(plan);
  pdb.disruptions_allowed = 2;
  EXPECT_EQ(Removed(g.c.Plan(NoRateLimit())), (Names{"n1", "n2"}));

  g.pair->max = 0;
  EXPECT_TRUE(g.c.Plan(NoRateLimit()).scale_downs.empty());
  g.pair->max = 10;
  g.c.config().scale_down.consolidation.replace = false;
  EXPECT_TRUE(g.c.Plan(NoRateLimit()).scale_downs.empty());
}

// A third candidate, tried first, whose pod only fits its own shape stays out of the group; the
// other two still go together.
TEST(ReplaceTogether, ANodeTheNewNodeCannotAlsoHoldStaysOut) {
  GroupCase g;
  g.c.AddNode("n0", "gpu-od", {{"cpu", "8"}, {"memory", "64Gi"}, {"nvidia.com/gpu", "4"}})
      .meta.labels["shape"] = "big";
  g.c.AddPod("serve-n0", "n0", {{"cpu", "6"}, {"nvidia.com/gpu", "1"}}, "ml")
      .node_selector["shape"] = "big";
  ScaleDownPlan plan = g.c.Plan(NoRateLimit());
  ASSERT_EQ(Removed(plan), (Names{"n1", "n2"})) << Render(plan);
  EXPECT_THAT(KeepReason(plan, "n0"), HasSubstr("ml/serve-n0 cannot be moved"));
}

// Explain says where each pod goes, the replacement pool and price, and the numbers.
TEST(Replace, ExplainNamesTheReplacement) {
  ReplaceCase r;
  std::string out = ScaleDownPlanner().Explain(r.c.Input(), "n1");
  EXPECT_THAT(out, HasSubstr("Removable now (underutilized): consolidation pays: replacing the "
                             "$8.00/h node with one of pool gpu-spot at $2.40/h saves $15.87"));
  EXPECT_THAT(out, HasSubstr("ml/train-0 -> a new node of pool gpu-spot"));
}

}  // namespace
}  // namespace tidepool::planner
