// LowerBoundCost: the clairvoyant fluid bound every policy's cost is compared with.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <limits>

#include "sched/fit.h"
#include "sim/simulator.h"
#include "sim/units.h"
#include "sim/workload.h"

namespace tidepool::sim {
namespace {

// The cheapest price per replica-hour of `job` over the pools whose template could host it:
// the largest fraction of the node shape it needs, times the pool's price. Infinity: none.
double CheapestPerReplicaHour(const model::AutoscalerConfig& config, const JobSpec& job) {
  model::Pod pod = MakePod(job, 0, Time{});
  double best = std::numeric_limits<double>::infinity();
  for (const model::Pool& pool : config.pools) {
    model::Node node = pool.template_node;
    node.meta.name = pool.name + "-template";
    node.meta.labels[std::string(model::kLabelPool)] = pool.name;
    node.meta.labels[std::string(model::kLabelHostname)] = node.meta.name;
    model::Resources alloc = Allocatable(node);
    node.allocatable = alloc;
    if (!sched::CheckNodeStatic(pod, node).fits()) continue;
    if (!sched::CheckResources(pod, alloc, model::Resources()).fits()) continue;
    double frac = 0;
    for (model::ResourceId r : {model::kCpu, model::kMemory, GpuId(), GpuMilliId()}) {
      int64_t a = alloc.Get(r);
      if (a > 0) frac = std::max(frac, static_cast<double>(job.requests.Get(r)) / a);
    }
    best = std::min(best, frac * pool.price_per_hour);
  }
  return best;
}

}  // namespace

double LowerBoundCost(const model::AutoscalerConfig& config, const std::vector<JobSpec>& jobs,
                      int64_t* excluded) {
  double total = 0;
  int64_t skipped = 0;
  std::map<std::string, double> memo;  // shape -> cheapest price per replica-hour
  for (const JobSpec& job : jobs) {
    std::string shape =
        fmt::format("{}|{}|{}|{}", job.requests.ToString(), fmt::join(job.gpu_models, ","),
                    job.spot, job.observed ? job.observed->Key() : std::string());
    auto it = memo.find(shape);
    if (it == memo.end()) it = memo.emplace(shape, CheapestPerReplicaHour(config, job)).first;
    if (std::isinf(it->second)) {
      ++skipped;
      continue;
    }
    total += it->second * job.replicas * Hours(job.duration);
  }
  if (excluded) *excluded = skipped;
  return total;
}

}  // namespace tidepool::sim
