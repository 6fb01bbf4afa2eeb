#include "sim/compare.h"

#include <fmt/format.h>

#include <algorithm>

#include "sim/summary.h"

namespace tidepool::sim {

SimInput TidepoolPolicy(const SimInput& base) { return base; }

SimInput CaLikePolicy(const SimInput& base) {
  SimInput in = base;
  model::AutoscalerConfig& c = in.config;
  c.scan_interval = std::chrono::seconds(10);
  c.scale_up.expanders = {"least-waste"};
  c.scale_up.provision_timeout = std::chrono::minutes(15);
  for (model::Pool& p : c.pools) p.provision_timeout.reset();
  c.scale_down.enabled = true;
  c.scale_down.unneeded_time = std::chrono::minutes(10);
  c.scale_down.delay_after_add = std::chrono::minutes(10);
  c.scale_down.utilization_threshold = 0.5;
  c.scale_down.gpu_utilization_threshold = 0.5;
  in.loop_options.scale_up.gang_aware = false;
  in.loop_options.evict_training_pods = true;
  return in;
}

SimInput StaticPolicy(const SimInput& base, const std::map<std::string, int>& peak) {
  SimInput in = base;
  for (model::Pool& p : in.config.pools) {
    auto it = peak.find(p.name);
    int n = it == peak.end() ? 0 : it->second;
    p.min = n;
    p.max = n;
  }
  in.config.scale_down.enabled = false;
  return in;
}

Result<std::vector<PolicyRun>> RunComparison(const SimInput& base) {
  std::vector<PolicyRun> runs;
  auto run = [&](std::string name, std::string description, const SimInput& in) -> Result<void> {
    auto s = RunSimulation(in);
    if (!s) return std::unexpected(s.error().Wrap(fmt::format("policy {}", name)));
    runs.push_back({std::move(name), std::move(description), std::move(*s)});
    return {};
  };
  TIDEPOOL_RETURN_IF_ERROR(
      run("tidepool", "tidepool's default policy (the config as written)", TidepoolPolicy(base)));
  std::map<std::string, int> peak = runs.front().summary.peak_nodes;
  TIDEPOOL_RETURN_IF_ERROR(run("ca-like",
                               "Cluster Autoscaler defaults: least-waste, no gangs, Job pods "
                               "evictable, 15m provision timeout",
                               CaLikePolicy(base)));
  std::string sizes;
  for (const model::Pool& p : base.config.pools) {
    int n = peak.contains(p.name) ? peak.at(p.name) : 0;
    if (n > 0) sizes += fmt::format("{}{} {}", sizes.empty() ? "" : ", ", p.name, n);
  }
  TIDEPOOL_RETURN_IF_ERROR(
      run("static",
          fmt::format("fixed cluster sized for the peak ({})", sizes.empty() ? "no nodes" : sizes),
          StaticPolicy(base, peak)));
  return runs;
}

nlohmann::ordered_json ComparisonToJson(const std::vector<PolicyRun>& runs) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const PolicyRun& r : runs) {
    nlohmann::ordered_json j;
    j["policy"] = r.name;
    j["description"] = r.description;
    nlohmann::ordered_json summary = SummaryToJson(r.summary);
    for (auto& [key, value] : summary.items()) j[key] = value;
    list.push_back(std::move(j));
  }
  nlohmann::ordered_json out;
  out["policies"] = std::move(list);
  return out;
}

std::string ComparisonToText(const std::vector<PolicyRun>& runs) {
  std::string out = "Policy comparison (same trace, same simulated cloud)\n\n";
  out += fmt::format("  {:<10} {:>12} {:>7} {:>9} {:>9} {:>10} {:>16} {:>11} {:>9} {:>11}\n",
                     "policy", "cost", "x bound", "wait p50", "wait p95", "wait max",
                     "GPU-h paid/used", "jobs done", "evictions", "nodes +/-");
  for (const PolicyRun& r : runs) {
    const Summary& s = r.summary;
    out += fmt::format(
        "  {:<10} {:>12} {:>7} {:>9} {:>9} {:>10} {:>16} {:>11} {:>9} {:>11}\n", r.name,
        fmt::format("${:.2f}", s.cost),
        s.lower_bound_cost > 0 ? fmt::format("{:.2f}x", s.cost / s.lower_bound_cost) : "-",
        FormatSeconds(s.wait_p50), FormatSeconds(s.wait_p95), FormatSeconds(s.wait_max),
        fmt::format("{:.0f}/{:.0f}", s.gpu_hours_paid, s.gpu_hours_used),
        fmt::format("{}/{}", s.jobs_completed, s.jobs), s.evictions,
        fmt::format("{}/{}", s.scale_ups, s.scale_downs));
  }
  if (!runs.empty()) {
    out += fmt::format("\n  lower bound (clairvoyant, perfectly packed, no boot delay): ${:.2f}\n",
                       runs.front().summary.lower_bound_cost);
  }
  for (const PolicyRun& r : runs) out += fmt::format("  {:<10} {}\n", r.name, r.description);
  return out;
}

}  // namespace tidepool::sim
