// Scale-down planner at the Cluster Autoscaler's BenchmarkRunOnceScaleDown size: 2,000 nodes with
// 40 pods each at 40% utilization, threshold 0.5, one pool; 1,200 nodes can go.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <vector>

#include "model/pool.h"
#include "planner/scale_down.h"

namespace tidepool::planner {
namespace {

constexpr int kNodes = 2000;
constexpr int kPodsPerNode = 40;
constexpr int kReplicaSets = 40;
constexpr size_t kExpectedRemovable = 1200;

// Every node: 10 cpu, 10000Mi, 110 pods; every pod 1% of it (100m, 100Mi), so 40 pods are 40%
// and the 80,000 pods fill exactly 800 nodes.
struct Fixture {
  model::AutoscalerConfig config;
  std::vector<model::Node> nodes;
  std::vector<model::Pod> pods;
  PlannerInput input;

  Fixture() {
    config.scale_down.utilization_threshold = 0.5;
    model::Pool& pool = config.pools.emplace_back();
    pool.name = "pool";
    pool.min = 0;
    pool.max = 5000;
    Time created = Time(std::chrono::hours(24 * 365 * 50));
    nodes.reserve(kNodes);
    for (int i = 0; i < kNodes; ++i) {
      model::Node& n = nodes.emplace_back();
      n.meta.name = fmt::format("node-{:04d}", i);
      n.meta.labels[std::string(model::kLabelPool)] = "pool";
      n.meta.labels[std::string(model::kLabelHostname)] = n.meta.name;
      n.meta.creation_timestamp = created;
      n.allocatable.Set(model::kCpu, 10'000);
      n.allocatable.Set(model::kMemory, int64_t{10'000} << 20);
      n.allocatable.Set(model::kPods, 110);
      n.capacity = n.allocatable;
      n.ready = true;
    }
    pods.reserve(kNodes * kPodsPerNode);
    for (int i = 0; i < kNodes; ++i) {
      for (int j = 0; j < kPodsPerNode; ++j) {
        model::Pod& p = pods.emplace_back();
        p.meta.name = fmt::format("web-{:04d}-{:02d}", i, j);
        p.meta.namespace_ = "default";
        p.meta.uid = fmt::format("pod-uid-{}-{}", i, j);
        p.meta.owner_references.push_back({"apps/v1", "ReplicaSet",
                                           fmt::format("web-{}", j % kReplicaSets),
                                           fmt::format("rs-uid-{}", j % kReplicaSets), true});
        p.node_name = nodes[i].meta.name;
        p.phase = model::PodPhase::kRunning;
        model::Container& c = p.containers.emplace_back();
        c.name = "main";
        c.requests.Set(model::kCpu, 100);
        c.requests.Set(model::kMemory, int64_t{100} << 20);
        p.Finalize();
      }
    }
    input.config = &config;
    input.now = created + std::chrono::hours(1);
    for (const model::Node& n : nodes) input.nodes.push_back(&n);
    for (const model::Pod& p : pods) input.pods.push_back(&p);
  }
};

const Fixture& GetFixture() {
  static const Fixture* fixture = new Fixture();
  return *fixture;
}

void RunScaleDown(benchmark::State& state, bool rate_limit, size_t expected) {
  const Fixture& f = GetFixture();
  ScaleDownPlanner planner;
  ScaleDownOptions options;
  options.rate_limit = rate_limit;
  size_t removable = planner.Plan(f.input, options).scale_downs.size();
  if (removable != expected) {
    state.SkipWithError(
        fmt::format("expected {} removable nodes, got {}", expected, removable).c_str());
    return;
  }
  for (auto _ : state) {
    ScaleDownPlan plan = planner.Plan(f.input, options);
    benchmark::DoNotOptimize(plan);
  }
  state.counters["removable"] = static_cast<double>(removable);
}

void BM_ScaleDown_2000x40(benchmark::State& state) {
  RunScaleDown(state, /*rate_limit=*/false, kExpectedRemovable);
}
BENCHMARK(BM_ScaleDown_2000x40)->Unit(benchmark::kMillisecond);

// The per-loop cost the autoscaler pays with the default rate limits (one non-empty node per
// pool): candidates after the first are kept without a simulation.
void BM_ScaleDown_2000x40_RateLimited(benchmark::State& state) {
  RunScaleDown(state, /*rate_limit=*/true, 1);
}
BENCHMARK(BM_ScaleDown_2000x40_RateLimited)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tidepool::planner

BENCHMARK_MAIN();
