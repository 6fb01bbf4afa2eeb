#include "sim/invariants.h"

#include <fmt/format.h>

namespace tidepool::sim {
namespace {

std::string CheckPools(const std::string& at, const SimCloud& cloud) {
  for (const SimPool& p : cloud.pools()) {
    if (p.target > p.pool->max || static_cast<int>(p.nodes.size()) > p.pool->max) {
      return fmt::format("{}: pool {} has target {} and {} instances, above its max {}", at,
                         p.pool->name, p.target, p.nodes.size(), p.pool->max);
    }
  }
  return {};
}

std::string CheckRunningPods(const std::string& at, const SimCloud& cloud,
                             const Workload& workload) {
  for (int pod : workload.active()) {
    const SimPod& p = workload.pod(pod);
    if (p.state != PodState::kRunning) continue;
    const SimInstance& n = cloud.instance(p.node);
    if (!n.alive() || !n.joined || !n.node->ready) {
      return fmt::format("{}: pod {} runs on node {} which is not ready", at, p.pod->Key(), n.name);
    }
  }
  return {};
}

std::string CheckGangs(const std::string& at, const Workload& workload) {
  for (const SimJob& job : workload.jobs()) {
    if (!job.spec->gang || job.completed_at) continue;
    int running = 0;
    for (int m : job.pods) running += workload.pod(m).state == PodState::kRunning;
    if (running != 0 && running != job.spec->replicas) {
      return fmt::format("{}: gang job {} has {} of {} members running", at, job.spec->id, running,
                         job.spec->replicas);
    }
    if (running == 0) continue;
    Time first = workload.pod(job.pods.front()).started;
    for (int m : job.pods) {
      if (workload.pod(m).started != first) {
        return fmt::format("{}: gang job {} members started at different times", at, job.spec->id);
      }
    }
  }
  return {};
}

}  // namespace

std::string CheckInvariants(Time now, const SimCloud& cloud, const Workload& workload, double cost,
                            double& last_cost) {
  std::string at = FormatRfc3339(now);
  std::string v = CheckPools(at, cloud);
  if (v.empty()) v = CheckRunningPods(at, cloud, workload);
  if (v.empty()) v = CheckGangs(at, workload);
  if (!v.empty()) return v;
  int64_t pending = 0;
  for (int pod : workload.active()) pending += workload.pod(pod).state == PodState::kPending;
  if (pending != workload.pending()) {
    return fmt::format("{}: {} pods pending, counted {}", at, pending, workload.pending());
  }
  if (cost + 1e-9 < last_cost) {
    return fmt::format("{}: cost went down from {} to {}", at, last_cost, cost);
  }
  last_cost = cost;
  return {};
}

}  // namespace tidepool::sim
