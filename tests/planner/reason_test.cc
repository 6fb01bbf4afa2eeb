// The kind of each per-pool reason a scale-up gives a pod it cannot help: what metrics and
// `explain` branch on, so it must name the rule that blocked the pool, not only say it in words.
#include "planner/reason.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "kube/codec/objects.h"
#include "kube/config/autoscaler_config.h"
#include "planner/explain.h"
#include "planner/scale_up.h"
#include "tests/testing/values.h"

namespace tidepool::planner {
namespace {

using ::testing::HasSubstr;

std::string Pool(std::string_view name, std::string_view capacity, int max,
                 std::string_view extra = "") {
  return fmt::format(
      "- {{name: {}, min: 0, max: {}, pricePerHour: 1.0, template: {{labels: {{team: ml}}, "
      "capacity: {{{}, pods: '110'}}{}}}}}\n",
      name, max, capacity, extra);
}

std::string PendingPod(std::string_view name, std::string_view requests,
                       std::string_view owner = "ReplicaSet") {
  return fmt::format(
      "- {{apiVersion: v1, kind: Pod, metadata: {{name: {0}, namespace: ml, uid: uid-{0}, "
      "creationTimestamp: '2026-11-01T00:00:00Z', ownerReferences: [{{apiVersion: v1, kind: {2}, "
      "name: job, uid: uid-job, controller: true}}], labels: {3}}}, spec: {{nodeSelector: {{team: "
      "ml}}, containers: [{{name: main, resources: "
      "{{requests: {{{1}}}}}}}]}}, status: {{phase: Pending}}}}\n",
      name, requests, owner,
      owner == "ReplicaSet" ? "{}" : "{training.kubeflow.org/job-name: job}");
}

std::string BusyNode(std::string_view name, std::string_view pool, std::string_view capacity) {
  return fmt::format(
      "- {{apiVersion: v1, kind: Node, metadata: {{name: {0}, labels: {{tidepool.dev/pool: {1}, "
      "team: ml}}, creationTimestamp: '2026-11-01T00:00:00Z'}}, status: {{capacity: {{{2}, pods: "
      "'110'}}, allocatable: {{{2}, pods: '110'}}, conditions: [{{type: Ready, status: "
      "'True'}}]}}}}\n"
      "- {{apiVersion: v1, kind: Pod, metadata: {{name: on-{0}, namespace: ml, uid: uid-on-{0}}}, "
      "spec: {{nodeName: {0}, containers: [{{name: main, resources: {{requests: {{{2}}}}}}}]}}, "
      "status: {{phase: Running}}}}\n",
      name, pool, capacity);
}

struct Planned {
  model::AutoscalerConfig config;
  kube::codec::ClusterState state;
  ScaleUpPlan plan;

  const PoolReason& Reason(std::string_view pod, std::string_view pool) const {
    for (const Unschedulable& u : plan.unschedulable)
      if (u.pod == pod) return u.reasons.at(std::string(pool));
    ADD_FAILURE() << pod << " is not unschedulable";
    static const PoolReason kNone;
    return kNone;
  }
};

Planned Plan(const std::string& config, const std::string& objects,
             std::map<std::string, Time, std::less<>> backoff = {}) {
  Planned p;
  auto c = kube::config::ParseAutoscalerConfig(
      "apiVersion: tidepool.dev/v1alpha1\nkind: AutoscalerConfig\nprovider: {type: kwok}\n" +
          config,
      "config");
  EXPECT_TRUE(c) << c.error().message();
  p.config = *c;
  auto s = kube::codec::DecodeState("apiVersion: v1\nkind: List\nitems:\n" + objects, "state");
  EXPECT_TRUE(s) << s.error().message();
  p.state = std::move(*s);
  PlannerInput in;
  in.config = &p.config;
  for (const auto& n : p.state.nodes) in.nodes.push_back(&n);
  for (const auto& pod : p.state.pods) in.pods.push_back(&pod);
  in.backoff_until = std::move(backoff);
  in.now = testing::At("2026-11-01T00:10:00Z");
  p.plan = ScaleUpPlanner().Plan(in);
  return p;
}

TEST(ReasonKindTest, EachPoolSaysWhichRuleBlocksIt) {
  std::string pools = "pools:\n" + Pool("small", "cpu: '1', memory: 4Gi", 5) +
                      Pool("tainted", "cpu: '8', memory: 32Gi", 5,
                           ", taints: [{key: sku, value: gpu, effect: NoSchedule}]") +
                      Pool("full", "cpu: '8', memory: 32Gi", 1) +
                      Pool("resting", "cpu: '8', memory: 32Gi", 5);
  Planned p = Plan(pools,
                   BusyNode("full-0", "full", "cpu: '8', memory: 32Gi") +
                       PendingPod("p", "cpu: '4', memory: 1Gi"),
                   {{"resting", testing::At("2026-11-01T00:15:00Z")}});
  EXPECT_EQ(p.Reason("ml/p", "small").kind, ReasonKind::kInsufficientResources);
  EXPECT_EQ(p.Reason("ml/p", "tainted").kind, ReasonKind::kTaint);
  EXPECT_EQ(p.Reason("ml/p", "full").kind, ReasonKind::kPoolMax);
  EXPECT_EQ(p.Reason("ml/p", "resting").kind, ReasonKind::kBackoff);
  EXPECT_THAT(p.Reason("ml/p", "resting").text, HasSubstr("in backoff until"));
}

TEST(ReasonKindTest, ClusterLimitsNameTheirResource) {
  std::string nodes = "limits: {maxNodes: 1}\npools:\n" + Pool("cpu", "cpu: '8', memory: 8Gi", 5);
  Planned by_count = Plan(nodes, BusyNode("cpu-0", "cpu", "cpu: '8', memory: 8Gi") +
                                     PendingPod("p", "cpu: '4', memory: 1Gi"));
  EXPECT_EQ(by_count.Reason("ml/p", "cpu").kind, ReasonKind::kClusterMaxNodes);

  std::string gpus = "limits: {nvidia.com/gpu: '1'}\npools:\n" +
                     Pool("gpu", "cpu: '8', memory: 8Gi, nvidia.com/gpu: '1'", 5);
  Planned by_gpu =
      Plan(gpus, BusyNode("gpu-0", "gpu", "cpu: '8', memory: 8Gi, nvidia.com/gpu: '1'") +
                     PendingPod("p", "cpu: '4', memory: 1Gi, nvidia.com/gpu: '1'"));
  const PoolReason& r = by_gpu.Reason("ml/p", "gpu");
  EXPECT_EQ(r.kind, ReasonKind::kClusterResource);
  EXPECT_EQ(r.resource, model::InternResource("nvidia.com/gpu"));
  model::Pool pool = by_gpu.config.pools.at(0);
  EXPECT_THAT(ExplainReason(by_gpu.state.pods.at(1), pool, r),
              HasSubstr("(raise limits.nvidia.com/gpu)"));
}

TEST(ReasonKindTest, PassLimitAndGang) {
  std::string one_per_pass =
      "scaleUp: {maxNodesPerScaleUp: 1}\npools:\n" + Pool("cpu", "cpu: '8', memory: 8Gi", 5);
  Planned pass = Plan(one_per_pass, PendingPod("a", "cpu: '6', memory: 1Gi") +
                                        PendingPod("b", "cpu: '6', memory: 1Gi"));
  ASSERT_EQ(pass.plan.unschedulable.size(), 1u);
  EXPECT_EQ(pass.plan.unschedulable[0].reasons.at("cpu").kind, ReasonKind::kScaleUpLimit);

  std::string gang = "pools:\n" + Pool("gpu", "cpu: '8', memory: 8Gi, nvidia.com/gpu: '4'", 1);
  Planned g =
      Plan(gang, PendingPod("w-0", "cpu: '6', memory: 1Gi, nvidia.com/gpu: '4'", "PyTorchJob") +
                     PendingPod("w-1", "cpu: '6', memory: 1Gi, nvidia.com/gpu: '4'", "PyTorchJob"));
  EXPECT_EQ(g.Reason("ml/w-0", "gpu").kind, ReasonKind::kGang);
  EXPECT_EQ(g.Reason("ml/w-1", "gpu").kind, ReasonKind::kGang);
  // The member left over met the pool's max: explain names that remedy for the whole gang.
  EXPECT_EQ(g.Reason("ml/w-1", "gpu").member_kind, ReasonKind::kPoolMax);
  EXPECT_THAT(ExplainReason(g.state.pods.at(1), g.config.pools.at(0), g.Reason("ml/w-1", "gpu")),
              HasSubstr("all or nothing): 1 member(s) cannot be placed: pool gpu at max 1 (raise "
                        "pools[gpu].max"));
}

TEST(ReasonKindTest, LabelsAreBounded) {
  EXPECT_EQ(ReasonKindLabel(ReasonKind::kClusterMaxNodes), "cluster_limit");
  EXPECT_EQ(ReasonKindLabel(ReasonKind::kClusterResource), "cluster_limit");
  EXPECT_EQ(ReasonKindLabel(ReasonKind::kTooManyPods), "too_many_pods");
  EXPECT_EQ(ReasonKindLabel(ReasonKind::kScaleUpLimit), "scale_up_limit");
  sched::FitResult too_many{sched::FitCode::kNodeResources, "Too many pods", model::kPods};
  EXPECT_EQ(FromFit(too_many).kind, ReasonKind::kTooManyPods);
  sched::FitResult existing{sched::FitCode::kExistingAntiAffinity, "x"};
  EXPECT_EQ(FromFit(existing).kind, ReasonKind::kPodAntiAffinity);
}

// The capacity GrowthLimit reads is summed only in the limited resources, and what is about to
// come counts with it.
TEST(GrowthLimitTest, CountsTheLimitedResourcesOfTheClusterAndWhatComes) {
  model::ClusterLimits limits;
  limits.resources.Set(model::kCpu, 10000);
  limits.limited.push_back(model::kCpu);
  model::Pool pool;
  pool.name = "p";
  pool.max = 100;
  pool.template_node.capacity = testing::Res({{"cpu", "4"}, {"memory", "8Gi"}});
  LimitedCapacity cluster(limits);
  cluster.Add(testing::Res({{"cpu", "2"}, {"memory", "64Gi"}}));
  EXPECT_EQ(cluster.Get(model::kCpu), 2000);
  EXPECT_EQ(cluster.Get(model::kMemory), 0);  // not limited, not summed
  // 2 + 4 <= 10 cpu; with 4 more about to come, 2 + 4 + 4 <= 10 still; with 5, not.
  EXPECT_FALSE(GrowthLimit(pool, 0, limits, 1, cluster, {}));
  EXPECT_FALSE(GrowthLimit(pool, 0, limits, 1, cluster, testing::Res({{"cpu", "4"}})));
  auto limit = GrowthLimit(pool, 0, limits, 1, cluster, testing::Res({{"cpu", "5"}}));
  ASSERT_TRUE(limit);
  EXPECT_EQ(limit->kind, ReasonKind::kClusterResource);
  EXPECT_EQ(limit->text, "cluster limit cpu 10 reached");
  // A node taken away gives its capacity back.
  cluster.Add(testing::Res({{"cpu", "2"}}), -1);
  EXPECT_EQ(cluster.Get(model::kCpu), 0);
}

}  // namespace
}  // namespace tidepool::planner
