// The simulator's scale target: a synthetic trace of 1,000,000 jobs replayed through the decision
// loop in <= 5 minutes. BM_SimSynthetic/200 is the same trace shape for the smoke run in make
// test; the real figure is BM_SimSynthetic/1000000 (docs/performance.md).
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <sys/resource.h>

#include <random>
#include <string>
#include <vector>

#include "kube/config/autoscaler_config.h"
#include "model/resources.h"
#include "sim/simulator.h"
#include "sim/trace.h"

namespace tidepool {
namespace {

// The built-in scenario's pools (CPU on-demand, light and heavy GPU, spot first with on-demand
// fallback), sized so a steady stream of jobs never hits a maximum.
constexpr std::string_view kConfig = R"(
apiVersion: tidepool.dev/v1alpha1
kind: AutoscalerConfig
limits: {maxNodes: 2000}
scaleUp: {expanders: [priority, least-waste], provisionTimeout: 15m}
pools:
  - {name: cpu, min: 1, max: 400, pricePerHour: 0.77, priority: 10,
     template: {capacity: {cpu: "16", memory: 64Gi, pods: "110"}}}
  - {name: gpu, min: 0, max: 400, pricePerHour: 0.90, priority: 10,
     template: {labels: {accelerator: nvidia}, capacity: {cpu: "6", memory: 56Gi, nvidia.com/gpu: "1", pods: "110"}}}
  - name: gpu-spot
    min: 0
    max: 400
    capacityType: spot
    pricePerHour: 0.18
    priority: 100
    template:
      labels: {accelerator: nvidia}
      taints: [{key: kubernetes.azure.com/scalesetpriority, value: spot, effect: NoSchedule}]
      capacity: {cpu: "6", memory: 56Gi, nvidia.com/gpu: "1", pods: "110"}
  - {name: heavy, min: 0, max: 400, pricePerHour: 12.24, priority: 10,
     template: {labels: {gpu-size: heavy}, capacity: {cpu: "24", memory: 448Gi, nvidia.com/gpu: "4", pods: "110"}}}
  - name: heavy-spot
    min: 0
    max: 400
    capacityType: spot
    pricePerHour: 2.45
    priority: 100
    template:
      labels: {gpu-size: heavy}
      taints: [{key: kubernetes.azure.com/scalesetpriority, value: spot, effect: NoSchedule}]
      capacity: {cpu: "24", memory: 448Gi, nvidia.com/gpu: "4", pods: "110"}
)";

// `n` jobs arriving as a Poisson stream (mean 30 s apart): half CPU jobs (1-4 replicas of
// 0.5-2 CPU, 5-60 min), 40 % single-GPU jobs (3-30 min, 70 % tolerate spot), 10 % gangs of two
// 4-GPU workers (1-4 h, half tolerate spot). Seeded: the same n gives the same trace.
std::vector<sim::JobSpec> SyntheticTrace(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  std::exponential_distribution<double> gap(1.0 / 30);
  const model::ResourceId gpu = model::InternResource(model::kNvidiaGpu);
  std::vector<sim::JobSpec> jobs;
  jobs.reserve(n);
  double t = 0;
  for (int i = 0; i < n; ++i) {
    t += gap(rng);
    sim::JobSpec j;
    j.id = fmt::format("job-{:07d}", i);
    j.submit = std::chrono::milliseconds(static_cast<int64_t>(t * 1000));
    int64_t kind = uniform(0, 9);
    if (kind < 5) {
      j.replicas = static_cast<int>(uniform(1, 4));
      j.requests.Set(model::kCpu, uniform(1, 4) * 500);
      j.requests.Set(model::kMemory, uniform(1, 4) << 30);
      j.duration = std::chrono::minutes(uniform(5, 60));
    } else if (kind < 9) {
      j.requests.Set(model::kCpu, 4000);
      j.requests.Set(model::kMemory, int64_t{16} << 30);
      j.requests.Set(gpu, 1);
      j.duration = std::chrono::minutes(uniform(3, 30));
      j.spot = uniform(0, 9) < 7;
    } else {
      j.replicas = 2;
      j.gang = true;
      j.requests.Set(model::kCpu, 20000);
      j.requests.Set(model::kMemory, int64_t{200} << 30);
      j.requests.Set(gpu, 4);
      j.duration = std::chrono::minutes(uniform(60, 240));
      j.spot = uniform(0, 1) == 1;
    }
    jobs.push_back(std::move(j));
  }
  return jobs;
}

int64_t PeakRssMiB() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024;
}

void BM_SimSynthetic(benchmark::State& state) {
  auto config = kube::config::ParseAutoscalerConfig(kConfig, "sim_bench.yaml");
  if (!config) {
    state.SkipWithError(config.error().message().c_str());
    return;
  }
  sim::SimInput in;
  in.config = *config;
  in.jobs = SyntheticTrace(static_cast<int>(state.range(0)), 42);
  sim::Summary last;
  for (auto _ : state) {
    auto s = sim::RunSimulation(in);
    if (!s) {
      state.SkipWithError(s.error().message().c_str());
      return;
    }
    last = std::move(*s);
  }
  if (last.jobs_completed != last.jobs) {
    state.SkipWithError("not every job completed");
    return;
  }
  state.counters["jobs"] = static_cast<double>(last.jobs);
  state.counters["steps"] = static_cast<double>(last.steps);
  state.counters["sim_days"] = last.simulated_hours / 24;
  state.counters["cost_ratio"] = last.cost / last.lower_bound_cost;
  state.counters["peak_rss_MiB"] = static_cast<double>(PeakRssMiB());
}
BENCHMARK(BM_SimSynthetic)
    ->Arg(200)
    ->Arg(10000)
    ->Arg(1000000)
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

}  // namespace
}  // namespace tidepool

BENCHMARK_MAIN();
