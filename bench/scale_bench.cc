// The scale target of the planner: 50,000 nodes, 1,000,000 pods, 200 pools, 5,000 pending pods;
// one full plan, scale-up and scale-down. BM_Scale/500 is the same shape at 1 % for the smoke
// run in make test; the real figure is BM_Scale/50000 (docs/performance.md).
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <charconv>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "model/node.h"
#include "model/pod.h"
#include "model/pool.h"
#include "planner/scale_down.h"
#include "planner/scale_down_memo.h"
#include "planner/scale_up.h"
#include "planner/slot_pools.h"
#include "sched/cluster_model.h"

namespace tidepool {
namespace {

using model::kCpu;
using model::kMemory;
using model::kPods;

struct Cluster {
  model::AutoscalerConfig config;
  std::deque<model::Node> nodes;
  std::deque<model::Pod> pods;
  planner::PlannerInput input;
};

model::Pod MakePod(std::string name, const std::string& owner, int64_t cpu, int64_t mem) {
  model::Pod p;
  p.meta.name = std::move(name);
  p.meta.namespace_ = "default";
  p.meta.owner_references.push_back({"apps/v1", "ReplicaSet", owner, "uid-" + owner, true});
  model::Container c;
  c.name = "main";
  c.requests.Set(kCpu, cpu);
  c.requests.Set(kMemory, mem);
  p.containers.push_back(std::move(c));
  p.Finalize();
  return p;
}

// `nodes` nodes over 200 pools with 20 running pods each: nine in ten at 55-95 % cpu, one in
// ten at 15-35 % (scale-down candidates); nodes / 10 pending pods, half small enough for the
// existing free room, half (14 cpu) needing new nodes.
Cluster* Build(int nodes) {
  auto* c = new Cluster;
  constexpr int kPools = 200;
  for (int i = 0; i < kPools; ++i) {
    model::Pool p;
    p.name = fmt::format("pool-{:03}", i);
    p.max = nodes;  // room to grow
    p.price_per_hour = 0.1 * (1 + i % 20);
    p.priority = i % 3;
    model::Resources cap;
    cap.Set(kCpu, 16000);
    cap.Set(kMemory, int64_t{64} << 30);
    cap.Set(kPods, 110);
    p.template_node.meta.name = "template-" + p.name;
    p.template_node.meta.labels[std::string(model::kLabelPool)] = p.name;
    p.template_node.capacity = cap;
    p.template_node.allocatable = cap;
    p.template_node.ready = true;
    c->config.pools.push_back(std::move(p));
  }
  c->config.scale_up.max_nodes_per_scale_up = nodes;
  std::mt19937 rng(7);
  for (int n = 0; n < nodes; ++n) {
    model::Node node = c->config.pools[n % kPools].template_node;
    node.meta.name = fmt::format("node-{}", n);
    node.meta.labels["kubernetes.io/hostname"] = node.meta.name;
    c->nodes.push_back(std::move(node));
    int64_t per_pod = n % 10 == 0 ? 120 + static_cast<int64_t>(rng() % 160)   // 15-35 %
                                  : 440 + static_cast<int64_t>(rng() % 320);  // 55-95 %
    for (int k = 0; k < 20; ++k) {
      model::Pod p = MakePod(fmt::format("run-{}-{}", n, k),
                             fmt::format("rs-{}", (n * 20 + k) % 5000), per_pod, int64_t{1} << 30);
      p.node_name = c->nodes.back().meta.name;
      p.phase = model::PodPhase::kRunning;
      c->pods.push_back(std::move(p));
    }
  }
  for (int i = 0; i < nodes / 10; ++i) {
    int64_t cpu = i % 2 == 0 ? 250 * (1 + i % 8) : 14000;
    c->pods.push_back(MakePod(fmt::format("pending-{}", i), fmt::format("burst-{}", i % 50), cpu,
                              int64_t{1 + i % 4} << 30));
  }
  c->input.config = &c->config;
  for (const auto& n : c->nodes) c->input.nodes.push_back(&n);
  // In name order, as the loop lists them (node-0, node-1, node-10, ...).
  std::sort(c->input.nodes.begin(), c->input.nodes.end(),
            [](const model::Node* a, const model::Node* b) { return a->name() < b->name(); });
  for (const auto& p : c->pods) c->input.pods.push_back(&p);
  return c;
}

void BM_Scale(benchmark::State& state) {
  static std::map<int64_t, Cluster*> clusters;
  Cluster*& c = clusters[state.range(0)];
  if (c == nullptr) c = Build(static_cast<int>(state.range(0)));
  // The input alone (1,000,000 decoded pods at 50,000 nodes), to read the planner's share of the
  // peak beside it.
  rusage before{};
  getrusage(RUSAGE_SELF, &before);
  size_t ups = 0, downs = 0;
  for (auto _ : state) {
    planner::ScaleUpPlan up = planner::ScaleUpPlanner().Plan(c->input);
    planner::ScaleDownPlan down = planner::ScaleDownPlanner().Plan(c->input);
    ups = 0;
    for (const auto& u : up.scale_ups) ups += u.add;
    downs = down.scale_downs.size();
    benchmark::DoNotOptimize(up);
    benchmark::DoNotOptimize(down);
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  state.counters["nodes_added"] = static_cast<double>(ups);
  state.counters["nodes_removed"] = static_cast<double>(downs);
  state.counters["peak_rss_MiB"] = static_cast<double>(usage.ru_maxrss) / 1024.0;
  state.counters["input_rss_MiB"] = static_cast<double>(before.ru_maxrss) / 1024.0;
}
BENCHMARK(BM_Scale)->Arg(500)->Arg(50000)->Unit(benchmark::kMillisecond)->Iterations(1);

// One planner alone (or both) on the same cluster: building its snapshot from the input (Built),
// or forking a long-lived ClusterModel after 100 pod changes applied to it as deltas (OnModel:
// each pass moves the 50 running pods the last pass moved back to their nodes and 50 others to
// another node, in place, as the simulator changes its pods; scale-down keeps its memo across
// passes, as the loop does). The cluster stays as built but for 50 pods, whatever the number of
// iterations, so runs of different lengths and binaries plan on the same kind of cluster.
enum class Plans { kUp, kDown, kBoth, kUnneeded, kRipe, kLoop };

// The pass that starts removals in the loop: rate limits on, and only ripe nodes may go (here
// one node in 500, 100 of the 50,000, all of them candidates).
size_t RipePass(const planner::PlannerInput& input) {
  planner::ScaleDownOptions options;
  options.may_remove = [](const model::Node& n) {
    std::string_view name = n.name();
    size_t number = 0;
    std::from_chars(name.data() + name.find('-') + 1, name.data() + name.size(), number);
    return number % 500 == 0;
  };
  return planner::ScaleDownPlanner().Plan(input, options).scale_downs.size();
}

// The loop's unneeded pass (no rate limits; a node waiting for a checkpoint counts), bounded as
// the loop bounds it (scaleDown.candidatesPerPass, `at_most`; 0: every candidate): the nodes the
// last pass found unneeded first, then the others in turn.
class UnneededPasses {
 public:
  explicit UnneededPasses(size_t at_most) {
    options_.rate_limit = false;
    options_.waiting_is_removable = true;
    options_.turn.at_most = at_most;
    options_.turn.unneeded_before = [this](std::string_view n) {
      return std::binary_search(unneeded_.begin(), unneeded_.end(), n);
    };
  }
  UnneededPasses(const UnneededPasses&) = delete;  // the predicate points at this object
  UnneededPasses& operator=(const UnneededPasses&) = delete;

  size_t Plan(const planner::PlannerInput& input) {
    planner::ScaleDownPlan plan = planner::ScaleDownPlanner().Plan(input, options_);
    options_.turn.after = plan.turn_ends_at;
    unneeded_.clear();
    for (const planner::ScaleDown& sd : plan.scale_downs) unneeded_.push_back(sd.node);
    std::sort(unneeded_.begin(), unneeded_.end());
    return unneeded_.size();
  }

 private:
  planner::ScaleDownOptions options_;
  std::vector<std::string> unneeded_;
};

// The loop's first pass asks for the nodes the pending pods need; until they register, every
// later pass finds them on their way (PlannerInput::upcoming) and places the pods there.
void AskFirst(planner::PlannerInput& input, const sched::ClusterModel& model) {
  input.unbound = model.Unbound();
  for (const planner::ScaleUp& up : planner::ScaleUpPlanner().Plan(input).scale_ups)
    input.upcoming[up.pool] += up.add;
}

void AfterChanges(benchmark::State& state, Plans plans, bool on_model, bool replace = false) {
  static std::map<int64_t, Cluster*> clusters;
  Cluster*& c = clusters[state.range(0)];
  if (c == nullptr) c = Build(static_cast<int>(state.range(0)));
  c->config.scale_down.consolidation.replace = replace;
  planner::PlannerInput input = c->input;
  sched::ClusterModel model;
  planner::ScaleDownMemo memo;  // kept across passes, as the loop keeps them
  planner::SlotPools slot_pools;
  if (on_model) {
    for (const model::Node& n : c->nodes) (void)model.SetNode(sched::ClusterModel::Borrow(&n));
    for (const model::Pod& p : c->pods) (void)model.SetPod(sched::ClusterModel::Borrow(&p));
    input.model = &model;
    input.scale_down_memo = &memo;
    input.slot_pools = &slot_pools;
  }
  std::mt19937 rng(11);
  const size_t running = c->nodes.size() * 20;
  std::vector<std::pair<model::Pod*, std::string>> moved;  // and the node each came from
  size_t added = 0, removed = 0;
  // The loop bounds its unneeded pass by scaleDown.candidatesPerPass (the config's default here).
  size_t bound = 0;
  if (plans == Plans::kUnneeded) bound = static_cast<size_t>(state.range(1));
  if (plans == Plans::kLoop) bound = static_cast<size_t>(c->config.scale_down.candidates_per_pass);
  UnneededPasses unneeded(bound);
  if (plans == Plans::kLoop) AskFirst(input, model);
  for (auto _ : state) {
    if (on_model) {
      for (auto& [pod, from] : moved) {
        pod->node_name = std::move(from);
        (void)model.SetPod(sched::ClusterModel::Borrow(pod));
      }
      moved.clear();
      for (int k = 0; k < 50; ++k) {
        model::Pod& pod = c->pods[rng() % running];
        if (std::any_of(moved.begin(), moved.end(), [&](const auto& m) { return m.first == &pod; }))
          continue;
        moved.emplace_back(&pod, pod.node_name);
        pod.node_name = c->nodes[rng() % c->nodes.size()].meta.name;
        (void)model.SetPod(sched::ClusterModel::Borrow(&pod));
      }
    }
    // The loop takes the pods without a node from the model at every Step.
    if (on_model) input.unbound = model.Unbound();
    if (plans == Plans::kUp || plans == Plans::kBoth || plans == Plans::kLoop) {
      planner::ScaleUpPlan up = planner::ScaleUpPlanner().Plan(input);
      added = 0;
      for (const auto& u : up.scale_ups) added += u.add;
      benchmark::DoNotOptimize(up);
    }
    if (plans == Plans::kUnneeded || plans == Plans::kLoop) {
      removed = unneeded.Plan(input);
      continue;
    }
    if (plans == Plans::kRipe) {
      removed = RipePass(input);
      continue;
    }
    if (plans != Plans::kUp) {
      planner::ScaleDownPlan down = planner::ScaleDownPlanner().Plan(input);
      removed = down.scale_downs.size();
      benchmark::DoNotOptimize(down);
    }
  }
  for (auto& [pod, from] : moved) pod->node_name = std::move(from);  // as built, for the next
  state.counters["nodes_added"] = static_cast<double>(added);
  state.counters["nodes_removed"] = static_cast<double>(removed);
}

void BM_ScaleDown(benchmark::State& state, bool on_model) {
  AfterChanges(state, Plans::kDown, on_model);
}
// Scale-down with consolidation's replace move on (off by default): every busy node of a pool
// that has a cheaper one is a candidate for it, and one a pool goes per pass.
void BM_ScaleDownReplace(benchmark::State& state) {
  AfterChanges(state, Plans::kDown, /*on_model=*/true, /*replace=*/true);
}
// What the loop runs at every scan (the pass above is the one it runs only when nodes are ripe).
void BM_UnneededPass(benchmark::State& state) {
  AfterChanges(state, Plans::kUnneeded, /*on_model=*/true);
}
void BM_RipePass(benchmark::State& state) { AfterChanges(state, Plans::kRipe, /*on_model=*/true); }
void BM_ScaleUp(benchmark::State& state, bool on_model) {
  AfterChanges(state, Plans::kUp, on_model);
}
void BM_Pass(benchmark::State& state, bool on_model) {
  AfterChanges(state, Plans::kBoth, on_model);
}
// What the loop runs at every scan after 100 pod changes, once its first pass has asked for the
// nodes the pending pods need: scale-up with those nodes on their way, then the unneeded pass
// (scaleDown.candidatesPerPass 100, the default). BM_Pass repeats the first pass's scale-up and
// runs the pass that starts removals, which the loop runs only when nodes are ripe.
void BM_LoopPass(benchmark::State& state) { AfterChanges(state, Plans::kLoop, /*on_model=*/true); }
BENCHMARK_CAPTURE(BM_ScaleDown, Built, false)->Arg(5000)->Arg(50000)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ScaleDown, OnModel, true)
    ->Arg(5000)
    ->Arg(50000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ScaleDownReplace)->Arg(5000)->Arg(50000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RipePass)->Arg(5000)->Arg(50000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_UnneededPass)
    ->ArgNames({"nodes", "bound"})
    ->ArgsProduct({{5000, 50000}, {0, 100}})
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ScaleUp, Built, false)->Arg(5000)->Arg(50000)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ScaleUp, OnModel, true)->Arg(5000)->Arg(50000)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Pass, Built, false)->Arg(5000)->Arg(50000)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Pass, OnModel, true)->Arg(5000)->Arg(50000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LoopPass)->Arg(5000)->Arg(50000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tidepool

BENCHMARK_MAIN();
