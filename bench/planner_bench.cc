// Scale-up planner benchmarks, each mirroring a published scenario of the Cluster Autoscaler or
// Karpenter so the figures compare side by side (docs/performance.md).
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <deque>
#include <string>
#include <vector>

#include "model/node.h"
#include "model/pod.h"
#include "model/pool.h"
#include "planner/scale_down.h"
#include "planner/scale_up.h"

namespace tidepool {
namespace {

using model::kCpu;
using model::kMemory;
using model::kPods;

model::Pool MakePool(std::string name, int64_t cpu_milli, int64_t memory, int64_t pods, int max) {
  model::Pool p;
  p.name = std::move(name);
  p.max = max;
  p.price_per_hour = 1.0;
  model::Resources cap;
  cap.Set(kCpu, cpu_milli);
  cap.Set(kMemory, memory);
  cap.Set(kPods, pods);
  p.template_node.meta.name = "template-" + p.name;
  p.template_node.meta.labels[std::string(model::kLabelPool)] = p.name;
  p.template_node.capacity = cap;
  p.template_node.allocatable = cap;
  p.template_node.ready = true;
  return p;
}

model::Pod MakePod(std::string name, std::string owner_uid, int64_t cpu_milli, int64_t memory) {
  model::Pod p;
  p.meta.name = std::move(name);
  p.meta.namespace_ = "default";
  p.meta.owner_references.push_back({"apps/v1", "ReplicaSet", owner_uid, owner_uid, true});
  model::Container c;
  c.name = "main";
  c.requests.Set(kCpu, cpu_milli);
  c.requests.Set(kMemory, memory);
  p.containers.push_back(c);
  p.Finalize();
  return p;
}

// Everything a planning pass reads, owned in one place.
struct Fixture {
  model::AutoscalerConfig config;
  std::deque<model::Node> nodes;
  std::deque<model::Pod> pods;
  planner::PlannerInput input;

  void Wire() {
    input.config = &config;
    for (const auto& n : nodes) input.nodes.push_back(&n);
    for (const auto& p : pods) input.pods.push_back(&p);
  }
};

// 1. The Cluster Autoscaler's BenchmarkBinpackingEstimate: 50,000 small pods (50m, 100) and
// 1,000 bigger ones (95m, 190) on a template of 1000m / 5000 / 100 pods, limit 3,000 nodes;
// the answer is 2,595 nodes.
void BM_BinpackingEstimate(benchmark::State& state) {
  static Fixture* f = [] {
    auto* f = new Fixture;
    f->config.pools.push_back(MakePool("pool", 1000, 5000, 100, 3000));
    f->config.scale_up.max_nodes_per_scale_up = 3000;
    for (int i = 0; i < 50000; ++i)
      f->pods.push_back(MakePod(fmt::format("small-{}", i), "small", 50, 100));
    for (int i = 0; i < 1000; ++i)
      f->pods.push_back(MakePod(fmt::format("big-{}", i), "big", 95, 190));
    f->Wire();
    return f;
  }();
  int added = 0;
  for (auto _ : state) {
    planner::ScaleUpPlan plan = planner::ScaleUpPlanner().Plan(f->input);
    added = plan.scale_ups.empty() ? 0 : plan.scale_ups[0].add;
    benchmark::DoNotOptimize(plan);
  }
  state.counters["nodes"] = added;
  if (added != 2595) state.SkipWithError(fmt::format("expected 2595 nodes, got {}", added).c_str());
}
BENCHMARK(BM_BinpackingEstimate)->Unit(benchmark::kMillisecond);

// 2. BenchmarkRunOnceScaleUp-like: 1,000 nodes x 50 running pods, a burst of 2,000 pending pods
// that need new nodes, one pool.
void BM_ScaleUp_1000x50(benchmark::State& state) {
  static Fixture* f = [] {
    auto* f = new Fixture;
    f->config.pools.push_back(MakePool("pool", 16000, int64_t{64} << 30, 110, 5000));
    for (int n = 0; n < 1000; ++n) {
      model::Node node = f->config.pools[0].template_node;
      node.meta.name = fmt::format("node-{}", n);
      node.meta.labels["kubernetes.io/hostname"] = node.meta.name;
      f->nodes.push_back(node);
      for (int k = 0; k < 50; ++k) {
        model::Pod p = MakePod(fmt::format("run-{}-{}", n, k), fmt::format("rs-{}", k % 10), 300,
                               int64_t{1} << 30);
        p.node_name = node.meta.name;
        p.phase = model::PodPhase::kRunning;
        f->pods.push_back(p);
      }
    }
    for (int i = 0; i < 2000; ++i)
      f->pods.push_back(MakePod(fmt::format("burst-{}", i), "burst", 1000, int64_t{4} << 30));
    f->Wire();
    return f;
  }();
  int added = 0;
  for (auto _ : state) {
    planner::ScaleUpPlan plan = planner::ScaleUpPlanner().Plan(f->input);
    added = plan.scale_ups.empty() ? 0 : plan.scale_ups[0].add;
    benchmark::DoNotOptimize(plan);
  }
  state.counters["nodes"] = added;
}
BENCHMARK(BM_ScaleUp_1000x50)->Unit(benchmark::kMillisecond);

// 4. Karpenter's scheduling benchmark shape: 5,000 pods in fifths (plain, zonal spread,
// hostname spread, zonal self-affinity, hostname anti-affinity), cpu from
// {100,250,500,1000,1500}m and memory 100Mi-4Gi, against 400 templates (template i: i+1 cpu,
// 2(i+1) GiB, 10(i+1) pods) spread over 3 zones.
void BM_Diverse_5000x400(benchmark::State& state) {
  static Fixture* f = [] {
    auto* f = new Fixture;
    for (int i = 0; i < 400; ++i) {
      model::Pool p = MakePool(fmt::format("it-{:03}", i), int64_t(i + 1) * 1000,
                               int64_t(2 * (i + 1)) << 30, 10 * (i + 1), 1000);
      p.template_node.meta.labels[std::string(model::kLabelZone)] = fmt::format("zone-{}", i % 3);
      p.price_per_hour = 0.05 * (i + 1);
      f->config.pools.push_back(p);
    }
    f->config.scale_up.max_nodes_per_scale_up = 5000;
    const int64_t cpus[] = {100, 250, 500, 1000, 1500};
    for (int i = 0; i < 5000; ++i) {
      int kind = i % 5;
      std::string app = fmt::format("app-{}-{}", kind, i % 50);
      model::Pod p = MakePod(fmt::format("pod-{}", i), app, cpus[(i / 5) % 5],
                             (int64_t{100} << 20) * (1 + (i * 7) % 40));
      p.meta.labels["app"] = app;
      model::LabelSelector sel;
      sel.match_labels["app"] = app;
      auto spread = [&](std::string_view key) {
        model::TopologySpreadConstraint c;
        c.topology_key = std::string(key);
        c.max_skew = 1;
        c.label_selector = sel;
        c.has_label_selector = true;
        p.topology_spread_constraints.push_back(c);
      };
      auto term = [&](std::string_view key) {
        model::PodAffinityTerm t;
        t.topology_key = std::string(key);
        t.label_selector = sel;
        t.has_label_selector = true;
        return t;
      };
      if (kind == 1) spread(model::kLabelZone);
      if (kind == 2) spread(model::kLabelHostname);
      if (kind == 3) p.affinity.pod_affinity_required.push_back(term(model::kLabelZone));
      if (kind == 4) p.affinity.pod_anti_affinity_required.push_back(term(model::kLabelHostname));
      p.Finalize();
      f->pods.push_back(p);
    }
    f->Wire();
    return f;
  }();
  size_t scheduled = 0;
  for (auto _ : state) {
    planner::ScaleUpPlan plan = planner::ScaleUpPlanner().Plan(f->input);
    scheduled = 0;
    for (const auto& u : plan.scale_ups) scheduled += u.pods.size();
    benchmark::DoNotOptimize(plan);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * 5000);
  state.counters["scheduled"] = static_cast<double>(scheduled);
}
BENCHMARK(BM_Diverse_5000x400)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tidepool

BENCHMARK_MAIN();
