// `simulate --scheduler-eval` and `explain --cluster`: the same workload under tidepool's policy
// with kube-scheduler's least- and most-allocated scoring, and what a MostAllocated profile saves.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/error.h"
#include "sim/compare.h"
#include "sim/simulator.h"

namespace tidepool::sim {

// Runs `base` under tidepool's policy twice, with simulation.scheduler least-allocated, then
// most-allocated (runs named so, in that order); the rest of `base` as given. Errors: the first
// failed run.
Result<std::vector<PolicyRun>> RunSchedulerEvaluation(const SimInput& base);

// A saving smaller than this share of the least-allocated cost is no reason to change the
// scheduler's profile (the two runs differ in which nodes boot when, not only in packing).
inline constexpr double kMinSchedulerSavingShare = 0.01;

// What most-allocated saves against least-allocated (negative: it costs more).
struct SchedulerSaving {
  double least_allocated_cost = 0;
  double most_allocated_cost = 0;
  double saving = 0;   // least - most, $
  double percent = 0;  // saving / least x 100 (0 when least cost nothing)
  bool saves = false;  // saving >= kMinSchedulerSavingShare of the least-allocated cost
};

// Of the runs RunSchedulerEvaluation returned. Checks there are the two of them.
SchedulerSaving SchedulerSavingOf(const std::vector<PolicyRun>& runs);

// Node-hours over every pool.
double TotalNodeHours(const Summary& s);

// The table (a row per scheduler: cost, x lower bound, node-hours, GPU-h paid/used, wait p95,
// evictions, GPU-h lost), without a title.
std::string SchedulerTableToText(const std::vector<PolicyRun>& runs);

// Title, table and the saving line.
std::string SchedulerEvaluationToText(const std::vector<PolicyRun>& runs);

// {"saving": {"leastAllocatedCost", "mostAllocatedCost", "saving", "savingPercent",
// "mostAllocatedSaves"}} and ComparisonToJson's "policies".
nlohmann::ordered_json SchedulerSavingToJson(const SchedulerSaving& s);
nlohmann::ordered_json SchedulerEvaluationToJson(const std::vector<PolicyRun>& runs);

// The kube-scheduler configuration (kubescheduler.config.k8s.io/v1) whose default profile scores
// nodes as the most-allocated simulation does: NodeResourcesFit's MostAllocated strategy over
// cpu, memory and nvidia.com/gpu, weight 1 each.
std::string MostAllocatedSchedulerConfig();

}  // namespace tidepool::sim
