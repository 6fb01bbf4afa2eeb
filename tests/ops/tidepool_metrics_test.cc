#include "ops/tidepool_metrics.h"

#include <gtest/gtest.h>

#include <regex>

#include "model/provisioning_request.h"
#include "tests/ops/exposition_parser.h"
#include "tests/testing/values.h"

namespace tidepool::ops {
namespace {

using testing::ParseExposition;
using tidepool::testing::At;

model::AutoscalerConfig TwoPools() {
  model::AutoscalerConfig c;
  model::Pool spot;
  spot.name = "gpu-spot";
  spot.max = 10;
  spot.price_per_hour = 0.9;
  model::Pool cpu;
  cpu.name = "cpu";
  cpu.max = 5;
  cpu.price_per_hour = 0.1;
  c.pools = {spot, cpu};
  return c;
}

autoscaler::Status SampleStatus() {
  autoscaler::Status s;
  s.last_step = At("2026-03-01T12:00:00Z");
  s.pending_pods = 7;
  s.gated_pods = 3;
  autoscaler::PoolStatus spot;
  spot.name = "gpu-spot";
  spot.min = 0;
  spot.max = 10;
  spot.target = 4;
  spot.registered = 3;
  spot.ready = 2;
  spot.upcoming = 2;
  spot.backoff_until = At("2026-03-01T12:05:00Z");
  spot.backoff_reason = "stockout";
  spot.stockout = true;
  autoscaler::PoolStatus cpu;
  cpu.name = "cpu";
  cpu.min = 1;
  cpu.max = 5;
  cpu.target = 2;
  cpu.registered = 2;
  cpu.ready = 2;
  s.pools = {spot, cpu};
  s.removals = {{"cpu-node-1", "cpu", "draining", At("2026-03-01T11:59:00Z"), 2}};
  s.unneeded = {{"cpu-node-1", At("2026-03-01T11:40:00Z")},
                {"cpu-node-2", At("2026-03-01T11:50:00Z")}};
  s.unschedulable = std::make_shared<const std::vector<planner::Unschedulable>>(
      std::vector<planner::Unschedulable>{
          {"ml/big",
           {{"cpu",
             {planner::ReasonKind::kInsufficientResources, "Insufficient nvidia.com/gpu"}}}}});
  return s;
}

TEST(TidepoolMetricsTest, NamesFollowPrometheusConventions) {
  Registry r;
  TidepoolMetrics m(r, "0.1.0");
  auto parsed = ParseExposition(r.Render());
  ASSERT_EQ(parsed.error, "");
  ASSERT_GT(parsed.families.size(), 20u);
  std::regex unit(".*_(seconds|total|info|nodes|pods|hour|backoff|stockout|leader)$");
  for (const auto& f : parsed.families) {
    EXPECT_TRUE(f.name.starts_with("tidepool_")) << f.name;
    EXPECT_TRUE(f.has_help && !f.help.empty()) << f.name;
    EXPECT_EQ(f.type == "counter", f.name.ends_with("_total")) << f.name;
    EXPECT_TRUE(std::regex_match(f.name, unit)) << f.name << " should name its unit";
    if (f.type == "histogram") {
      EXPECT_TRUE(f.name.ends_with("_seconds")) << f.name;
    }
  }
  EXPECT_EQ(parsed.Value("tidepool_build_info", {{"version", "0.1.0"}}), 1);
}

TEST(TidepoolMetricsTest, UpdateDerivesGaugesFromStatus) {
  Registry r;
  TidepoolMetrics m(r, "dev");
  m.Update(SampleStatus(), TwoPools());
  auto p = ParseExposition(r.Render());
  ASSERT_EQ(p.error, "");
  EXPECT_EQ(p.Value("tidepool_pending_pods"), 7);
  EXPECT_EQ(p.Value("tidepool_gated_pods"), 3);
  EXPECT_EQ(p.Value("tidepool_unneeded_nodes"), 2);
  EXPECT_EQ(p.Value("tidepool_unschedulable_pods", {{"reason", "insufficient_resources"}}), 1);
  EXPECT_EQ(p.Value("tidepool_last_step_timestamp_seconds"), 1772366400);
  EXPECT_EQ(p.Value("tidepool_nodes", {{"pool", "gpu-spot"}, {"state", "ready"}}), 2);
  EXPECT_EQ(p.Value("tidepool_nodes", {{"pool", "gpu-spot"}, {"state", "not_ready"}}), 1);
  EXPECT_EQ(p.Value("tidepool_nodes", {{"pool", "gpu-spot"}, {"state", "upcoming"}}), 2);
  EXPECT_EQ(p.Value("tidepool_nodes", {{"pool", "cpu"}, {"state", "removing"}}), 1);
  EXPECT_EQ(p.Value("tidepool_pool_min_nodes", {{"pool", "cpu"}}), 1);
  EXPECT_EQ(p.Value("tidepool_pool_max_nodes", {{"pool", "gpu-spot"}}), 10);
  EXPECT_EQ(p.Value("tidepool_pool_target_nodes", {{"pool", "gpu-spot"}}), 4);
  EXPECT_EQ(p.Value("tidepool_pool_backoff", {{"pool", "gpu-spot"}}), 1);
  EXPECT_EQ(p.Value("tidepool_pool_backoff", {{"pool", "cpu"}}), 0);
  EXPECT_EQ(p.Value("tidepool_pool_backoff_until_timestamp_seconds", {{"pool", "gpu-spot"}}),
            1772366700);
  EXPECT_FALSE(p.Value("tidepool_pool_backoff_until_timestamp_seconds", {{"pool", "cpu"}}));
  EXPECT_EQ(p.Value("tidepool_pool_stockout", {{"pool", "gpu-spot"}}), 1);
  // gpu-spot: max(target 4, registered 3) x 0.9; cpu: max(2, 2 + 1 removing) x 0.1.
  EXPECT_DOUBLE_EQ(*p.Value("tidepool_pool_estimated_cost_per_hour", {{"pool", "gpu-spot"}}), 3.6);
  EXPECT_DOUBLE_EQ(*p.Value("tidepool_pool_estimated_cost_per_hour", {{"pool", "cpu"}}), 0.3);

  // A pool that left the status leaves the metrics too; backoff that ended drops its timestamp.
  autoscaler::Status later = SampleStatus();
  later.pools.pop_back();
  later.pools[0].backoff_until.reset();
  later.unschedulable = autoscaler::NoUnschedulablePods();
  m.Update(later, TwoPools());
  auto p2 = ParseExposition(r.Render());
  ASSERT_EQ(p2.error, "");
  EXPECT_FALSE(p2.Value("tidepool_pool_max_nodes", {{"pool", "cpu"}}));
  EXPECT_FALSE(p2.Value("tidepool_nodes", {{"pool", "cpu"}, {"state", "ready"}}));
  EXPECT_FALSE(p2.Value("tidepool_pool_backoff_until_timestamp_seconds", {{"pool", "gpu-spot"}}));
  EXPECT_EQ(p2.Value("tidepool_pool_backoff", {{"pool", "gpu-spot"}}), 0);
  EXPECT_FALSE(p2.Value("tidepool_unschedulable_pods", {{"reason", "insufficient_resources"}}));
}

TEST(TidepoolMetricsTest, UnschedulableCountsEachPodOncePerCategory) {
  using planner::PoolReason;
  using planner::ReasonKind;
  Registry r;
  TidepoolMetrics m(r, "dev");
  const PoolReason gpu{ReasonKind::kInsufficientResources, "Insufficient nvidia.com/gpu"};
  m.SetUnschedulable({
      {"ml/a", {{"cpu", gpu}, {"gpu-spot", {ReasonKind::kBackoff, "pool gpu-spot in backoff"}}}},
      {"ml/b",
       {{"cpu", gpu}, {"gpu-spot", {ReasonKind::kInsufficientResources, "Insufficient memory"}}}},
      // A gang's words embed a member's reason; the kind alone decides the label.
      {"ml/c",
       {{"cpu", {ReasonKind::kTaint, "node(s) had untolerated taint {sku: gpu}"}},
        {"gpu-spot",
         {ReasonKind::kGang,
          "gang ml/pg:x (4 members, all or nothing): 2 member(s) cannot be placed: Insufficient "
          "nvidia.com/gpu"}}}},
      {"ml/d", {}},
      {"ml/e",
       {{"cpu", {ReasonKind::kClusterMaxNodes, "cluster limit maxNodes 10 reached"}},
        {"gpu-spot", {ReasonKind::kClusterResource, "cluster limit nvidia.com/gpu 8 reached"}}}},
  });
  auto p = ParseExposition(r.Render());
  ASSERT_EQ(p.error, "");
  EXPECT_EQ(p.Value("tidepool_unschedulable_pods", {{"reason", "insufficient_resources"}}), 2);
  EXPECT_EQ(p.Value("tidepool_unschedulable_pods", {{"reason", "backoff"}}), 1);
  EXPECT_EQ(p.Value("tidepool_unschedulable_pods", {{"reason", "taint"}}), 1);
  EXPECT_EQ(p.Value("tidepool_unschedulable_pods", {{"reason", "gang"}}), 1);
  EXPECT_EQ(p.Value("tidepool_unschedulable_pods", {{"reason", "other"}}), 1);
  EXPECT_EQ(p.Value("tidepool_unschedulable_pods", {{"reason", "cluster_limit"}}), 1);
  m.SetUnschedulable({});
  EXPECT_EQ(ParseExposition(r.Render()).Find("tidepool_unschedulable_pods")->samples.size(), 0u);
}

TEST(TidepoolMetricsTest, CountersAndHistograms) {
  Registry r;
  TidepoolMetrics m(r, "dev");
  m.SetLeader(true);
  m.RecordScaleUp("gpu-spot", "pending_pods", 3);
  m.RecordScaleUp("gpu-spot", "pending_pods", 1);
  m.RecordScaleDown("cpu", planner::RemovalKindName(planner::RemovalKind::kEmpty));
  m.RecordScaleDown("cpu", planner::RemovalKindName(planner::RemovalKind::kUnderutilized));
  m.RecordScaleDownFailure("cpu");
  m.RecordEviction(EvictionResultOf(Result<void>{}));
  m.RecordEviction(EvictionResultOf(Fail(Error::Code::kThrottled, "429")));
  m.RecordEviction(EvictionResultOf(Fail(Error::Code::kNotFound, "gone")));
  m.RecordEviction(EvictionResultOf(Fail(Error::Code::kUnavailable, "503")));
  m.ObserveLoopDuration(0.02);
  m.RecordUnchangedStep();
  m.RecordUnchangedStep();
  m.ObservePlanningDuration("scale_up", 0.004);
  m.RecordKubeRequest("patch", "nodes", 200, 0.01);
  m.RecordKubeRequest("create", "pods/eviction", 429, 0.01);
  m.RecordKubeRequest("list", "pods", 0, 5);
  m.RecordCloudRequest("aks", "agentpool.scale", 409, 1.5);
  m.RecordInvalidObject("Pod");
  const model::Condition provisioned{model::ProvisioningCondition::kProvisioned,
                                     model::ConditionStatus::kTrue};
  const model::Condition waiting{model::ProvisioningCondition::kProvisioned,
                                 model::ConditionStatus::kFalse};
  const std::string_view atomic =
      model::ProvisioningClassLabel(model::ProvisioningClass::kBestEffortAtomic);
  m.RecordProvisioning(atomic, model::ProvisioningOutcomeLabel(provisioned));
  m.RecordProvisioning(atomic, model::ProvisioningOutcomeLabel(waiting));
  m.RecordProvisioning(atomic, model::ProvisioningOutcomeLabel(waiting));

  auto p = ParseExposition(r.Render());
  ASSERT_EQ(p.error, "");
  EXPECT_EQ(p.Value("tidepool_leader"), 1);
  EXPECT_EQ(p.Value("tidepool_scale_ups_total", {{"pool", "gpu-spot"}, {"reason", "pending_pods"}}),
            2);
  EXPECT_EQ(p.Value("tidepool_scale_up_nodes_total", {{"pool", "gpu-spot"}}), 4);
  EXPECT_EQ(p.Value("tidepool_scale_downs_total", {{"pool", "cpu"}, {"reason", "empty"}}), 1);
  EXPECT_EQ(p.Value("tidepool_scale_downs_total", {{"pool", "cpu"}, {"reason", "underutilized"}}),
            1);
  EXPECT_EQ(p.Value("tidepool_scale_down_failures_total", {{"pool", "cpu"}}), 1);
  EXPECT_EQ(p.Value("tidepool_provisioning_requests_total",
                    {{"class", "best_effort_atomic"}, {"outcome", "provisioned"}}),
            1);
  EXPECT_EQ(p.Value("tidepool_provisioning_requests_total",
                    {{"class", "best_effort_atomic"}, {"outcome", "waiting"}}),
            2);
  for (const char* result : {"evicted", "blocked_by_pdb", "not_found", "error"}) {
    EXPECT_EQ(p.Value("tidepool_evictions_total", {{"result", result}}), 1) << result;
  }
  EXPECT_EQ(p.Value("tidepool_loop_duration_seconds_count"), 1);
  EXPECT_EQ(p.Value("tidepool_loop_unchanged_steps_total"), 2);
  EXPECT_EQ(p.Value("tidepool_loop_duration_seconds_bucket", {{"le", "0.025"}}), 1);
  EXPECT_EQ(p.Value("tidepool_loop_duration_seconds_bucket", {{"le", "0.01"}}), 0);
  EXPECT_EQ(p.Value("tidepool_planning_duration_seconds_count", {{"phase", "scale_up"}}), 1);
  EXPECT_EQ(p.Value("tidepool_kube_api_requests_total",
                    {{"verb", "patch"}, {"resource", "nodes"}, {"code", "200"}}),
            1);
  EXPECT_FALSE(p.Value("tidepool_kube_api_errors_total",
                       {{"verb", "patch"}, {"resource", "nodes"}, {"code", "200"}}));
  EXPECT_EQ(p.Value("tidepool_kube_api_errors_total",
                    {{"verb", "create"}, {"resource", "pods/eviction"}, {"code", "429"}}),
            1);
  EXPECT_EQ(p.Value("tidepool_kube_api_errors_total",
                    {{"verb", "list"}, {"resource", "pods"}, {"code", "none"}}),
            1);
  EXPECT_EQ(p.Value("tidepool_kube_api_request_duration_seconds_count", {{"verb", "list"}}), 1);
  EXPECT_EQ(p.Value("tidepool_cloud_errors_total",
                    {{"provider", "aks"}, {"operation", "agentpool.scale"}, {"code", "409"}}),
            1);
  EXPECT_EQ(p.Value("tidepool_invalid_objects_skipped_total", {{"kind", "Pod"}}), 1);
}

TEST(TidepoolMetricsTest, StoppedNodesOnlyForDeallocatePools) {
  Registry r;
  TidepoolMetrics m(r, "dev");
  autoscaler::Status s = SampleStatus();
  s.pools[0].deallocate = true;
  s.pools[0].stopped = 3;
  s.pools[0].max_stopped = 4;
  m.Update(s, TwoPools());
  auto p = ParseExposition(r.Render());
  ASSERT_EQ(p.error, "");
  EXPECT_EQ(p.Value("tidepool_pool_stopped_nodes", {{"pool", "gpu-spot"}}), 3);
  EXPECT_FALSE(p.Value("tidepool_pool_stopped_nodes", {{"pool", "cpu"}}));
}

}  // namespace
}  // namespace tidepool::ops
