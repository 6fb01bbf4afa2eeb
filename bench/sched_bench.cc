// Benchmarks of the scheduling simulation (sched/): resource-only and mixed fit checks, and
// fork/add/revert of the snapshot at several cluster sizes. Results: docs/performance.md.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/check.h"
#include "model/node.h"
#include "model/pod.h"
#include "model/quantity.h"
#include "sched/fit.h"
#include "sched/snapshot.h"

namespace tidepool::sched {
namespace {

using model::Labels;
using model::Node;
using model::Pod;

const std::string kHost(model::kLabelHostname);
const std::string kZone(model::kLabelZone);

model::Resources Res(int64_t cpu_milli, int64_t memory_gi, int64_t pods = 0, int64_t gpus = 0) {
  static const model::ResourceId kGpu = model::InternResource(model::kNvidiaGpu);
  model::Resources r;
  r.Set(model::kCpu, cpu_milli);
  r.Set(model::kMemory, memory_gi << 30);
  if (pods) r.Set(model::kPods, pods);
  if (gpus) r.Set(kGpu, gpus);
  return r;
}

Node MakeNode(std::string name, model::Resources allocatable) {
  Node n;
  n.meta.name = std::move(name);
  n.meta.labels[kHost] = n.meta.name;
  n.allocatable = std::move(allocatable);
  n.capacity = n.allocatable;
  n.ready = true;
  return n;
}

Pod MakePod(std::string name, model::Resources requests, Labels labels = {}) {
  Pod p;
  p.meta.name = std::move(name);
  p.meta.namespace_ = "default";
  p.meta.labels = std::move(labels);
  p.phase = model::PodPhase::kRunning;
  p.containers.push_back({.name = "main", .requests = std::move(requests)});
  p.Finalize();
  return p;
}

model::PodAffinityTerm Term(const std::string& key, Labels match) {
  model::PodAffinityTerm t;
  t.topology_key = key;
  t.label_selector.match_labels = std::move(match);
  t.has_label_selector = true;
  return t;
}

// A cluster whose nodes and pods live as long as the process (fixtures are built once).
struct Cluster {
  std::deque<Node> nodes;
  std::deque<Pod> pods;
  ClusterSnapshot snapshot;
  std::vector<Pod> incoming;

  NodeIndex Add(Node n) {
    nodes.push_back(std::move(n));
    auto r = snapshot.AddNode(&nodes.back());
    TIDEPOOL_CHECK(r.has_value());
    return *r;
  }
  void Place(Pod p, NodeIndex node) {
    pods.push_back(std::move(p));
    TIDEPOOL_CHECK(snapshot.AddPod(&pods.back(), node).has_value());
  }
};

// ---------------------------------------------------------------------------------------------
// BM_FitsResourceOnly: pods with only requests against plain nodes (no taints, no labels asked
// for). 1,000 nodes, 4 pods each; 16 incoming pod shapes of which roughly a third do not fit.

const Cluster& ResourceCluster() {
  static Cluster* c = [] {
    auto* c = new Cluster;
    std::mt19937 rng(1);
    for (int i = 0; i < 1000; ++i) {
      NodeIndex n = c->Add(MakeNode("n" + std::to_string(i), Res(16000, 64, 110)));
      for (int j = 0; j < 4; ++j) {
        c->Place(MakePod("p" + std::to_string(i * 4 + j), Res(500 + rng() % 3000, 1 + rng() % 12)),
                 n);
      }
    }
    for (int k = 0; k < 16; ++k) {
      c->incoming.push_back(MakePod("in" + std::to_string(k), Res(250 + 600 * k, 1 + k)));
    }
    return c;
  }();
  return *c;
}

void BM_FitsResourceOnly(benchmark::State& state) {
  const Cluster& c = ResourceCluster();
  std::vector<FitChecker> checkers;
  for (const Pod& p : c.incoming) checkers.emplace_back(p, c.snapshot);
  const auto nodes = static_cast<NodeIndex>(c.snapshot.NodeSlots());
  size_t k = 0;
  int64_t fits = 0;
  for (auto _ : state) {
    const FitChecker& checker = checkers[k++ % checkers.size()];
    for (NodeIndex i = 0; i < nodes; ++i) fits += checker.Check(i).fits();
  }
  benchmark::DoNotOptimize(fits);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * nodes);
  state.counters["fit_ratio"] =
      static_cast<double>(fits) / static_cast<double>(state.iterations() * nodes);
}
BENCHMARK(BM_FitsResourceOnly);

// The same checks through the one-shot Fits() (a FitChecker per check).
void BM_FitsResourceOnlyOneShot(benchmark::State& state) {
  const Cluster& c = ResourceCluster();
  const auto nodes = static_cast<NodeIndex>(c.snapshot.NodeSlots());
  size_t k = 0;
  int64_t fits = 0;
  for (auto _ : state) {
    const Pod& pod = c.incoming[k++ % c.incoming.size()];
    for (NodeIndex i = 0; i < nodes; ++i) fits += Fits(pod, i, c.snapshot).fits();
  }
  benchmark::DoNotOptimize(fits);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * nodes);
}
BENCHMARK(BM_FitsResourceOnlyOneShot);

// ---------------------------------------------------------------------------------------------
// BM_FitsMixed: 5,000 nodes in 3 zones and 3 pools (cpu; light GPU, tainted; heavy GPU, tainted,
// half of it spot), 10,000 placed pods (5% with hostname anti-affinity, many labelled per app),
// and 32 incoming pod shapes: plain, GPU with selector and toleration, spot, zone affinity,
// hostname anti-affinity, pod affinity, zone/hostname topology spread. One iteration builds the
// FitChecker for one incoming pod (the PreFilter work) and checks it against all nodes.

const Cluster& MixedCluster() {
  static Cluster* c = [] {
    auto* c = new Cluster;
    std::mt19937 rng(2);
    const char* zones[] = {"zone-1", "zone-2", "zone-3"};
    for (int i = 0; i < 5000; ++i) {
      Node n;
      int kind = i % 20;  // 0-11 cpu, 12-16 gpu-light, 17-19 gpu-heavy
      if (kind < 12) {
        n = MakeNode("cpu-" + std::to_string(i), Res(16000, 64, 110));
        n.meta.labels["pool"] = "cpu";
      } else if (kind < 17) {
        n = MakeNode("gpu-light-" + std::to_string(i), Res(6000, 112, 110, 1));
        n.meta.labels["pool"] = "gpu-light";
        n.taints.push_back({"nvidia.com/gpu", "present", model::TaintEffect::kNoSchedule});
      } else {
        n = MakeNode("gpu-heavy-" + std::to_string(i), Res(48000, 448, 110, 8));
        n.meta.labels["pool"] = "gpu-heavy";
        n.taints.push_back({"nvidia.com/gpu", "present", model::TaintEffect::kNoSchedule});
        if (i % 2 == 0) {
          n.taints.push_back(
              {"kubernetes.azure.com/scalesetpriority", "spot", model::TaintEffect::kNoSchedule});
        }
      }
      n.meta.labels[kZone] = zones[i % 3];
      n.meta.labels["node.kubernetes.io/instance-type"] = "Standard_D16s_v5";
      c->Add(std::move(n));
    }
    for (int j = 0; j < 10000; ++j) {
      std::string app = "app-" + std::to_string(rng() % 40);
      Pod p = MakePod("placed-" + std::to_string(j), Res(100 + rng() % 2000, 1 + rng() % 4),
                      {{"app", app}, {"team", "t" + std::to_string(rng() % 5)}});
      if (j % 20 == 0) {
        p.mutable_affinity().pod_anti_affinity_required.push_back(Term(kHost, {{"app", app}}));
        p.Finalize();
      }
      c->Place(std::move(p), static_cast<NodeIndex>(rng() % 5000));
    }
    for (int k = 0; k < 32; ++k) {
      std::string app = "app-" + std::to_string(k % 40);
      Pod p = MakePod("in-" + std::to_string(k), Res(500 + 250 * k, 2 + k % 8),
                      {{"app", app}, {"team", "t1"}});
      switch (k % 8) {
        case 0:  // plain
          break;
        case 1:  // light GPU: selector + toleration + gpu
          p.node_selector["pool"] = "gpu-light";
          p.tolerations.push_back({"nvidia.com/gpu", model::TolerationOp::kExists, "", {}, {}});
          p.containers[0].requests.Set(model::InternResource(model::kNvidiaGpu), 1);
          break;
        case 2: {  // heavy GPU on spot, via required node affinity
          model::NodeSelectorTerm t;
          t.match_expressions.push_back({"pool", model::SelectorOp::kIn, {"gpu-heavy"}});
          p.mutable_affinity().node_required.emplace().terms.push_back(std::move(t));
          p.tolerations.push_back({"", model::TolerationOp::kExists, "", {}, {}});
          p.containers[0].requests.Set(model::InternResource(model::kNvidiaGpu), 4);
          break;
        }
        case 3: {  // zone affinity
          model::NodeSelectorTerm t;
          t.match_expressions.push_back({kZone, model::SelectorOp::kIn, {"zone-1", "zone-2"}});
          p.mutable_affinity().node_required.emplace().terms.push_back(std::move(t));
          break;
        }
        case 4:  // hostname anti-affinity against its own app
          p.mutable_affinity().pod_anti_affinity_required.push_back(Term(kHost, {{"app", app}}));
          break;
        case 5:  // zone affinity to another app
          p.mutable_affinity().pod_affinity_required.push_back(
              Term(kZone, {{"app", "app-" + std::to_string((k + 1) % 40)}}));
          break;
        case 6: {  // zone spread
          model::TopologySpreadConstraint s;
          s.topology_key = kZone;
          s.max_skew = 1;
          s.label_selector.match_labels = {{"app", app}};
          s.has_label_selector = true;
          p.mutable_topology_spread_constraints().push_back(std::move(s));
          break;
        }
        case 7: {  // hostname spread
          model::TopologySpreadConstraint s;
          s.topology_key = kHost;
          s.max_skew = 2;
          s.label_selector.match_labels = {{"app", app}};
          s.has_label_selector = true;
          p.mutable_topology_spread_constraints().push_back(std::move(s));
          break;
        }
      }
      p.Finalize();
      c->incoming.push_back(std::move(p));
    }
    return c;
  }();
  return *c;
}

void BM_FitsMixed(benchmark::State& state) {
  const Cluster& c = MixedCluster();
  const auto nodes = static_cast<NodeIndex>(c.snapshot.NodeSlots());
  size_t k = 0;
  int64_t fits = 0;
  for (auto _ : state) {
    FitChecker checker(c.incoming[k++ % c.incoming.size()], c.snapshot);
    for (NodeIndex i = 0; i < nodes; ++i) fits += checker.Check(i).fits();
  }
  benchmark::DoNotOptimize(fits);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * nodes);
  state.counters["fit_ratio"] =
      static_cast<double>(fits) / static_cast<double>(state.iterations() * nodes);
}
BENCHMARK(BM_FitsMixed);

// Only the per-pod precomputation (PreFilter) of BM_FitsMixed, per incoming pod shape.
void BM_FitsMixedPrecompute(benchmark::State& state) {
  const Cluster& c = MixedCluster();
  const Pod& pod = c.incoming[state.range(0)];
  for (auto _ : state) {
    FitChecker checker(pod, c.snapshot);
    benchmark::DoNotOptimize(checker);
  }
}
BENCHMARK(BM_FitsMixedPrecompute)->DenseRange(0, 7)->Unit(benchmark::kMicrosecond);

// Only the checks of BM_FitsMixed (checkers built outside the timed loop), per pod shape.
void BM_FitsMixedChecks(benchmark::State& state) {
  const Cluster& c = MixedCluster();
  FitChecker checker(c.incoming[state.range(0)], c.snapshot);
  const auto nodes = static_cast<NodeIndex>(c.snapshot.NodeSlots());
  int64_t fits = 0;
  for (auto _ : state) {
    for (NodeIndex i = 0; i < nodes; ++i) fits += checker.Check(i).fits();
  }
  benchmark::DoNotOptimize(fits);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * nodes);
}
BENCHMARK(BM_FitsMixedChecks)->DenseRange(0, 7);

// ---------------------------------------------------------------------------------------------
// BM_ForkAddRevert/N: N nodes with 2 pods each; per iteration fork, place 100 pods on random
// nodes, revert.

const Cluster& ForkCluster(int nodes) {
  static std::map<int, std::unique_ptr<Cluster>> clusters;
  auto& slot = clusters[nodes];
  if (!slot) {
    slot = std::make_unique<Cluster>();
    std::mt19937 rng(3);
    for (int i = 0; i < nodes; ++i) {
      NodeIndex n = slot->Add(MakeNode("n" + std::to_string(i), Res(16000, 64, 110)));
      for (int j = 0; j < 2; ++j) slot->Place(MakePod("p", Res(100 + rng() % 1000, 1)), n);
    }
    for (int k = 0; k < 100; ++k) {
      slot->incoming.push_back(MakePod("add-" + std::to_string(k),
                                       Res(100 + 10 * k, 1 + k % 4, 0, k % 10 == 0 ? 1 : 0)));
    }
  }
  return *slot;
}

void ForkAddRevert(benchmark::State& state, NodeIndex spread) {
  auto& c = const_cast<Cluster&>(ForkCluster(static_cast<int>(state.range(0))));
  std::mt19937 rng(4);
  std::vector<NodeIndex> targets(4096);
  for (auto& t : targets) t = static_cast<NodeIndex>(rng() % spread);
  size_t next = 0;
  for (auto _ : state) {
    c.snapshot.Fork();
    for (const Pod& p : c.incoming) {
      auto r = c.snapshot.AddPod(&p, targets[next++ & 4095]);
      benchmark::DoNotOptimize(r);
    }
    c.snapshot.Revert();
  }
  TIDEPOOL_CHECK(c.snapshot.Depth() == 0);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * 100);
}

// Targets anywhere in the cluster: the work per change is constant, but a larger cluster means
// more cache misses on the touched NodeInfos.
void BM_ForkAddRevert(benchmark::State& state) {
  ForkAddRevert(state, static_cast<NodeIndex>(state.range(0)));
}
BENCHMARK(BM_ForkAddRevert)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMicrosecond);

// Targets among the first 100 nodes only: the same work without the cache effect, to show the
// cost does not depend on the cluster size.
void BM_ForkAddRevertHot(benchmark::State& state) { ForkAddRevert(state, 100); }
BENCHMARK(BM_ForkAddRevertHot)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tidepool::sched

BENCHMARK_MAIN();
