#include "sim/ledger.h"

#include <algorithm>
#include <cmath>

#include "sim/units.h"

namespace tidepool::sim {
namespace {

// The q-quantile (nearest rank) of sorted values; 0 when there are none.
double Quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0.0;
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

double P95(std::vector<double>& v) {
  std::sort(v.begin(), v.end());
  return Quantile(v, 0.95);
}

}  // namespace

void Ledger::RecordTimeline(Time now, uint64_t version, bool last) {
  if (!in_.record_timeline) return;
  Timeline& tl = timeline_;
  const std::vector<SimPool>& pools = cloud_.pools();
  if (tl.points.empty()) {
    for (const SimPool& p : pools) tl.pools.push_back(p.pool->name);
  } else {
    // Billing since the last point, at the node counts of the last point.
    double last_rate = 0;
    const TimelinePoint& prev = tl.points.back();
    for (size_t i = 0; i < pools.size(); ++i) {
      last_rate += prev.nodes[i] * pools[i].pool->price_per_hour;
    }
    timeline_cost_ += last_rate * Hours(now - timeline_at_);
  }
  timeline_at_ = now;
  if (timeline_version_ == version && !tl.points.empty() && !last) return;
  timeline_version_ = version;
  TimelinePoint pt;
  pt.hours = Hours(now - in_.start);
  for (const SimPool& p : pools) pt.nodes.push_back(static_cast<int>(p.nodes.size()));
  pt.pending = workload_.pending();
  pt.cost = timeline_cost_;
  if (!last && !tl.points.empty() && tl.points.back().nodes == pt.nodes &&
      tl.points.back().pending == pt.pending) {
    return;
  }
  if (!tl.points.empty() && tl.points.back().hours == pt.hours) {
    tl.points.back() = std::move(pt);  // several changes in one instant: keep the last
  } else {
    tl.points.push_back(std::move(pt));
  }
}

double Ledger::CostAt(Time t) const {
  double cost = 0;
  for (const SimInstance& n : cloud_.instances()) {
    const SimPool& p = cloud_.pools()[n.pool];
    cost +=
        n.BilledHours(t) * p.pool->price_per_hour + n.StoppedHours(t) * p.stopped_price_per_hour;
  }
  return cost;
}

Summary Ledger::Summarize(Time now, Summary s) {
  for (const SimInstance& n : cloud_.instances()) {
    const SimPool& p = cloud_.pools()[n.pool];
    double h = n.BilledHours(now);
    s.node_hours[p.pool->name] += h;
    const double c = h * p.pool->price_per_hour + n.StoppedHours(now) * p.stopped_price_per_hour;
    s.pool_cost[p.pool->name] += c;
    s.cost += c;
    s.gpu_hours_paid += h * static_cast<double>(p.gpus);
  }
  for (const SimPool& p : cloud_.pools()) {
    s.node_hours.try_emplace(p.pool->name, 0.0);
    s.pool_cost.try_emplace(p.pool->name, 0.0);
  }
  s.gpu_hours_used = workload_.gpu_ms_used() / 3600e3;
  SummarizeWaits(s);
  s.lower_bound_cost = LowerBoundCost(config_, in_.jobs, &s.lower_bound_jobs_excluded);
  s.peak_nodes = cloud_.peak_nodes();
  for (const SimPool& p : cloud_.pools()) s.peak_nodes.try_emplace(p.pool->name, 0);
  s.simulated_hours = Hours(now - in_.start);
  s.evictions = workload_.evictions();
  s.spot_evictions = workload_.spot_evictions();
  s.work_lost_gpu_hours = workload_.gpu_ms_lost() / 3600e3;
  s.restarts = workload_.restarts();
  s.losses = workload_.losses();
  s.drain_wait_max = std::chrono::duration<double>(workload_.drain_wait_max()).count();
  s.scale_ups = cloud_.scale_ups();
  s.scale_downs = cloud_.scale_downs();
  s.timeline = std::move(timeline_);
  return s;
}

void Ledger::SummarizeWaits(Summary& s) const {
  std::vector<double> waits;
  std::vector<double> gpu_waits;
  std::vector<double> gang_waits;
  std::map<std::string, std::vector<double>> gpu_waits_by_namespace;
  for (const SimJob& job : workload_.jobs()) {
    const bool gpu = job.spec->requests.gpus() > 0;
    if (gpu) ++s.gpu_jobs;
    if (gpu && job.all_running_at) {
      double w = std::chrono::duration<double>(*job.all_running_at - job.submit).count();
      gpu_waits.push_back(w);
      gpu_waits_by_namespace[job.spec->namespace_].push_back(w);
    }
    ++s.jobs;
    if (job.completed_at) {
      ++s.jobs_completed;
    } else {
      ++s.jobs_unfinished;
    }
    if (job.spec->never_ran) ++s.jobs_never_ran_in_trace;
    const bool gang = job.spec->MultiPodGang();
    if (gang) ++s.gang_jobs;
    if (job.all_running_at) {
      waits.push_back(std::chrono::duration<double>(*job.all_running_at - job.submit).count());
      if (gang) gang_waits.push_back(waits.back());
    } else {
      ++s.jobs_never_started;
    }
  }
  std::sort(waits.begin(), waits.end());
  s.wait_p50 = Quantile(waits, 0.5);
  s.wait_p95 = Quantile(waits, 0.95);
  s.wait_p95_gpu = P95(gpu_waits);
  std::sort(gang_waits.begin(), gang_waits.end());
  s.wait_p50_gang = Quantile(gang_waits, 0.5);
  s.wait_p95_gang = Quantile(gang_waits, 0.95);
  s.gang_jobs_started = static_cast<int64_t>(gang_waits.size());
  for (auto& [ns, w] : gpu_waits_by_namespace) s.wait_p95_gpu_by_namespace[ns] = P95(w);
  s.wait_max = waits.empty() ? 0 : waits.back();
  s.waits = std::move(waits);
}

}  // namespace tidepool::sim
