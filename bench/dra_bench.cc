// Scale-up with Dynamic Resource Allocation against the same workload asking for GPUs as an
// extended resource: 5,000 pending pods of which a fifth want one GPU, 100 GPU nodes half used
// by running GPU pods. The DRA case pays for the claims' allocation search and its undo log
// (docs/dra.md); the target is at most twice the extended-resource case (docs/performance.md).
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <deque>
#include <string>

#include "model/dra.h"
#include "model/node.h"
#include "model/pod.h"
#include "model/pool.h"
#include "planner/scale_up.h"

namespace tidepool {
namespace {

using model::kCpu;
using model::kMemory;
using model::kPods;

constexpr int kGpuNodes = 100;
constexpr int kGpusPerNode = 8;
constexpr int kRunningPerNode = 4;
constexpr int kPending = 5000;
constexpr std::string_view kDriver = "gpu.example.com";
const model::ResourceId kGpu = model::InternResource(model::kNvidiaGpu);

model::Pool MakePool(std::string name, int64_t cpu_milli, int64_t memory, int64_t gpus, bool dra) {
  model::Pool p;
  p.name = std::move(name);
  p.max = 1000;
  p.price_per_hour = gpus > 0 ? 3.0 : 0.5;
  p.template_node.meta.name = "template-" + p.name;
  p.template_node.meta.labels[std::string(model::kLabelPool)] = p.name;
  p.template_node.capacity.Set(kCpu, cpu_milli);
  p.template_node.capacity.Set(kMemory, memory);
  p.template_node.capacity.Set(kPods, 110);
  if (gpus > 0 && !dra) p.template_node.capacity.Set(kGpu, gpus);
  p.template_node.allocatable = p.template_node.capacity;
  p.template_node.ready = true;
  if (gpus > 0 && dra) {
    model::TemplateDevices d;
    d.driver = std::string(kDriver);
    d.count = static_cast<int32_t>(gpus);
    d.attributes["gpu.example.com/productName"] = {.kind = model::DeviceAttribute::Kind::kString,
                                                   .text = "A100"};
    p.devices.push_back(d);
    p.device_slices = model::TemplateSlices(p.name, p.template_node.meta.name, p.devices);
  }
  return p;
}

model::Pod MakePod(std::string name, std::string owner, int64_t cpu_milli, int64_t memory) {
  model::Pod p;
  p.meta.name = std::move(name);
  p.meta.namespace_ = "ml";
  p.meta.owner_references.push_back({"apps/v1", "ReplicaSet", owner, owner, true});
  model::Container c;
  c.name = "main";
  c.requests.Set(kCpu, cpu_milli);
  c.requests.Set(kMemory, memory);
  p.containers.push_back(c);
  return p;
}

struct Fixture {
  model::AutoscalerConfig config;
  model::DraObjects dra;
  std::deque<model::Node> nodes;
  std::deque<model::Pod> pods;
  planner::PlannerInput input;

  explicit Fixture(bool use_dra) {
    config.pools.push_back(MakePool("cpu", 16000, int64_t{64} << 30, 0, use_dra));
    config.pools.push_back(MakePool("gpu", 96000, int64_t{900} << 30, kGpusPerNode, use_dra));
    if (use_dra) {
      model::DeviceClass& dc = dra.device_classes.emplace_back();
      dc.meta.name = std::string(kDriver);
      dc.selectors.push_back(fmt::format("device.driver == \"{}\"", kDriver));
      model::ResourceClaimTemplate& t = dra.claim_templates.emplace_back();
      t.meta.name = "one-gpu";
      t.meta.namespace_ = "ml";
      model::DeviceRequest& r = t.spec.requests.emplace_back();
      r.name = "gpu";
      r.exactly.emplace();
      r.exactly->name = "gpu";
      r.exactly->device_class_name = std::string(kDriver);
      r.exactly->selectors.push_back(
          "device.attributes[\"gpu.example.com\"].productName == \"A100\"");
    }
    for (int n = 0; n < kGpuNodes; ++n) AddGpuNode(n, use_dra);
    for (int i = 0; i < kPending; ++i) {
      bool gpu = i % 5 == 0;
      model::Pod p = MakePod(fmt::format("pending-{}", i), fmt::format("rs-{}", i % 10),
                             gpu ? 8000 : 500, int64_t{gpu ? 64 : 1} << 30);
      if (gpu) AskForGpu(p, use_dra, "");
      p.Finalize();
      pods.push_back(std::move(p));
    }
    input.config = &config;
    if (use_dra) input.dra = &dra;
    for (const auto& n : nodes) input.nodes.push_back(&n);
    for (const auto& p : pods) input.pods.push_back(&p);
  }

  void AskForGpu(model::Pod& p, bool use_dra, const std::string& generated_claim) {
    if (!use_dra) {
      p.containers[0].requests.Set(kGpu, 1);
      return;
    }
    p.mutable_resource_claims().push_back({.name = "gpu", .template_name = "one-gpu"});
    if (!generated_claim.empty()) {
      p.mutable_resource_claim_statuses().push_back({.name = "gpu", .claim_name = generated_claim});
    }
  }

  void AddGpuNode(int n, bool use_dra) {
    model::Node node = config.pools[1].template_node;
    node.meta.name = fmt::format("gpu-{}", n);
    node.meta.labels["kubernetes.io/hostname"] = node.meta.name;
    nodes.push_back(node);
    if (use_dra) {
      model::ResourceSlice s = config.pools[1].device_slices[0];
      s.meta.name = node.meta.name + "-gpus";
      s.pool = node.meta.name;
      s.node_name = node.meta.name;
      dra.slices.push_back(std::move(s));
    }
    for (int k = 0; k < kRunningPerNode; ++k) {
      model::Pod p = MakePod(fmt::format("run-{}-{}", n, k), "running", 8000, int64_t{64} << 30);
      p.node_name = node.meta.name;
      p.phase = model::PodPhase::kRunning;
      std::string claim = fmt::format("run-{}-{}-gpu", n, k);
      AskForGpu(p, use_dra, claim);
      p.Finalize();
      pods.push_back(std::move(p));
      if (!use_dra) continue;
      model::ResourceClaim& c = dra.claims.emplace_back();
      c.meta.name = claim;
      c.meta.namespace_ = "ml";
      c.spec = dra.claim_templates[0].spec;
      c.allocation.emplace();
      c.allocation->devices.push_back(
          {"gpu", std::string(kDriver), node.meta.name, fmt::format("gpu-{}", k)});
      model::NodeSelectorTerm term;
      term.match_fields.push_back({"metadata.name", model::SelectorOp::kIn, {node.meta.name}});
      c.allocation->node_selector = model::NodeSelector{{term}};
    }
  }
};

// Arg 0: GPUs as the extended resource nvidia.com/gpu; 1: through ResourceClaims.
void BM_GpuMix5000(benchmark::State& state) {
  static Fixture* extended = new Fixture(false);
  static Fixture* dra = new Fixture(true);
  Fixture* f = state.range(0) == 0 ? extended : dra;
  int gpu_nodes = 0, cpu_nodes = 0;
  for (auto _ : state) {
    planner::ScaleUpPlan plan = planner::ScaleUpPlanner().Plan(f->input);
    gpu_nodes = cpu_nodes = 0;
    for (const auto& up : plan.scale_ups) (up.pool == "gpu" ? gpu_nodes : cpu_nodes) += up.add;
    benchmark::DoNotOptimize(plan);
  }
  state.counters["gpu_nodes"] = gpu_nodes;
  state.counters["cpu_nodes"] = cpu_nodes;
  // 1,000 GPU pods, 400 free GPUs on the existing nodes: 600 more, 8 a node.
  if (gpu_nodes != 75) {
    state.SkipWithError(fmt::format("expected 75 new GPU nodes, got {}", gpu_nodes).c_str());
  }
}
BENCHMARK(BM_GpuMix5000)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tidepool

BENCHMARK_MAIN();
