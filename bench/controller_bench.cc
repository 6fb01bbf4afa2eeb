// The controller's passes at the size of bench/controller_latency.sh, without the API server:
// NODES full nodes with 20 pods each in the informers' caches, a pending pod appears, one pass
// opens the batch window and the next, a window later, asks for a node. What is measured is the CPU
// of those two passes (Controller::RunOnce: view, model sync, the loop, the dry-run actuator); the
// live script adds watch delivery and the informers' decoding, which run beside the passes.
// BM_ControllerScan times the other pass a large cluster pays for: the scan every scanInterval,
// with scale-down on, after 100 pod changes; BM_ControllerQuietScan the same scan when nothing
// changed.
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "controller/controller.h"
#include "controller/model_feed.h"
#include "kube/client/informer_cache.h"
#include "kube/config/autoscaler_config.h"

namespace tidepool {
namespace {

using controller::ClusterView;

// The informers' cache (kube::InformerCache) per resource. The view is the cache's shared list,
// as the informers hand it out, or (`copy_view`) a copy of every pointer made at each pass, as
// they did before.
class CacheReader : public controller::ClusterReader {
 public:
  CacheReader(bool keep_model, bool copy_view) : copy_view_(copy_view) {
    if (!keep_model) return;
    feed_ = std::make_unique<controller::ModelFeed>(
        [this](const std::string& key) { return Find<model::Pod>(pods_, key); },
        [this](const std::string& name) { return Find<model::Node>(nodes_, name); });
  }
  bool HasSynced() const override { return true; }
  ClusterView Snapshot() const override {
    ClusterView v;
    v.nodes = View<model::Node>(nodes_);
    v.pods = View<model::Pod>(pods_);
    // As the informer reader versions its views (unversioned unless asked).
    if (versioned_) v.version = 1 + nodes_.changes() + pods_.changes();
    return v;
  }
  void SetVersioned(bool on) { versioned_ = on; }
  void SetOnChange(std::function<void(bool)>) override {}
  sched::ClusterModel* SyncModel(const ClusterView& view) override {
    return feed_ ? feed_->Sync({view.pods, view.nodes}) : nullptr;
  }

  void SetNode(model::Node n) {
    std::string name = n.name();
    nodes_.Set(name, {std::make_shared<const model::Node>(std::move(n)), ""});
    if (feed_) feed_->NodeChanged(name);
  }
  void SetPod(model::Pod p) {
    std::string key = p.meta.Key();
    pods_.Set(key, {std::make_shared<const model::Pod>(std::move(p)), ""});
    if (feed_) feed_->PodChanged(key);
  }
  void ErasePod(const std::string& key) {
    pods_.Erase(key);
    if (feed_) feed_->PodChanged(key);
  }

 private:
  template <typename T>
  static std::shared_ptr<const T> Find(const kube::InformerCache& cache, const std::string& key) {
    const kube::InformerCache::Item* item = cache.Find(key);
    return item == nullptr ? nullptr : std::static_pointer_cast<const T>(item->value);
  }
  template <typename T>
  SharedList<T> View(const kube::InformerCache& cache) const {
    if (!copy_view_) return SharedList<T>(cache.List());
    auto copy = std::make_shared<kube::InformerCache::Items>();
    copy->reserve(cache.size());
    for (const auto& [_, item] : cache.items()) copy->push_back(item.value);
    return SharedList<T>(std::move(copy));
  }

  bool copy_view_;
  bool versioned_ = false;
  kube::InformerCache nodes_;
  kube::InformerCache pods_;
  std::unique_ptr<controller::ModelFeed> feed_;
};

// The benchmarks start no removal: the controller only records events and its status, which go
// nowhere.
class EventSink : public controller::ClusterWriter {
 public:
  Result<void> AddTaint(const std::string&, const model::Taint&) override { return Unused(); }
  Result<void> RemoveTaint(const std::string&, const std::string&) override { return Unused(); }
  Result<void> Evict(const std::string&, const std::string&) override { return Unused(); }
  Result<void> DeleteNode(const std::string&, const std::string&) override { return Unused(); }
  Result<void> RecordEvent(const controller::EventSpec&) override { return {}; }
  Result<std::vector<std::string>> PodsOnNode(const std::string&) override {
    return Fail(Error::Code::kInternal, "the benchmark drains no node");
  }
  Result<void> SetProvisioningConditions(const std::string&, const std::string&,
                                         const std::vector<model::Condition>&) override {
    return Unused();
  }
  Result<void> SetCapacityBufferStatus(const std::string&, const std::string&,
                                       const model::BufferStatus&) override {
    return Unused();
  }
  Result<void> WriteStatus(const std::string&) override { return {}; }
  Result<std::optional<std::string>> ReadWarmState() override { return std::nullopt; }
  Result<void> WriteWarmState(const std::string&) override { return {}; }

 private:
  static Result<void> Unused() {
    return Fail(Error::Code::kInternal, "the benchmark changes no node or pod");
  }
};

// Pool targets that grow when asked; the nodes never come (the live script's bootDelay is 1h).
class CountingProvider : public cloud::CloudProvider {
 public:
  explicit CountingProvider(int filled) : targets_{{"filled", filled}, {"fresh", 0}} {}
  std::string_view Name() const override { return "counting"; }
  Result<std::vector<cloud::PoolSize>> Refresh(Time) override {
    std::vector<cloud::PoolSize> out;
    for (const auto& [pool, n] : targets_) out.push_back({pool, n, n, false, ""});
    return out;
  }
  Result<void> IncreaseSize(const std::string& pool, int delta, Time) override {
    targets_[pool] += delta;
    ++increases_;
    return {};
  }
  Result<void> DecreaseTargetSize(const std::string&, int, Time) override { return Unused(); }
  Result<void> DeleteNode(const std::string&, const model::Node&, Time) override {
    return Unused();
  }
  std::string PoolOf(const model::Node&) const override { return ""; }
  int increases() const { return increases_; }

 private:
  static Result<void> Unused() {
    return Fail(Error::Code::kInternal, "the benchmark removes no node");
  }
  std::map<std::string, int> targets_;
  int increases_ = 0;
};

// bench/controller_latency.sh's config and cluster.
model::AutoscalerConfig Config(int nodes, std::string_view scale_down = "{enabled: false}") {
  auto config = kube::config::ParseAutoscalerConfig(fmt::format(R"(
apiVersion: tidepool.dev/v1alpha1
kind: AutoscalerConfig
provider: {{type: kwok, bootDelay: 1h}}
scanInterval: 10s
scaleUp: {{batchIdle: 1s, batchMax: 10s}}
scaleDown: {}
pools:
  - name: filled
    max: {}
    template:
      labels: {{bench: filled}}
      capacity: {{cpu: "4", memory: 64Gi, pods: "30"}}
  - name: fresh
    max: 1000
    template:
      labels: {{bench: fresh}}
      capacity: {{cpu: "8", memory: 64Gi, pods: "110"}}
)",
                                                                scale_down, nodes + 10),
                                                    "controller_bench");
  if (!config) {
    spdlog::critical("{}", config.error().message());
    std::abort();
  }
  return *config;
}

model::Pod BenchPod(std::string name, std::string node, int64_t milli) {
  model::Pod p;
  p.meta.name = std::move(name);
  p.meta.namespace_ = "default";
  p.meta.uid = "uid-" + p.meta.name;
  p.meta.owner_references.push_back({"apps/v1", "ReplicaSet", "load", "uid-load", true});
  model::Container c{.name = "main"};
  c.requests.Set(model::kCpu, milli);
  c.requests.Set(model::kMemory, int64_t{64} << 20);
  p.containers.push_back(std::move(c));
  p.node_name = std::move(node);
  p.phase = p.node_name.empty() ? model::PodPhase::kPending : model::PodPhase::kRunning;
  p.Finalize();
  return p;
}

// Node n's name: short, or as long as an AKS scale set's (longer than std::string keeps inline, as
// real node names are).
std::string NodeName(int n, bool aks_names) {
  return aks_names ? fmt::format("aks-filled-31415926-vmss{:06}", n)
                   : fmt::format("filled-{:05}", n);
}

// The name of node n's k-th pod as Fill creates it.
std::string LoadPodName(int n, int k) { return fmt::format("load-{:05}-{:02}", n, k); }

// `milli(n)`: the cpu of each of node n's 20 pods (4 cpu a node).
void Fill(
    CacheReader& reader, const model::AutoscalerConfig& config, int nodes,
    const std::function<int64_t(int)>& milli = [](int) { return 200; }, bool aks_names = false) {
  for (int n = 0; n < nodes; ++n) {
    model::Node node = config.pools[0].template_node;
    node.meta.name = NodeName(n, aks_names);
    node.meta.uid = "uid-" + node.meta.name;
    node.meta.labels["kubernetes.io/hostname"] = node.meta.name;
    node.ready = true;
    for (int k = 0; k < 20; ++k) {
      reader.SetPod(BenchPod(LoadPodName(n, k), node.meta.name, milli(n)));
    }
    reader.SetNode(std::move(node));
  }
}

// One sample, as the live script takes it: a pending pod for pool `fresh` appears; the pass it
// wakes opens the batch, the one a window later asks for a node (which never comes). Samples
// are 11 s apart, past batchMax, so each opens its own batch; the probes stay pending, each
// waiting for its own new node, so a run takes a fixed number of samples.
void BM_ControllerPasses(benchmark::State& state, bool keep_model, bool copy_view) {
  spdlog::set_level(getenv("BENCH_LOG") ? spdlog::level::info : spdlog::level::warn);
  const int nodes = static_cast<int>(state.range(0));
  model::AutoscalerConfig config = Config(nodes);
  CacheReader reader(keep_model, copy_view);
  Fill(reader, config, nodes);
  EventSink writer;
  CountingProvider provider(nodes);
  ManualClock clock(Time{} + std::chrono::hours(1));
  controller::Controller ctl(config, reader, writer, provider, clock);
  Time now = clock.Now();
  ctl.RunOnce(now);  // the first pass builds the loop (and the model)
  int samples = 0;
  for (auto _ : state) {
    model::Pod probe = BenchPod(fmt::format("probe-{}", samples++), "", 6000);
    probe.node_selector["bench"] = "fresh";
    probe.Finalize();
    reader.SetPod(std::move(probe));
    now += std::chrono::milliseconds(100);
    ctl.RunOnce(now);
    now += std::chrono::milliseconds(1100);
    ctl.RunOnce(now);
    now += std::chrono::seconds(10);
  }
  if (provider.increases() != samples) {
    state.SkipWithError(
        fmt::format("{} of {} samples asked for a node", provider.increases(), samples).c_str());
  }
}
void Sizes(benchmark::internal::Benchmark* b) {
  b->Arg(200)->Arg(1000)->Arg(5000)->Iterations(20)->Repetitions(3)->Unit(benchmark::kMillisecond);
}
BENCHMARK_CAPTURE(BM_ControllerPasses, Model, true, false)->Apply(Sizes);
BENCHMARK_CAPTURE(BM_ControllerPasses, ModelCopiedView, true, true)->Apply(Sizes);
BENCHMARK_CAPTURE(BM_ControllerPasses, NoModel, false, false)->Apply(Sizes);

// `per_node` pods of finished Jobs on each node, Succeeded as a Job's pods stay until the Job or
// its ttlSecondsAfterFinished removes them: each of its own Job, all started an hour before.
void AddFinished(CacheReader& reader, int nodes, int per_node, bool aks_names, Time now) {
  for (int n = 0; n < nodes; ++n) {
    for (int k = 0; k < per_node; ++k) {
      model::Pod p = BenchPod(fmt::format("done-{:05}-{:02}", n, k), NodeName(n, aks_names), 100);
      p.meta.owner_references = {{"batch/v1", "Job", fmt::format("job-{}-{}", n, k),
                                  fmt::format("uid-job-{}-{}", n, k), true}};
      p.phase = model::PodPhase::kSucceeded;
      p.start_time = now - std::chrono::hours(1);
      p.Finalize();
      reader.SetPod(std::move(p));
    }
  }
}

// `count` pods pending, each of its own Job. Without `booting`: for pool `filled`, each asking for
// a whole node's cpu: they fit on no node, and the pool may grow by no more than 10 nodes (its
// max), as when a team's quota is spent and its jobs wait. With `booting`: for pool `fresh`, 100m
// each, as a burst of jobs waits for the nodes the first scan asked for (which never register):
// every node that is there fails their node selector.
void AddWaiting(CacheReader& reader, int count, bool booting) {
  for (int i = 0; i < count; ++i) {
    model::Pod p = BenchPod(fmt::format("wait-{:05}", i), "", booting ? 100 : 4000);
    p.meta.owner_references = {
        {"batch/v1", "Job", fmt::format("wait-{}", i), fmt::format("uid-wait-{}", i), true}};
    p.node_selector["bench"] = booting ? "fresh" : "filled";
    p.Finalize();
    reader.SetPod(std::move(p));
  }
}

// The scan the controller runs every scanInterval with scale-down on, after 100 pod changes (50
// pods gone, 50 new ones, each on a random node; the changes are not timed). Nine nodes in ten are
// at 75 % cpu, one in ten at 25 % (a candidate whose pods fit elsewhere); unneededTime is a day, so
// the scans find nodes unneeded and start no removal. `bound`: scaleDown.candidatesPerPass (0:
// every candidate); `aks_names`: node names as long as real ones (NodeName); `finished`: pods of
// finished Jobs per node (AddFinished); `waiting`, `booting`: pending pods (AddWaiting).
// The scans' config: scale-down on, nothing ripe for a day, `bound` candidates per pass.
model::AutoscalerConfig ScanConfig(int nodes, int64_t bound) {
  return Config(nodes, fmt::format("{{unneededTime: 24h, candidatesPerPass: {}}}", bound));
}
// The scans' load: node n's pods' cpu (a node at 25 % in ten, the others at 75 %).
int64_t ScanMilli(int n) { return n % 10 == 0 ? 50 : 150; }

void BM_ControllerScan(benchmark::State& state) {
  spdlog::set_level(getenv("BENCH_LOG") ? spdlog::level::info : spdlog::level::warn);
  const int nodes = static_cast<int>(state.range(0));
  model::AutoscalerConfig config = ScanConfig(nodes, state.range(1));
  CacheReader reader(/*keep_model=*/true, /*copy_view=*/false);
  auto milli = ScanMilli;
  const bool aks_names = state.range(2) != 0;
  Fill(reader, config, nodes, milli, aks_names);
  ManualClock clock(Time{} + std::chrono::hours(1));
  AddFinished(reader, nodes, static_cast<int>(state.range(3)), aks_names, clock.Now());
  AddWaiting(reader, static_cast<int>(state.range(4)), state.range(5) != 0);
  EventSink writer;
  CountingProvider provider(nodes);
  controller::Controller ctl(config, reader, writer, provider, clock);
  Time now = clock.Now();
  ctl.RunOnce(now);
  std::mt19937 rng(5);
  std::vector<std::pair<std::string, int>> live;  // the churned pods now running, and their node
  for (int i = 0; i < 50; ++i) live.emplace_back(LoadPodName(i, 0), i);
  int created = 0;
  size_t unneeded = 0;
  for (auto _ : state) {
    state.PauseTiming();  // the informers' work, on their own threads in the controller
    for (auto& [name, node] : live) {
      reader.ErasePod("default/" + name);
      node = static_cast<int>(rng() % static_cast<unsigned>(nodes));
      name = fmt::format("churn-{}", created++);
      reader.SetPod(BenchPod(name, NodeName(node, aks_names), milli(node)));
    }
    state.ResumeTiming();
    now += config.scan_interval;
    ctl.RunOnce(now);
  }
  if (std::optional<autoscaler::Status> status = ctl.Status()) unneeded = status->unneeded.size();
  if (unneeded == 0) state.SkipWithError("the scans found no node unneeded");
  state.counters["unneeded"] = static_cast<double>(unneeded);
}
BENCHMARK(BM_ControllerScan)
    ->ArgNames({"nodes", "bound", "aks_names", "finished", "waiting", "booting"})
    ->ArgsProduct({{1000, 5000, 50000}, {0, 100}, {0}, {0}, {0}, {0}})
    ->Args({5000, 100, 1, 0, 0, 0})
    ->Args({5000, 100, 0, 5, 0, 0})
    ->Args({5000, 100, 0, 0, 2000, 0})
    ->Args({5000, 100, 0, 0, 2000, 1})
    ->Iterations(20)
    ->Repetitions(3)
    ->Unit(benchmark::kMillisecond);

// The scan on a cluster where nothing changes (the cluster of BM_ControllerScan without the
// churn), its views versioned as the informer reader versions them or not: a versioned scan that
// sees what a scan that decided nothing saw skips the loop's Step (PassReport::unchanged), and
// costs the view, the model sync and the provider's answers. 30 untimed scans first, so that
// every candidate has been weighed; `skipped`: the share of timed scans skipped.
void BM_ControllerQuietScan(benchmark::State& state) {
  spdlog::set_level(getenv("BENCH_LOG") ? spdlog::level::info : spdlog::level::warn);
  const int nodes = static_cast<int>(state.range(0));
  model::AutoscalerConfig config = ScanConfig(nodes, state.range(1));
  CacheReader reader(/*keep_model=*/true, /*copy_view=*/false);
  reader.SetVersioned(state.range(2) != 0);
  Fill(reader, config, nodes, ScanMilli);
  EventSink writer;
  CountingProvider provider(nodes);
  ManualClock clock(Time{} + std::chrono::hours(1));
  controller::Controller ctl(config, reader, writer, provider, clock);
  Time now = clock.Now();
  for (int i = 0; i < 30; ++i, now += config.scan_interval) ctl.RunOnce(now);
  int scans = 0, skipped = 0;
  for (auto _ : state) {
    now += config.scan_interval;
    skipped += ctl.RunOnce(now).unchanged ? 1 : 0;
    ++scans;
  }
  state.counters["skipped"] = static_cast<double>(skipped) / scans;
}
BENCHMARK(BM_ControllerQuietScan)
    ->ArgNames({"nodes", "bound", "versioned"})
    ->ArgsProduct({{1000, 5000, 50000}, {0, 100}, {0, 1}})
    ->Iterations(20)
    ->Repetitions(3)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tidepool

BENCHMARK_MAIN();
