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
  c.scale_up.balance_zones = false;  // --balance-similar-node-groups is off by default
  in.loop_options.scale_up.gang_aware = false;
  // The Cluster Autoscaler's estimator does not go back over the nodes it opened.
  in.loop_options.scale_up.compact_new_nodes = false;
  in.loop_options.evict_training_pods = true;
  return in;
}

namespace {
// Runs `in` as the policy `name` and appends its summary to `runs`.
Result<void> RunPolicy(std::vector<PolicyRun>& runs, std::string name, std::string description,
                       const SimInput& in) {
  auto s = RunSimulation(in, name);
  if (!s) return std::unexpected(s.error().Wrap(fmt::format("policy {}", name)));
  runs.push_back({std::move(name), std::move(description), std::move(*s)});
  return {};
}
}  // namespace

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
  auto run = [&](std::string name, std::string description, const SimInput& in) {
    return RunPolicy(runs, std::move(name), std::move(description), in);
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

namespace {

bool WarmTarget(const model::Pool& p) {
  return p.capacity_type == model::CapacityType::kOnDemand &&
         p.template_node.allocatable.gpus() > 0;
}

}  // namespace

SimInput WarmOffPolicy(const SimInput& base) {
  SimInput in = base;
  for (model::Pool& p : in.config.pools) {
    p.warm = model::WarmConfig{};
    p.scale_down = model::PoolScaleDown{};
  }
  return in;
}

Result<std::vector<PolicyRun>> RunWarmEvaluation(const SimInput& base) {
  std::vector<PolicyRun> runs;
  auto run = [&](std::string name, std::string description, const SimInput& in) {
    return RunPolicy(runs, std::move(name), std::move(description), in);
  };
  SimInput off = WarmOffPolicy(base);
  off.stop_when_jobs_done = true;
  TIDEPOOL_RETURN_IF_ERROR(run("off", "no warm capacity (tidepool's default)", off));
  const model::ResourceId gpu = model::InternResource(model::kNvidiaGpu);

  SimInput spare = off;
  for (model::Pool& p : spare.config.pools)
    if (WarmTarget(p)) p.warm.spare_nodes = std::min(1, p.max);
  TIDEPOOL_RETURN_IF_ERROR(run("spare", "warm.spareNodes 1 on each on-demand GPU pool", spare));

  SimInput headroom = off;
  for (model::Pool& p : headroom.config.pools) {
    if (!WarmTarget(p)) continue;
    p.warm.headroom.Set(gpu, 4);
    p.warm.headroom_set = {gpu};
  }
  TIDEPOOL_RETURN_IF_ERROR(
      run("headroom", "warm.headroom nvidia.com/gpu 4 on each on-demand GPU pool", headroom));

  const Summary o = runs.front().summary;
  auto predictive = [&](double share) {
    SimInput in = off;
    const double days = std::max(1.0, o.simulated_hours / 24.0);
    for (model::Pool& p : in.config.pools) {
      if (!WarmTarget(p)) continue;
      auto cost = o.pool_cost.find(p.name);
      double daily = cost == o.pool_cost.end() ? 0 : cost->second / days;
      if (daily <= 0 || p.price_per_hour <= 0) continue;
      p.warm.predictive.enabled = true;
      p.warm.predictive.horizon = std::chrono::hours(1);
      p.warm.predictive.max_cost_per_day = share * daily;
      p.warm.predictive.wait_value_per_gpu_hour =
          4 * p.price_per_hour / static_cast<double>(p.template_node.allocatable.gpus());
    }
    return in;
  };
  TIDEPOOL_RETURN_IF_ERROR(run("predictive",
                               "warm.predictive on each on-demand GPU pool: horizon 1h, wait "
                               "valued at 4x the GPU price, maxCostPerDay 10% of its daily cost",
                               predictive(0.1)));
  TIDEPOOL_RETURN_IF_ERROR(run("predict-50",
                               "the same with maxCostPerDay 50% of the pool's daily cost (a point "
                               "further along the frontier)",
                               predictive(0.5)));
  auto deallocating = [](SimInput in) {
    for (model::Pool& p : in.config.pools) {
      if (p.template_node.allocatable.gpus() <= 0) continue;
      p.scale_down.mode = model::ScaleDownMode::kDeallocate;
      p.scale_down.max_stopped = p.max;
    }
    return in;
  };
  SimInput stopped = deallocating(off);
  TIDEPOOL_RETURN_IF_ERROR(run("deallocate",
                               "scaleDown.mode deallocate, maxStopped = max, on each GPU pool "
                               "(restart and stopped price: simulation.pools)",
                               stopped));
  SimInput both = deallocating(predictive(0.1));
  TIDEPOOL_RETURN_IF_ERROR(run("dealloc+pred",
                               "deallocate with predictive as above: pre-warms restart stopped "
                               "machines, the profile deletes those not worth their disks",
                               both));
  SimInput stocked = stopped;
  for (model::Pool& p : stocked.config.pools) {
    auto peak = o.peak_nodes.find(p.name);
    if (p.scale_down.Deallocates() && peak != o.peak_nodes.end()) {
      p.warm.stopped_nodes = std::min(p.max, peak->second);
    }
  }
  TIDEPOOL_RETURN_IF_ERROR(run("stocked",
                               "the same with warm.stoppedNodes = the pool's peak nodes in the "
                               "off run: machines created ahead and kept stopped",
                               stocked));
  return runs;
}

namespace {
// The change of `v` against `base` in percent ("+4.3%"), or "-" without a base.
std::string Change(double v, double base) {
  return base > 0 ? fmt::format("{:+.1f}%", 100 * (v - base) / base) : std::string("-");
}
}  // namespace

Result<std::vector<PolicyRun>> RunQueueEvaluation(const SimInput& base) {
  std::vector<PolicyRun> runs;
  SimInput pending = base;
  pending.stop_when_jobs_done = true;
  pending.sim.queue_gangs = false;
  TIDEPOOL_RETURN_IF_ERROR(
      RunPolicy(runs, "pending", "gang jobs' pods pending from their submit", pending));
  SimInput queued = pending;
  queued.sim.queue_gangs = true;
  TIDEPOOL_RETURN_IF_ERROR(RunPolicy(
      runs, "queued",
      "gang jobs held as Kueue holds them, admitted once their ProvisioningRequest is Provisioned",
      queued));
  return runs;
}

std::string QueueEvaluationToText(const std::vector<PolicyRun>& runs) {
  std::string out = "Gang queueing evaluation (same trace, same simulated cloud)\n\n";
  out += fmt::format("  {:<8} {:>12} {:>8} {:>13} {:>13} {:>8} {:>9} {:>12} {:>14} {:>11}\n",
                     "gangs", "cost", "vs pend", "gang wait p50", "gang wait p95", "vs pend",
                     "wait p95", "gangs run", "requests/fail", "nodes +/-");
  if (runs.empty()) return out;
  const Summary& base = runs.front().summary;
  for (const PolicyRun& r : runs) {
    const Summary& s = r.summary;
    out += fmt::format(
        "  {:<8} {:>12} {:>8} {:>13} {:>13} {:>8} {:>9} {:>12} {:>14} {:>11}\n", r.name,
        fmt::format("${:.2f}", s.cost), Change(s.cost, base.cost), FormatSeconds(s.wait_p50_gang),
        FormatSeconds(s.wait_p95_gang), Change(s.wait_p95_gang, base.wait_p95_gang),
        FormatSeconds(s.wait_p95), fmt::format("{}/{}", s.gang_jobs_started, s.gang_jobs),
        fmt::format("{}/{}", s.provisioning_requests, s.provisioning_requests_failed),
        fmt::format("{}/{}", s.scale_ups, s.scale_downs));
  }
  out += "\n";
  for (const PolicyRun& r : runs) out += fmt::format("  {:<8} {}\n", r.name, r.description);
  return out;
}

std::string WarmEvaluationToText(const std::vector<PolicyRun>& runs) {
  std::string out = "Warm capacity evaluation (same trace, same simulated cloud)\n\n";
  out += fmt::format("  {:<12} {:>11} {:>8} {:>12} {:>8} {:>9} {:>9} {:>11}\n", "policy", "cost",
                     "vs off", "GPU wait p95", "vs off", "wait p95", "GPU jobs", "nodes +/-");
  if (runs.empty()) return out;
  const Summary& off = runs.front().summary;
  for (const PolicyRun& r : runs) {
    const Summary& s = r.summary;
    out += fmt::format("  {:<12} {:>11} {:>8} {:>12} {:>8} {:>9} {:>9} {:>11}\n", r.name,
                       fmt::format("${:.2f}", s.cost), Change(s.cost, off.cost),
                       FormatSeconds(s.wait_p95_gpu), Change(s.wait_p95_gpu, off.wait_p95_gpu),
                       FormatSeconds(s.wait_p95), s.gpu_jobs,
                       fmt::format("{}/{}", s.scale_ups, s.scale_downs));
  }
  // Per job namespace, when there are several (e.g. a periodic team and ad-hoc jobs).
  if (off.wait_p95_gpu_by_namespace.size() > 1 && off.wait_p95_gpu_by_namespace.size() <= 8) {
    out += "\n  GPU wait p95 by namespace:\n";
    for (const auto& [ns, base] : off.wait_p95_gpu_by_namespace) {
      out += fmt::format("    {:<18}", ns);
      for (const PolicyRun& r : runs) {
        auto it = r.summary.wait_p95_gpu_by_namespace.find(ns);
        double w = it == r.summary.wait_p95_gpu_by_namespace.end() ? 0 : it->second;
        out += fmt::format(" {} {} ({})", r.name, FormatSeconds(w), Change(w, base));
      }
      out += "\n";
    }
  }
  out += "\n";
  for (const PolicyRun& r : runs) out += fmt::format("  {:<12} {}\n", r.name, r.description);
  return out;
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
  out += fmt::format("  {:<10} {:>12} {:>7} {:>9} {:>9} {:>10} {:>16} {:>11} {:>9} {:>10} {:>11}\n",
                     "policy", "cost", "x bound", "wait p50", "wait p95", "wait max",
                     "GPU-h paid/used", "jobs done", "evictions", "GPU-h lost", "nodes +/-");
  for (const PolicyRun& r : runs) {
    const Summary& s = r.summary;
    out +=
        fmt::format("  {:<10} {:>12} {:>7} {:>9} {:>9} {:>10} {:>16} {:>11} {:>9} {:>10} {:>11}\n",
                    r.name, fmt::format("${:.2f}", s.cost), FormatBoundRatio(s),
                    FormatSeconds(s.wait_p50), FormatSeconds(s.wait_p95), FormatSeconds(s.wait_max),
                    fmt::format("{:.0f}/{:.0f}", s.gpu_hours_paid, s.gpu_hours_used),
                    fmt::format("{}/{}", s.jobs_completed, s.jobs), s.evictions,
                    fmt::format("{:.1f}", s.work_lost_gpu_hours),
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
