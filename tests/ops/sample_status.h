// A realistic autoscaler Status and status-page extras (three pools, a backoff, a drain, pending
// pods with reasons), shared by the status page tests and the Chromium rendering check.
#pragma once

#include "autoscaler/status.h"
#include "model/pool.h"
#include "ops/status_page.h"
#include "tests/testing/values.h"

namespace tidepool::ops::testing {

inline model::AutoscalerConfig SampleConfig() {
  model::AutoscalerConfig c;
  c.provider.type = "aks";
  auto pool = [](const char* name, int min, int max, model::CapacityType type, double price,
                 const char* instance) {
    model::Pool p;
    p.name = name;
    p.min = min;
    p.max = max;
    p.capacity_type = type;
    p.price_per_hour = price;
    p.instance_type = instance;
    return p;
  };
  c.pools = {
      pool("cpu", 1, 20, model::CapacityType::kOnDemand, 0.192, "Standard_D8s_v5"),
      pool("gpu-light-spot", 0, 16, model::CapacityType::kSpot, 0.27, "Standard_NC4as_T4_v3"),
      pool("gpu-heavy-spot", 0, 8, model::CapacityType::kSpot, 3.67, "Standard_NC24ads_A100_v4"),
      pool("gpu-heavy", 0, 8, model::CapacityType::kOnDemand, 3.67, "Standard_NC24ads_A100_v4")};
  return c;
}

inline autoscaler::Status SampleStatus() {
  using tidepool::testing::At;
  autoscaler::Status s;
  s.last_step = At("2026-03-01T12:00:00Z");
  s.pending_pods = 9;
  s.batch_open_since = At("2026-03-01T11:59:58Z");
  auto pool = [](const char* name, int min, int max, int target, int registered, int ready,
                 int upcoming) {
    autoscaler::PoolStatus p;
    p.name = name;
    p.min = min;
    p.max = max;
    p.target = target;
    p.registered = registered;
    p.ready = ready;
    p.upcoming = upcoming;
    return p;
  };
  s.pools = {pool("cpu", 1, 20, 6, 6, 6, 0), pool("gpu-light-spot", 0, 16, 5, 3, 2, 3),
             pool("gpu-heavy-spot", 0, 8, 0, 0, 0, 0), pool("gpu-heavy", 0, 8, 8, 8, 7, 0)};
  s.pools[2].backoff_until = At("2026-03-01T12:07:30Z");
  s.pools[2].backoff_reason =
      "stockout: SkuNotAvailable: the requested VM size Standard_NC24ads_A100_v4 is not available "
      "in westeurope for spot";
  s.pools[2].stockout = true;
  s.last_scale_up = autoscaler::ScaleUpRecord{
      At("2026-03-01T11:58:10Z"),
      "gpu-light-spot",
      2,
      5,
      {"ml/bert-finetune-0", "ml/bert-finetune-1", "ml/bert-finetune-2"},
      "3 pod(s) need 3 new node(s); chosen over gpu-heavy-spot, gpu-heavy by priority 100"};
  s.last_scale_down =
      autoscaler::ScaleDownRecord{At("2026-03-01T11:51:00Z"), "aks-cpu-12345678-vmss000004", "cpu",
                                  "deleted", "empty, utilization 0.00 < 0.5 (cpu)"};
  s.unneeded = {{"aks-cpu-12345678-vmss000002", At("2026-03-01T11:44:00Z")},
                {"aks-cpu-12345678-vmss000005", At("2026-03-01T11:57:30Z")},
                {"aks-gpulight-11223344-vmss000004", At("2026-03-01T11:45:00Z"),
                 autoscaler::CheckpointWait{"ml/bert-finetune-7", At("2026-03-01T12:03:00Z")}}};
  s.removals = {{"aks-cpu-12345678-vmss000003", "cpu", "draining", At("2026-03-01T11:59:20Z"), 2}};
  s.kept = std::make_shared<const std::vector<planner::Keep>>(std::vector<planner::Keep>{
      {"aks-gpuheavy-87654321-vmss000001",
       "pod ml/llama-pretrain-0 is not evictable: a running training pod (owned by Job "
       "ml/llama-pretrain); annotate cluster-autoscaler.kubernetes.io/safe-to-evict=true "
       "to allow"},
      {"aks-cpu-12345678-vmss000000", "pool cpu at min 1"}});
  using planner::ReasonKind;
  s.unschedulable = std::make_shared<const std::vector<planner::Unschedulable>>(
      std::vector<planner::Unschedulable>{
          {"ml/llama-pretrain-worker-3",
           {{"cpu", {ReasonKind::kInsufficientResources, "Insufficient nvidia.com/gpu"}},
            {"gpu-heavy", {ReasonKind::kPoolMax, "pool gpu-heavy at max 8"}},
            {"gpu-heavy-spot",
             {ReasonKind::kBackoff, "pool gpu-heavy-spot in backoff until 2026-03-01T12:07:30Z"}},
            {"gpu-light-spot",
             {ReasonKind::kInsufficientResources, "Insufficient nvidia.com/gpu"}}}},
          {"research/<script>alert('x')</script>",
           {{"cpu",
             {ReasonKind::kNodeAffinity, "node(s) didn't match Pod's node affinity/selector"}}}},
      });
  s.waiting_for_capacity = {"ml/bert-finetune-3", "ml/bert-finetune-4"};
  return s;
}

inline StatusPageExtras SampleExtras(const model::AutoscalerConfig* config) {
  using tidepool::testing::At;
  StatusPageExtras x;
  x.now = At("2026-03-01T12:00:05Z");
  x.version = "0.1.0";
  x.provider = "aks";
  x.identity = "tidepool-6d5f7c9b8-x2k4q";
  x.leader = "tidepool-6d5f7c9b8-x2k4q";
  x.is_leader = true;
  x.config = config;
  x.last_error = "patch node aks-cpu-12345678-vmss000003: 409 Conflict (retrying)";
  x.last_error_time = At("2026-03-01T11:59:40Z");
  return x;
}

}  // namespace tidepool::ops::testing
