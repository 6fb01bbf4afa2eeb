// Scale-up planner benchmarks, each mirroring a published scenario of the Cluster Autoscaler or
// Karpenter so the figures compare side by side (docs/performance.md).
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <deque>
#include <map>
#include <random>
#include <string>
#include <unordered_map>
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

// A registered node "node-<n>" of the fixture's first pool.
const model::Node& AddNode(Fixture& f, int n) {
  model::Node node = f.config.pools[0].template_node;
  node.meta.name = fmt::format("node-{}", n);
  node.meta.labels["kubernetes.io/hostname"] = node.meta.name;
  return f.nodes.emplace_back(std::move(node));
}

// `p`, running on `node`.
void AddRunning(Fixture& f, model::Pod p, const model::Node& node) {
  p.node_name = node.meta.name;
  p.phase = model::PodPhase::kRunning;
  f.pods.push_back(std::move(p));
}

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
      const model::Node& node = AddNode(*f, n);
      for (int k = 0; k < 50; ++k) {
        AddRunning(*f,
                   MakePod(fmt::format("run-{}-{}", n, k), fmt::format("rs-{}", k % 10), 300,
                           int64_t{1} << 30),
                   node);
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

// 4. Karpenter's scheduling benchmark (BenchmarkScheduling5000 / 20000, "makeDiversePods"):
// pods in fifths (plain; zone spread and hostname spread, maxSkew 1, selecting my-label=<a..g>;
// required zone affinity to my-affininity=<a..g>; required hostname anti-affinity among all of
// the fifth, labelled app=nginx; the remainder plain), no owners, cpu from
// {100,250,500,1000,1500}m and memory from {100,256,512,1024,2048,4096}Mi, label values drawn
// from a..g. 400 instance types (type i: i+1 cpu, 2(i+1) GiB, 10(i+1) pods, 0.1 per cpu-hour
// plus 0.1 per GiB-hour), each in 3 zones: 1,200 pools. The draws use a seeded generator of our
// own, so the pods are Karpenter's distribution, not its exact sequence.
struct DiverseMix {
  Fixture fixture;
  double lower_bound = 0;  // every pod's requests at 0.1 per cpu-hour and per GiB-hour
};

model::Pod DiversePod(int index, int kind, std::mt19937_64& rng) {
  static constexpr int64_t kCpus[] = {100, 250, 500, 1000, 1500};
  static constexpr int64_t kMemMi[] = {100, 256, 512, 1024, 2048, 4096};
  auto value = [&] { return std::string(1, static_cast<char>('a' + rng() % 7)); };
  static constexpr const char* kKinds[] = {"generic", "zone-spread", "host-spread", "zone-affinity",
                                           "host-anti-affinity"};
  model::Pod p;
  p.meta.name = fmt::format("{}-{:05}", kKinds[kind], index);
  p.meta.namespace_ = "default";
  model::Container c;
  c.name = "main";
  c.requests.Set(kCpu, kCpus[rng() % 5]);
  c.requests.Set(kMemory, kMemMi[rng() % 6] << 20);
  p.containers.push_back(c);
  auto selector = [](std::string key, std::string v) {
    model::LabelSelector sel;
    sel.match_labels[std::move(key)] = std::move(v);
    return sel;
  };
  auto term = [](std::string_view topology, model::LabelSelector sel) {
    model::PodAffinityTerm t;
    t.topology_key = std::string(topology);
    t.label_selector = std::move(sel);
    t.has_label_selector = true;
    return t;
  };
  if (kind == 0 || kind == 1 || kind == 2) p.meta.labels["my-label"] = value();
  if (kind == 1 || kind == 2) {
    model::TopologySpreadConstraint c;
    c.topology_key = std::string(kind == 1 ? model::kLabelZone : model::kLabelHostname);
    c.max_skew = 1;
    c.label_selector = selector("my-label", value());
    c.has_label_selector = true;
    p.mutable_topology_spread_constraints().push_back(c);
  }
  if (kind == 3) {
    p.meta.labels["my-affininity"] = value();
    p.mutable_affinity().pod_affinity_required.push_back(
        term(model::kLabelZone, selector("my-affininity", value())));
  }
  if (kind == 4) {
    p.meta.labels["app"] = "nginx";
    p.mutable_affinity().pod_anti_affinity_required.push_back(
        term(model::kLabelHostname, selector("app", "nginx")));
  }
  p.Finalize();
  return p;
}

DiverseMix* MakeDiverseMix(int count) {
  auto* mix = new DiverseMix;
  Fixture& f = mix->fixture;
  for (int i = 0; i < 400; ++i) {
    for (int zone = 1; zone <= 3; ++zone) {
      model::Pool p = MakePool(fmt::format("it-{:03}-z{}", i, zone), int64_t(i + 1) * 1000,
                               int64_t(2 * (i + 1)) << 30, 10 * (i + 1), 100000);
      auto& labels = p.template_node.meta.labels;
      labels[std::string(model::kLabelZone)] = fmt::format("test-zone-{}", zone);
      labels[std::string(model::kLabelInstanceType)] = fmt::format("fake-it-{}", i);
      p.instance_type = fmt::format("fake-it-{}", i);
      p.price_per_hour = 0.1 * (i + 1) + 0.1 * 2 * (i + 1);
      f.config.pools.push_back(std::move(p));
    }
  }
  f.config.scale_up.max_nodes_per_scale_up = 100000;
  f.config.scale_up.expanders = {"price"};
  std::mt19937_64 rng(42);
  int fifth = count / 5;
  for (int i = 0; i < count; ++i) {
    int kind = i < 5 * fifth ? i / fifth : 0;
    f.pods.push_back(DiversePod(i, kind, rng));
    const model::Resources& r = f.pods.back().requests;
    mix->lower_bound += 0.1 * static_cast<double>(r.cpu_milli()) / 1000 +
                        0.1 * static_cast<double>(r.memory()) / double(int64_t{1} << 30);
  }
  f.Wire();
  return mix;
}

void BM_KarpenterDiverse(benchmark::State& state) {
  static std::map<int64_t, DiverseMix*> mixes;
  DiverseMix*& mix = mixes[state.range(0)];
  if (mix == nullptr) mix = MakeDiverseMix(static_cast<int>(state.range(0)));
  std::unordered_map<std::string, double> price;
  for (const model::Pool& p : mix->fixture.config.pools) price[p.name] = p.price_per_hour;
  size_t scheduled = 0;
  int nodes = 0;
  double cost = 0;
  planner::ScaleUpOptions options;
  options.flexible_nodes = state.range(1) != 0;
  for (auto _ : state) {
    planner::ScaleUpPlan plan = planner::ScaleUpPlanner().Plan(mix->fixture.input, options);
    scheduled = 0;
    nodes = 0;
    cost = 0;
    for (const auto& u : plan.scale_ups) {
      scheduled += u.pods.size();
      nodes += u.add;
      cost += u.add * price[u.pool];
    }
    benchmark::DoNotOptimize(plan);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
  state.counters["scheduled"] = static_cast<double>(scheduled);
  state.counters["nodes"] = nodes;
  state.counters["price"] = cost;
  state.counters["xLowerBound"] = cost / mix->lower_bound;
}
// Args: pods, flexible new nodes (1) or every pool packed alone (0, as before families).
BENCHMARK(BM_KarpenterDiverse)
    ->ArgNames({"pods", "flexible"})
    ->Args({1000, 1})
    ->Args({5000, 1})
    ->Args({20000, 1})
    ->Args({50000, 1})
    ->Args({1000, 0})
    ->Args({5000, 0})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

// 5. A queue of training jobs, as Kueue fronts them: `gangs` gangs of 4 members (12 cpu, for the
// `big` pool only) at priorities of their own, and 10 two-cpu single pods at each of those
// priorities (fit `big` and `small`), on 5,000 registered `big` nodes with 1 cpu free. Each gang
// takes its turn between the singles of higher and of its own priority (a walk of the registered
// nodes' room per gang until the bound was kept for the pass).
void BM_QueuedGangs(benchmark::State& state) {
  static std::map<int64_t, Fixture*> fixtures;
  Fixture*& f = fixtures[state.range(0)];
  if (f == nullptr) {
    f = new Fixture;
    f->config.pools.push_back(MakePool("big", 16000, int64_t{64} << 30, 110, 100000));
    f->config.pools.push_back(MakePool("small", 4000, int64_t{16} << 30, 110, 100000));
    f->config.scale_up.max_nodes_per_scale_up = 100000;
    for (int n = 0; n < 5000; ++n) {
      AddRunning(*f, MakePod(fmt::format("run-{}", n), "running", 15000, int64_t{8} << 30),
                 AddNode(*f, n));
    }
    for (int g = 0; g < state.range(0); ++g) {
      for (int m = 0; m < 4; ++m) {
        model::Pod p = MakePod(fmt::format("gang-{}-{}", g, m), fmt::format("job-{}", g), 12000,
                               int64_t{32} << 30);
        p.meta.labels["scheduling.x-k8s.io/pod-group"] = fmt::format("job-{}", g);
        p.priority = g;
        p.Finalize();
        f->pods.push_back(p);
      }
      for (int k = 0; k < 10; ++k) {
        model::Pod p = MakePod(fmt::format("single-{}-{}", g, k), fmt::format("rs-{}", g), 2000,
                               int64_t{4} << 30);
        p.priority = g;
        p.Finalize();
        f->pods.push_back(p);
      }
    }
    f->Wire();
  }
  int nodes = 0;
  for (auto _ : state) {
    planner::ScaleUpPlan plan = planner::ScaleUpPlanner().Plan(f->input);
    nodes = 0;
    for (const auto& u : plan.scale_ups) nodes += u.add;
    benchmark::DoNotOptimize(plan);
  }
  state.counters["nodes"] = nodes;
}
BENCHMARK(BM_QueuedGangs)->Arg(100)->Arg(500)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tidepool

BENCHMARK_MAIN();
