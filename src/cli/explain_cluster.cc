#include "cli/explain_cluster.h"

#include <fmt/format.h>

#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "sim/observed_workload.h"
#include "sim/scheduler_eval.h"

namespace tidepool::cli {
namespace {

std::string WorkloadLine(const sim::ObservedWorkload& w) {
  std::string out =
      fmt::format("observed workload: {} pod(s) ({} running, {} pending), the first created {}\n",
                  w.jobs.size(), w.running, w.pending, FormatRfc3339(w.start));
  if (w.skipped.empty()) return out;
  std::map<sim::SkipReason, int> counts;
  for (const sim::SkippedPod& s : w.skipped) ++counts[s.reason];
  out += fmt::format("skipped {} pod(s):\n", w.skipped.size());
  for (auto [reason, n] : counts) out += fmt::format("  {} {}\n", n, sim::SkipReasonText(reason));
  return out;
}

std::string AdviceText(const sim::SchedulerSaving& s, size_t pods) {
  if (s.saves) {
    return fmt::format(
        "a MostAllocated scoring profile would have cost ${:.2f} instead of ${:.2f} on these {} "
        "pod(s) "
        "(-{:.1f}%). To apply it, start kube-scheduler with this configuration "
        "(--config):\n\n{}",
        s.most_allocated_cost, s.least_allocated_cost, pods, s.percent,
        sim::MostAllocatedSchedulerConfig());
  }
  const double change =
      s.least_allocated_cost > 0
          ? 100 * (s.most_allocated_cost - s.least_allocated_cost) / s.least_allocated_cost
          : 0;
  return fmt::format(
      "no saving: a MostAllocated scoring profile would have cost ${:.2f} against ${:.2f} on "
      "these {} pod(s) ({:+.1f}%, a saving under {:.0f}% is none); keep the default scoring\n",
      s.most_allocated_cost, s.least_allocated_cost, pods, change,
      100 * sim::kMinSchedulerSavingShare);
}

nlohmann::ordered_json WorkloadJson(const sim::ObservedWorkload& w) {
  nlohmann::ordered_json j;
  j["pods"] = w.jobs.size();
  j["running"] = w.running;
  j["pending"] = w.pending;
  j["start"] = FormatRfc3339(w.start);
  nlohmann::ordered_json skipped = nlohmann::ordered_json::array();
  for (const sim::SkippedPod& s : w.skipped) {
    skipped.push_back({{"pod", s.pod}, {"reason", sim::SkipReasonKey(s.reason)}});
  }
  j["skipped"] = std::move(skipped);
  return j;
}

}  // namespace

int ExplainCluster(const sim::SimInput& settings, const kube::codec::ClusterState& state, Time now,
                   const std::string& output) {
  auto fail = [](const Error& e) {
    std::fprintf(stderr, "tidepool: explain --cluster: %s\n", e.message().c_str());
    return 2;
  };
  auto workload = sim::ObservedWorkloadOf(state.pods, now);
  if (!workload) return fail(workload.error());
  const sim::ObservedWorkload& w = *workload;
  const size_t pods = w.jobs.size();
  std::vector<sim::PolicyRun> runs;
  if (pods > 0) {
    auto r = sim::RunSchedulerEvaluation(sim::ReplayInput(settings, w));
    if (!r) return fail(r.error());
    runs = std::move(*r);
  }
  const bool saves = pods > 0 && sim::SchedulerSavingOf(runs).saves;
  if (output == "json") {
    nlohmann::ordered_json j = WorkloadJson(w);
    if (pods > 0) {
      nlohmann::ordered_json eval = sim::SchedulerEvaluationToJson(runs);
      j["policies"] = std::move(eval["policies"]);
      j["saving"] = std::move(eval["saving"]);
    } else {
      j["policies"] = nlohmann::ordered_json::array();
      j["saving"] = nullptr;
    }
    j["kubeSchedulerConfiguration"] =
        saves ? nlohmann::ordered_json(sim::MostAllocatedSchedulerConfig()) : nullptr;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << WorkloadLine(w);
  if (pods == 0) {
    std::cout << "no pods to replay: no saving to report\n";
    return 0;
  }
  std::cout << "replayed from an empty cluster on the config's pools, tidepool's policy:\n\n"
            << sim::SchedulerTableToText(runs) << "\n"
            << AdviceText(sim::SchedulerSavingOf(runs), pods);
  return 0;
}

}  // namespace tidepool::cli
