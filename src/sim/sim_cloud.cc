#include "sim/sim_cloud.h"

#include <fmt/format.h>

#include "autoscaler/warm_planner.h"
#include "sim/simulator.h"
#include "sim/units.h"

namespace tidepool::sim {

SimCloud::SimCloud(const SimInput& in, const model::AutoscalerConfig& config, const Clock& clock,
                   EventQueue& queue, WorldChanges& changes, Workload& workload)
    : in_(in),
      config_(config),
      clock_(clock),
      queue_(queue),
      changes_(changes),
      workload_(workload),
      rng_(in.sim.seed) {
  for (const model::Pool& pool : config_.pools) {
    SimPool p;
    p.pool = &pool;
    if (auto it = in_.sim.pools.find(pool.name); it != in_.sim.pools.end()) p.sim = &it->second;
    p.gpus = Allocatable(pool.template_node).gpus();
    p.boot = p.gpus > 0 ? in_.sim.gpu_boot_delay : in_.sim.cpu_boot_delay;
    if (p.sim && p.sim->boot_delay) p.boot = *p.sim->boot_delay;
    p.restart = p.sim && p.sim->restart_delay ? *p.sim->restart_delay : kDefaultRestartDelay;
    p.stopped_price_per_hour = p.sim && p.sim->stopped_price_per_hour
                                   ? *p.sim->stopped_price_per_hour
                                   : autoscaler::kStoppedPriceShare * pool.price_per_hour;
    pool_index_.emplace(pool.name, static_cast<int>(pools_.size()));
    pools_.push_back(std::move(p));
  }
}

void SimCloud::Start() {
  for (size_t i = 0; i < pools_.size(); ++i) {
    SimPool& p = pools_[i];
    p.target = std::max(0, p.pool->min);
    for (int k = 0; k < p.target; ++k) CreateInstance(static_cast<int>(i), /*ready_now=*/true);
    if (p.sim) {
      for (const auto& [a, b] : p.sim->stockouts) {
        queue_.Push(in_.start + b, EventKind::kStockoutEnd, static_cast<int>(i));
      }
    }
  }
}

bool SimCloud::InStockout(const SimPool& p, Time t) const {
  if (p.sim == nullptr) return false;
  for (const auto& [a, b] : p.sim->stockouts)
    if (t >= in_.start + a && t < in_.start + b) return true;
  return false;
}

int SimCloud::CreateInstance(int pool, bool ready_now) {
  const Time now = clock_.Now();
  SimPool& p = pools_[pool];
  SimInstance n;
  n.name = fmt::format("{}-{:05d}", p.pool->name, p.next_id++);
  n.pool = pool;
  n.requested = now;
  int idx = static_cast<int>(instances_.size());
  instances_.push_back(std::move(n));
  p.nodes.push_back(idx);
  int& peak = peak_nodes_[p.pool->name];
  peak = std::max(peak, static_cast<int>(p.nodes.size()));
  changes_.Changed();
  if (ready_now) {
    JoinNode(idx);
  } else {
    std::uniform_int_distribution<int64_t> d(p.boot.lo.count(), p.boot.hi.count());
    queue_.Push(now + Duration(d(rng_)), EventKind::kNodeBoot, idx);
  }
  return idx;
}

void SimCloud::JoinNode(int idx) {
  const Time now = clock_.Now();
  SimInstance& n = instances_[idx];
  if (!n.alive() || n.joined) return;
  const SimPool& p = pools_[n.pool];
  auto node = std::make_shared<model::Node>(p.pool->template_node);
  node->meta.name = n.name;
  node->meta.uid = n.name;
  node->meta.labels[std::string(model::kLabelPool)] = p.pool->name;
  node->meta.labels[std::string(model::kLabelHostname)] = n.name;
  if (!p.pool->instance_type.empty()) {
    node->meta.labels[std::string(model::kLabelInstanceType)] = p.pool->instance_type;
  }
  node->meta.creation_timestamp = now;
  node->provider_id = "sim://" + n.name;
  node->allocatable = Allocatable(*node);
  node->ready = true;
  n.node = std::move(node);
  n.joined = true;
  joined_.emplace(n.name, idx);
  changes_.SetNode(n.node);
  changes_.Changed();
  if (p.sim != nullptr && p.sim->evictions_per_node_hour > 0) {
    std::exponential_distribution<double> d(p.sim->evictions_per_node_hour);
    double hours = d(rng_);
    if (hours < 24.0 * 365 * 10) {
      queue_.Push(now + Duration(static_cast<int64_t>(hours * 3600e3)), EventKind::kSpotNotice,
                  idx);
    }
  }
  changes_.bind_dirty = changes_.step_needed = true;
}

void SimCloud::EndInstance(int idx) {
  SimInstance& n = instances_[idx];
  if (!n.alive()) return;
  workload_.EvictAllOn(idx, /*spot=*/false);
  n.end = clock_.Now();
  SimPool& p = pools_[n.pool];
  std::erase(p.nodes, idx);
  if (n.joined) {
    joined_.erase(n.name);
    changes_.DeleteNode(n.name);
  }
  if (n.node) ended_.push_back(std::move(n.node));
  changes_.Changed();
  changes_.bind_dirty = changes_.step_needed = true;
}

void SimCloud::OnBoot(int instance) { JoinNode(instance); }

void SimCloud::OnSpotNotice(int instance) {
  if (instances_[instance].alive()) {
    queue_.Push(clock_.Now() + in_.sim.eviction_notice, EventKind::kSpotKill, instance);
  }
}

void SimCloud::OnSpotKill(int instance) {
  SimInstance& n = instances_[instance];
  if (!n.alive() || !n.joined) return;  // gone, or stopped since the notice
  workload_.EvictAllOn(instance, /*spot=*/true);
  --pools_[n.pool].target;
  EndInstance(instance);
}

void SimCloud::OnStockoutEnd(int pool) {
  SimPool& p = pools_[pool];
  if (InStockout(p, clock_.Now())) return;
  Grow(pool, p.waiting);
  p.waiting = 0;
  changes_.step_needed = true;
}

SimInstance* SimCloud::Joined(const std::string& name) {
  auto it = joined_.find(name);
  return it == joined_.end() ? nullptr : &instances_[it->second];
}

Result<std::vector<cloud::PoolSize>> SimCloud::Refresh(Time now) {
  std::vector<cloud::PoolSize> sizes;
  sizes.reserve(pools_.size());
  for (const SimPool& p : pools_) {
    bool stockout = InStockout(p, now);
    cloud::PoolSize size;
    size.pool = p.pool->name;
    size.target = p.target;
    size.instances = static_cast<int>(p.nodes.size());
    size.stopped = static_cast<int>(p.stopped.size());
    size.stockout = stockout;
    if (stockout) size.stockout_reason = std::string(kStockoutReason);
    sizes.push_back(std::move(size));
  }
  return sizes;
}

Result<void> SimCloud::IncreaseSize(const std::string& pool, int delta, Time now) {
  auto it = pool_index_.find(pool);
  if (it == pool_index_.end() || delta <= 0) {
    return InvalidArgument("unknown pool or count \"{}\"", pool);
  }
  SimPool& p = pools_[it->second];
  if (p.target + delta > p.pool->max) {
    if (in_.sim.check_invariants && violation_.empty()) {
      violation_ = fmt::format("{}: pool {} asked to grow to {} above its max {}",
                               FormatRfc3339(now), p.pool->name, p.target + delta, p.pool->max);
    }
    return InvalidArgument("pool {} would exceed its max size {}", p.pool->name, p.pool->max);
  }
  p.target += delta;
  scale_ups_ += delta;
  if (InStockout(p, now)) {
    p.waiting += delta;
  } else {
    Grow(it->second, delta);
  }
  return {};
}

Result<void> SimCloud::DecreaseTargetSize(const std::string& pool, int delta, Time) {
  auto it = pool_index_.find(pool);
  if (it == pool_index_.end()) return Fail(Error::Code::kNotFound, "no pool {}", pool);
  SimPool& p = pools_[it->second];
  int left = delta;
  int cancelled = std::min(left, p.waiting);
  p.waiting -= cancelled;
  left -= cancelled;
  for (int k = static_cast<int>(p.nodes.size()) - 1; k >= 0 && left > 0; --k) {
    int idx = p.nodes[k];
    if (instances_[idx].joined) continue;
    EndInstance(idx);
    --left;
    ++cancelled;
  }
  p.target -= cancelled;
  return {};
}

Result<void> SimCloud::DeleteNode(const std::string&, const model::Node& node, Time) {
  auto it = joined_.find(node.name());
  if (it == joined_.end()) return Fail(Error::Code::kNotFound, "node {} not found", node.name());
  int idx = it->second;
  --pools_[instances_[idx].pool].target;
  EndInstance(idx);
  ++scale_downs_;
  return {};
}

}  // namespace tidepool::sim

namespace tidepool::sim {

void SimCloud::Grow(int pool, int count) {
  SimPool& p = pools_[pool];
  const Time now = clock_.Now();
  for (; count > 0 && !p.stopped.empty(); --count) {
    int idx = p.stopped.back();  // the most recently stopped
    p.stopped.pop_back();
    SimInstance& n = instances_[idx];
    n.stopped_for += now - *n.stopped_since;
    n.stopped_since.reset();
    p.nodes.push_back(idx);
    std::uniform_int_distribution<int64_t> d(p.restart.lo.count(), p.restart.hi.count());
    queue_.Push(now + Duration(d(rng_)), EventKind::kNodeBoot, idx);
    changes_.Changed();
  }
  for (; count > 0; --count) CreateInstance(pool, /*ready_now=*/false);
  int& peak = peak_nodes_[p.pool->name];
  peak = std::max(peak, static_cast<int>(p.nodes.size()));
}

Result<void> SimCloud::StopNode(const std::string& pool, const model::Node& node, Time now) {
  auto it = joined_.find(node.name());
  if (it == joined_.end()) return Fail(Error::Code::kNotFound, "node {} not found", node.name());
  const int idx = it->second;
  SimInstance& n = instances_[idx];
  SimPool& p = pools_[n.pool];
  if (!p.pool->scale_down.Deallocates()) {
    return InvalidArgument("pool {}: scaleDown.mode is delete; not stopping node {}", pool,
                           node.name());
  }
  workload_.EvictAllOn(idx, /*spot=*/false);
  std::erase(p.nodes, idx);
  joined_.erase(it);
  changes_.DeleteNode(n.name);
  n.joined = false;
  if (n.node) ended_.push_back(std::move(n.node));
  n.stopped_since = now;
  p.stopped.push_back(idx);
  --p.target;
  ++scale_downs_;
  changes_.Changed();
  changes_.bind_dirty = changes_.step_needed = true;
  return {};
}

Result<void> SimCloud::DeleteStopped(const std::string& pool, int count, Time now) {
  auto it = pool_index_.find(pool);
  if (it == pool_index_.end()) return Fail(Error::Code::kNotFound, "no pool {}", pool);
  SimPool& p = pools_[it->second];
  int n = std::min(count, static_cast<int>(p.stopped.size()));
  for (int i = 0; i < n; ++i) instances_[p.stopped[i]].end = now;
  p.stopped.erase(p.stopped.begin(), p.stopped.begin() + n);
  changes_.Changed();
  return {};
}

}  // namespace tidepool::sim
