#include "sim/observed_workload.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <optional>

#include "planner/disruption.h"

namespace tidepool::sim {
namespace {

constexpr std::string_view kSystemNamespace = "kube-system";

std::optional<SkipReason> SkipOf(const model::Pod& pod) {
  if (pod.IsTerminal()) return SkipReason::kFinished;
  if (pod.IsDaemonSetPod() || pod.IsMirrorPod()) return SkipReason::kDaemonSetOrStatic;
  if (pod.meta.namespace_ == kSystemNamespace && pod.node_name.empty()) {
    return SkipReason::kUnboundSystem;
  }
  const model::Resources& r = pod.requests;
  if (r.cpu_milli() == 0 && r.memory() == 0 && r.gpus() == 0) return SkipReason::kNoRequests;
  if (!pod.resource_claims().empty()) return SkipReason::kResourceClaims;
  return std::nullopt;
}

bool IsRunning(const model::Pod& pod) {
  return pod.phase == model::PodPhase::kRunning || (!pod.node_name.empty() && pod.start_time);
}

}  // namespace

std::string_view SkipReasonKey(SkipReason r) {
  switch (r) {
    case SkipReason::kFinished:
      return "finished";
    case SkipReason::kDaemonSetOrStatic:
      return "daemonSetOrStatic";
    case SkipReason::kUnboundSystem:
      return "unboundSystem";
    case SkipReason::kNoRequests:
      return "noRequests";
    case SkipReason::kResourceClaims:
      return "resourceClaims";
    case SkipReason::kNoRuntimeKnown:
      return "noRuntimeKnown";
  }
  return "";
}

std::string_view SkipReasonText(SkipReason r) {
  switch (r) {
    case SkipReason::kFinished:
      return "finished (Succeeded or Failed)";
    case SkipReason::kDaemonSetOrStatic:
      return "DaemonSet or static pod";
    case SkipReason::kUnboundSystem:
      return "kube-system pod bound to no node";
    case SkipReason::kNoRequests:
      return "no cpu, memory or GPU requests";
    case SkipReason::kResourceClaims:
      return "ResourceClaims (the replay has no devices)";
    case SkipReason::kNoRuntimeKnown:
      return "runtime unknown (pending without tidepool.dev/expected-runtime, or just started)";
  }
  return "";
}

Result<ObservedWorkload> ObservedWorkloadOf(const std::vector<model::Pod>& pods, Time now) {
  ObservedWorkload w;
  std::vector<Time> arrivals;
  for (const model::Pod& pod : pods) {
    if (std::optional<SkipReason> skip = SkipOf(pod)) {
      w.skipped.push_back({pod.Key(), *skip});
      continue;
    }
    const bool running = IsRunning(pod);
    if (running && !pod.start_time) {
      return Fail(Error::Code::kInvalidArgument,
                  "pod {}: status.startTime: missing on a running pod; expected the time it "
                  "started, from which its runtime is counted",
                  pod.Key());
    }
    const Duration elapsed =
        running ? std::max(Duration::zero(), now - *pod.start_time) : Duration::zero();
    auto left = planner::ExpectedRemaining(pod, elapsed, /*hints=*/nullptr);
    if (!left) return std::unexpected(left.error().Wrap(fmt::format("pod {}", pod.Key())));
    const Duration runtime = elapsed + left->remaining;
    if (runtime <= Duration::zero()) {
      w.skipped.push_back({pod.Key(), SkipReason::kNoRuntimeKnown});
      continue;
    }
    Time arrival = now;
    if (running) arrival = std::min(now, pod.meta.creation_timestamp.value_or(*pod.start_time));
    JobSpec job;
    job.id = pod.meta.name;
    job.namespace_ = pod.meta.namespace_;
    job.duration = runtime;
    job.requests = pod.requests;
    job.priority = pod.PriorityOrZero();
    job.observed = std::make_shared<const model::Pod>(pod);
    w.jobs.push_back(std::move(job));
    arrivals.push_back(arrival);
    ++(running ? w.running : w.pending);
  }
  w.start = arrivals.empty() ? now : *std::min_element(arrivals.begin(), arrivals.end());
  for (size_t i = 0; i < w.jobs.size(); ++i) w.jobs[i].submit = arrivals[i] - w.start;
  std::stable_sort(w.jobs.begin(), w.jobs.end(),
                   [](const JobSpec& a, const JobSpec& b) { return a.submit < b.submit; });
  return w;
}

SimInput ReplayInput(const SimInput& base, ObservedWorkload w) {
  SimInput in = base;
  in.start = w.start;
  Duration longest{};
  for (const JobSpec& j : w.jobs) longest = std::max(longest, j.duration);
  in.horizon_after_last_submit = longest + std::chrono::hours(24);
  in.stop_when_jobs_done = true;
  in.jobs = std::move(w.jobs);
  return in;
}

}  // namespace tidepool::sim
