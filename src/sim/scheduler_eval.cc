#include "sim/scheduler_eval.h"

#include <fmt/format.h>

#include <tuple>

#include "base/check.h"
#include "sim/summary.h"

namespace tidepool::sim {

Result<std::vector<PolicyRun>> RunSchedulerEvaluation(const SimInput& base) {
  std::vector<PolicyRun> runs;
  for (auto [name, policy, description] :
       {std::tuple{"least-allocated", ScoringPolicy::kLeastAllocated,
                   "kube-scheduler's default scoring: the node with the most room left"},
        std::tuple{"most-allocated", ScoringPolicy::kMostAllocated,
                   "NodeResourcesFit MostAllocated: the fullest node that fits"}}) {
    SimInput in = TidepoolPolicy(base);
    in.sim.scheduler = policy;
    auto s = RunSimulation(in, name);
    if (!s) return std::unexpected(s.error().Wrap(fmt::format("scheduler {}", name)));
    runs.push_back({name, description, std::move(*s)});
  }
  return runs;
}

SchedulerSaving SchedulerSavingOf(const std::vector<PolicyRun>& runs) {
  TIDEPOOL_CHECK(runs.size() == 2);
  SchedulerSaving s;
  s.least_allocated_cost = runs[0].summary.cost;
  s.most_allocated_cost = runs[1].summary.cost;
  s.saving = s.least_allocated_cost - s.most_allocated_cost;
  s.percent = s.least_allocated_cost > 0 ? 100 * s.saving / s.least_allocated_cost : 0;
  s.saves = s.saving > 0 && s.saving >= kMinSchedulerSavingShare * s.least_allocated_cost;
  return s;
}

double TotalNodeHours(const Summary& s) {
  double total = 0;
  for (const auto& [pool, hours] : s.node_hours) total += hours;
  return total;
}

std::string SchedulerTableToText(const std::vector<PolicyRun>& runs) {
  std::string out =
      fmt::format("  {:<16} {:>12} {:>7} {:>10} {:>16} {:>9} {:>9} {:>10}\n", "scheduler", "cost",
                  "x bound", "node-h", "GPU-h paid/used", "wait p95", "evictions", "GPU-h lost");
  for (const PolicyRun& r : runs) {
    const Summary& s = r.summary;
    out += fmt::format("  {:<16} {:>12} {:>7} {:>10.1f} {:>16} {:>9} {:>9} {:>10.1f}\n", r.name,
                       fmt::format("${:.2f}", s.cost), FormatBoundRatio(s), TotalNodeHours(s),
                       fmt::format("{:.0f}/{:.0f}", s.gpu_hours_paid, s.gpu_hours_used),
                       FormatSeconds(s.wait_p95), s.evictions, s.work_lost_gpu_hours);
  }
  return out;
}

std::string SchedulerEvaluationToText(const std::vector<PolicyRun>& runs) {
  std::string out = "Scheduler scoring evaluation (tidepool's policy, same trace and cloud)\n\n";
  out += SchedulerTableToText(runs);
  const SchedulerSaving s = SchedulerSavingOf(runs);
  out += "\n";
  if (s.saving >= 0) {
    out += fmt::format("  most-allocated saves ${:.2f} ({:.1f}%) against least-allocated{}\n",
                       s.saving, s.percent,
                       s.saves ? ""
                               : fmt::format(" (less than {:.0f}%: no saving worth a "
                                             "profile change)",
                                             100 * kMinSchedulerSavingShare));
  } else {
    out += fmt::format("  most-allocated costs ${:.2f} (+{:.1f}%) more than least-allocated\n",
                       -s.saving, -s.percent);
  }
  out += "\n";
  for (const PolicyRun& r : runs) out += fmt::format("  {:<16} {}\n", r.name, r.description);
  return out;
}

nlohmann::ordered_json SchedulerSavingToJson(const SchedulerSaving& s) {
  nlohmann::ordered_json j;
  j["leastAllocatedCost"] = s.least_allocated_cost;
  j["mostAllocatedCost"] = s.most_allocated_cost;
  j["saving"] = s.saving;
  j["savingPercent"] = s.percent;
  j["mostAllocatedSaves"] = s.saves;
  return j;
}

nlohmann::ordered_json SchedulerEvaluationToJson(const std::vector<PolicyRun>& runs) {
  nlohmann::ordered_json out = ComparisonToJson(runs);
  out["saving"] = SchedulerSavingToJson(SchedulerSavingOf(runs));
  return out;
}

std::string MostAllocatedSchedulerConfig() {
  return R"(apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: default-scheduler
    pluginConfig:
      - name: NodeResourcesFit
        args:
          scoringStrategy:
            type: MostAllocated
            resources:
              - {name: cpu, weight: 1}
              - {name: memory, weight: 1}
              - {name: nvidia.com/gpu, weight: 1}
)";
}

}  // namespace tidepool::sim
