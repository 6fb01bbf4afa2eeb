#include "sim/summary.h"

#include <fmt/format.h>

#include <cmath>

namespace tidepool::sim {
namespace {

double Round6(double v) { return std::round(v * 1e6) / 1e6; }

std::string Dur(double seconds) { return FormatSeconds(seconds); }

}  // namespace

std::string FormatBoundRatio(const Summary& s) {
  return s.lower_bound_cost > 0 ? fmt::format("{:.2f}x", s.cost / s.lower_bound_cost) : "-";
}

std::string FormatSeconds(double seconds) {
  int64_t s = static_cast<int64_t>(std::llround(seconds));
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02d}s", s / 60, s % 60);
  return fmt::format("{}h{:02d}m{:02d}s", s / 3600, (s % 3600) / 60, s % 60);
}

nlohmann::ordered_json SummaryToJson(const Summary& s) {
  nlohmann::ordered_json j;
  j["cost"] = Round6(s.cost);
  j["lowerBoundCost"] = Round6(s.lower_bound_cost);
  j["costRatio"] = s.lower_bound_cost > 0 ? Round6(s.cost / s.lower_bound_cost) : 0.0;
  nlohmann::ordered_json hours = nlohmann::ordered_json::object();
  for (const auto& [pool, h] : s.node_hours) hours[pool] = Round6(h);
  j["nodeHours"] = hours;
  nlohmann::ordered_json costs = nlohmann::ordered_json::object();
  for (const auto& [pool, c] : s.pool_cost) costs[pool] = Round6(c);
  j["poolCost"] = costs;
  j["gpuHoursPaid"] = Round6(s.gpu_hours_paid);
  j["gpuHoursUsed"] = Round6(s.gpu_hours_used);
  j["waitP50"] = Round6(s.wait_p50);
  j["waitP95"] = Round6(s.wait_p95);
  j["waitP95Gpu"] = Round6(s.wait_p95_gpu);
  nlohmann::ordered_json by_ns = nlohmann::ordered_json::object();
  for (const auto& [ns, w] : s.wait_p95_gpu_by_namespace) by_ns[ns] = Round6(w);
  j["waitP95GpuByNamespace"] = std::move(by_ns);
  j["waitMax"] = Round6(s.wait_max);
  j["jobs"] = s.jobs;
  j["jobsCompleted"] = s.jobs_completed;
  j["jobsUnfinished"] = s.jobs_unfinished;
  j["jobsNeverStarted"] = s.jobs_never_started;
  j["jobsNeverRanInTrace"] = s.jobs_never_ran_in_trace;
  j["lowerBoundJobsExcluded"] = s.lower_bound_jobs_excluded;
  j["evictions"] = s.evictions;
  j["spotEvictions"] = s.spot_evictions;
  j["workLostGpuHours"] = Round6(s.work_lost_gpu_hours);
  j["restarts"] = s.restarts;
  j["drainWaitMax"] = Round6(s.drain_wait_max);
  j["gangJobs"] = s.gang_jobs;
  j["gangJobsStarted"] = s.gang_jobs_started;
  j["waitP50Gang"] = Round6(s.wait_p50_gang);
  j["waitP95Gang"] = Round6(s.wait_p95_gang);
  j["provisioningRequests"] = s.provisioning_requests;
  j["provisioningRequestsFailed"] = s.provisioning_requests_failed;
  j["jobsRejected"] = s.jobs_rejected;
  j["scaleUps"] = s.scale_ups;
  j["scaleDowns"] = s.scale_downs;
  j["steps"] = s.steps;
  j["simulatedHours"] = Round6(s.simulated_hours);
  j["hitHorizon"] = s.hit_horizon;
  return j;
}

std::string SummaryToText(const Summary& s) {
  std::string out;
  auto row = [&](std::string_view k, const std::string& v) {
    out += fmt::format("  {:<28} {}\n", k, v);
  };
  out += "Simulation summary\n";
  row("cost", fmt::format("${:.2f}", s.cost));
  row("lower bound cost",
      fmt::format("${:.2f}{}", s.lower_bound_cost,
                  s.lower_bound_cost > 0
                      ? fmt::format("  (cost is {:.2f}x)", s.cost / s.lower_bound_cost)
                      : std::string()));
  row("GPU hours paid / used", fmt::format("{:.1f} / {:.1f}", s.gpu_hours_paid, s.gpu_hours_used));
  row("wait p50 / p95 / max",
      fmt::format("{} / {} / {}", Dur(s.wait_p50), Dur(s.wait_p95), Dur(s.wait_max)));
  row("jobs completed / unfinished",
      fmt::format("{} / {} (of {}; {} never started)", s.jobs_completed, s.jobs_unfinished, s.jobs,
                  s.jobs_never_started));
  row("evictions (spot)", fmt::format("{} ({})", s.evictions, s.spot_evictions));
  row("work lost / restarts", fmt::format("{:.1f} GPU-h / {}", s.work_lost_gpu_hours, s.restarts));
  row("nodes added / removed", fmt::format("{} / {}", s.scale_ups, s.scale_downs));
  row("simulated time", fmt::format("{:.1f} h{}", s.simulated_hours,
                                    s.hit_horizon ? " (cut off at the horizon)" : ""));
  out += "\n  pool                  node-hours        cost\n";
  for (const auto& [pool, h] : s.node_hours) {
    auto c = s.pool_cost.find(pool);
    out += fmt::format("  {:<20} {:>11.1f} {:>11.2f}\n", pool, h,
                       c == s.pool_cost.end() ? 0.0 : c->second);
  }
  return out;
}

}  // namespace tidepool::sim
