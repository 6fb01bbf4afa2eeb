#include "autoscaler/pool_tracker.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "autoscaler/backoff.h"
#include "base/check.h"
#include "sched/cluster_model.h"

namespace tidepool::autoscaler {

PoolTracker::PoolTracker(const model::AutoscalerConfig& config, const LoopOptions& options)
    : config_(config), options_(options) {
  for (const model::Pool& p : config_.pools) pools_[p.name];
}

std::vector<PoolTracker::Arrival> PoolTracker::Observe(
    StepContext& ctx, const std::function<bool(std::string_view)>& gone) {
  Remember(ctx);
  for (auto& [name, ps] : pools_) {
    ps.registered_before = ps.registered;
    ps.registered = ps.ready = ps.starting = 0;
  }
  Classify(ctx, gone);

  std::vector<Arrival> arrivals;
  for (size_t i = 0; i < config_.pools.size(); ++i) {
    const model::Pool& pool = config_.pools[i];
    PoolState& ps = pools_[pool.name];
    // A node of the pool joined: the provider delivers again.
    if (ps.registered > ps.registered_before) {
      ps.backoff_level = 0;
      if (!ps.requests.empty() && ps.requests.front().requested_at <= ctx.now) {
        const ScaleUpRequest& r = ps.requests.front();
        arrivals.push_back({pool.name, ctx.now - r.requested_at, r.restarts > 0});
      }
    }
    ReadProvider(pool, ps, Reported(ctx.obs, i, pool.name), ctx.now);
  }
  return arrivals;
}

const PoolObservation* PoolTracker::Reported(const Observation& obs, size_t i,
                                             std::string_view pool) {
  // Drivers report the pools in the config's order; look further only when one does not.
  if (i < obs.pools.size() && obs.pools[i].pool == pool) return &obs.pools[i];
  for (const PoolObservation& p : obs.pools)
    if (p.pool == pool) return &p;
  return nullptr;
}

std::optional<std::pair<uint64_t, uint64_t>> PoolTracker::NamesOf(const StepContext& ctx) {
  if (!ctx.nodes_are_model) return std::nullopt;
  return std::pair(ctx.obs.model->id(), ctx.obs.model->NamesVersion());
}

void PoolTracker::Remember(StepContext& ctx) {
  if (NamesUnchanged(ctx)) return;
  // Both maps are in name order, each name once: one walk finds where each node is or goes, with
  // one comparison per step when they hold the same names (which share long prefixes).
  auto it = nodes_.begin();
  for (const auto& [name, node] : ctx.nodes) {
    if (!SeekName(it, nodes_.end(), name)) {
      it = nodes_.emplace_hint(it, std::string(name), NodeMemory{});
      it->second.first_seen = ctx.now;
      ++node_changes_;
    }
    ++it;  // the next name comes after this one
  }
}

namespace {

using SlicesOf = std::set<std::pair<std::string_view, std::string_view>>;  // (node, driver)

// The node-local ResourceSlices in `dra`.
SlicesOf PublishedSlices(const model::DraObjects* dra) {
  SlicesOf out;
  if (dra == nullptr) return out;
  for (const model::ResourceSlice& s : dra->slices) {
    if (!s.node_name.empty()) out.emplace(s.node_name, s.driver);
  }
  return out;
}

// Whether `node` of `pool` publishes a ResourceSlice for every driver of the pool's
// template.devices (true without them): until it does, its devices are not usable and it counts
// as starting, as a GPU node without allocatable GPUs does. `published` is computed when first
// needed.
bool DevicesPublished(const StepContext& ctx, std::optional<SlicesOf>& published,
                      const model::Pool& pool, const model::Node& node) {
  if (pool.device_slices.empty()) return true;
  if (!published) published = PublishedSlices(ctx.obs.dra);
  return std::all_of(pool.device_slices.begin(), pool.device_slices.end(),
                     [&](const model::ResourceSlice& s) {
                       return published->contains({node.name(), s.driver});
                     });
}

// What a node of `pool` counts as now, counted into its pool's state `ps`; `timeout`: the pool's
// provision timeout.
NodeClass ClassOf(StepContext& ctx, std::optional<SlicesOf>& published, const model::Pool& pool,
                  const model::Node& node, NodeMemory& mem, PoolState& ps, Duration timeout) {
  ++ps.registered;
  bool usable = node.ready && !HasStartupTaint(node) &&
                !(pool.template_node.allocatable.gpus() > 0 && node.allocatable.gpus() == 0) &&
                DevicesPublished(ctx, published, pool, node);
  if (usable) {
    ++ps.ready;
    mem.ever_usable = true;
    return NodeClass::kReady;
  }
  Time created = node.meta.creation_timestamp.value_or(mem.first_seen);
  Time deadline = created + timeout;
  if (ctx.now >= deadline) return NodeClass::kUnusable;
  ++ps.starting;
  if (!ctx.next_starting_deadline || deadline < *ctx.next_starting_deadline) {
    ctx.next_starting_deadline = deadline;
  }
  return NodeClass::kStarting;
}

}  // namespace

void PoolTracker::Classify(StepContext& ctx, const std::function<bool(std::string_view)>& gone) {
  std::optional<SlicesOf> published;
  // pool_of, ctx.nodes and nodes_ (after Remember) are in name order, and each holds the names of
  // the one before it: walk them together instead of looking each name up. Equal sizes mean equal
  // names, and the three then step together without comparing names (which share long prefixes).
  const bool lockstep = ctx.pool_of.size() == ctx.nodes.size() && ctx.nodes.size() == nodes_.size();
  auto node_it = ctx.nodes.begin();
  auto mem_it = nodes_.begin();
  // Nodes of a pool come in runs (their names start with it): its state is looked up once a run.
  const model::Pool* run_pool = nullptr;
  PoolState* run_state = nullptr;
  ctx.node_class.Reserve(ctx.pool_of.size());
  for (const auto& [name, pool] : ctx.pool_of) {
    if (!lockstep) {
      while (node_it != ctx.nodes.end() && node_it->first < name) ++node_it;
      while (mem_it != nodes_.end() && mem_it->first < name) ++mem_it;
      TIDEPOOL_CHECK(node_it != ctx.nodes.end() && node_it->first == name);
      TIDEPOOL_CHECK(mem_it != nodes_.end() && mem_it->first == name);
    }
    NodeMemory& mem = mem_it->second;
    NodeClass cls = NodeClass::kGone;
    const bool was_usable = mem.ever_usable;
    if (pool != run_pool) {
      run_pool = pool;
      run_state = &pools_[pool->name];
    }
    if (!gone(name))
      cls = ClassOf(ctx, published, *pool, *node_it->second, mem, *run_state,
                    ProvisionTimeout(*pool));
    ctx.node_class.Append(name, cls);  // pool_of's order
    if (mem.ever_usable != was_usable) ++node_changes_;
    if (lockstep) {
      ++node_it;
      ++mem_it;
    }
  }
}

void PoolTracker::ReadProvider(const model::Pool& pool, PoolState& ps,
                               const PoolObservation* reported, Time now) {
  if (reported != nullptr) {
    ps.observed = true;
    ps.observed_target = reported->target;
    ps.provider_registered = reported->registered;
    ps.stockout = reported->stockout;
    ps.stockout_reason = reported->stockout_reason;
  } else {
    ps.observed = false;
    ps.observed_target = ps.registered;
    ps.provider_registered = ps.registered;
    ps.stockout = false;
    ps.stockout_reason.clear();
  }
  ReadStopped(ps, reported, now);
  if (ps.expected_target) {
    bool shows = ps.observed && ps.observed_target == *ps.expected_target;
    bool lapsed = ps.unreported == 0 && now - ps.expected_touched >= options_.observe_grace;
    bool abandoned = now - ps.expected_touched >= ProvisionTimeout(pool);
    if (shows || lapsed || abandoned) {
      ps.expected_target.reset();
      ps.unreported = 0;
    }
  }
  SyncRequests(ps, now);
}

void PoolTracker::SyncRequests(PoolState& ps, Time now) {
  ps.not_registered = std::max(0, ps.target() - ps.registered);
  int total = 0;
  for (const ScaleUpRequest& r : ps.requests) total += r.remaining;
  // Arrivals (or cancellations elsewhere) fill the oldest requests first.
  for (int gone = total - ps.not_registered; gone > 0 && !ps.requests.empty();) {
    int take = std::min(gone, ps.requests.front().remaining);
    ps.requests.front().remaining -= take;
    ps.requests.front().restarts = std::max(0, ps.requests.front().restarts - take);
    gone -= take;
    if (ps.requests.front().remaining == 0) ps.requests.pop_front();
  }
  // Nodes the loop did not ask for in this life (a restart, someone else's increase): count
  // them as requested now, the conservative choice for the timeout.
  if (total < ps.not_registered) ps.requests.push_back({ps.not_registered - total, now});
}

void PoolTracker::DropNewestRequests(PoolState& ps, int count) {
  for (int left = count; left > 0 && !ps.requests.empty();) {
    ScaleUpRequest& r = ps.requests.back();
    int take = std::min(left, r.remaining);
    r.remaining -= take;
    r.restarts = std::min(r.restarts, r.remaining);
    left -= take;
    if (ps.requests.back().remaining == 0) ps.requests.pop_back();
  }
}

bool PoolTracker::HandleFailures(StepContext& ctx) {
  bool replan = false;
  for (const model::Pool& pool : config_.pools) {
    PoolState& ps = pools_[pool.name];
    if (ps.stockout && !InBackoff(ps, ctx.now)) {
      HandleStockout(ctx, pool, ps, replan);
    } else if (HandleTimeout(ctx, pool, ps)) {
      replan = true;
    }
  }
  if (HandleBrokenNodes(ctx)) replan = true;
  return replan;
}

void PoolTracker::HandleStockout(StepContext& ctx, const model::Pool& pool, PoolState& ps,
                                 bool& replan) {
  const Time now = ctx.now;
  Backoff(ps,
          ps.stockout_reason.empty()
              ? std::string("the provider reports no capacity")
              : fmt::format("the provider reports no capacity: {}", ps.stockout_reason),
          now);
  // A provider that removed the failed machines itself shows a target below the one the loop
  // expects: those requests are gone already. Cancelling them again would take machines that
  // are still coming (the good half of a partly failed scale-up).
  if (ps.observed && ps.expected_target && ps.unreported == 0 &&
      ps.observed_target < *ps.expected_target) {
    DropNewestRequests(ps, *ps.expected_target - ps.observed_target);
    ps.expected_target.reset();
    SyncRequests(ps, now);
    replan = true;
  }
  int cancel = ps.target() - std::max(ps.registered, ps.provider_registered);
  if (cancel > 0) {
    CancelNewest(
        ctx, pool.name, ps, cancel,
        fmt::format("cancel {} requested node(s): the provider reports no capacity", cancel));
    replan = true;
  }
}

bool PoolTracker::HandleTimeout(StepContext& ctx, const model::Pool& pool, PoolState& ps) {
  const Duration timeout = ProvisionTimeout(pool);
  if (ps.requests.empty() || ps.not_registered <= 0 ||
      ctx.now < ps.requests.front().requested_at + timeout) {
    return false;
  }
  int cancel = ps.not_registered;
  std::string why =
      fmt::format("{} node(s) requested at {} did not register within {}", cancel,
                  FormatRfc3339(ps.requests.front().requested_at), FormatDuration(timeout));
  Backoff(ps, why, ctx.now);
  ctx.actions.push_back(DecreaseTarget{pool.name, cancel, fmt::format("cancel: {}", why)});
  ExpectTargetChange(ps, -cancel, ctx.now);
  ps.requests.clear();
  SyncRequests(ps, ctx.now);
  return true;
}

// A node the loop saw being provisioned that never became usable: its pool does not deliver.
// (A node that was already old when first seen, or was usable before, blames no pool.)
bool PoolTracker::HandleBrokenNodes(StepContext& ctx) {
  bool replan = false;
  for (const auto& [name, cls] : ctx.node_class) {
    if (cls != NodeClass::kUnusable) continue;
    NodeMemory& mem = nodes_.find(name)->second;
    if (mem.ever_usable || mem.broken_reported) continue;
    mem.broken_reported = true;
    ++node_changes_;
    const model::Node& node = *ctx.nodes.at(name);
    const model::Pool& pool = *ctx.pool_of.at(name);
    Duration timeout = ProvisionTimeout(pool);
    if (node.meta.creation_timestamp && *node.meta.creation_timestamp + timeout <= mem.first_seen) {
      continue;
    }
    Backoff(pools_[pool.name],
            fmt::format("node {} not usable (Ready with its GPUs) within {} of its creation", name,
                        FormatDuration(timeout)),
            ctx.now);
    replan = true;
  }
  return replan;
}

void PoolTracker::Backoff(PoolState& ps, std::string reason, Time now, bool refused) {
  if (InBackoff(ps, now)) return;  // one failure, one backoff
  ps.backoff_until = now + DoublingDelay(config_.scale_up.backoff_initial,
                                         config_.scale_up.backoff_max, ps.backoff_level);
  ps.backoff_cause = PoolFailure{now, std::move(reason), refused};
  ++ps.backoff_level;
}

void PoolTracker::CancelNewest(StepContext& ctx, const std::string& pool, PoolState& ps, int count,
                               std::string reason) {
  ctx.actions.push_back(DecreaseTarget{pool, count, std::move(reason)});
  ExpectTargetChange(ps, -count, ctx.now);
  // The cancelled nodes are the newest asked for; instances the provider has keep their request
  // time (and their timeout).
  DropNewestRequests(ps, count);
  SyncRequests(ps, ctx.now);
}

void PoolTracker::ExpectTargetChange(PoolState& ps, int delta, Time now) {
  ps.expected_target = std::max(0, ps.target() + delta);
  ++ps.unreported;
  ps.expected_touched = now;
}

void PoolTracker::RecordIncrease(const std::string& pool, int count, Time now) {
  PoolState& ps = pools_[pool];
  const int restarts = std::min(count, ps.stopped());  // a deallocate pool starts those first
  NoteIncrease(ps, count, now);
  ExpectTargetChange(ps, count, now);
  ps.requests.push_back({count, now, restarts});
  ps.not_registered += count;
}

void PoolTracker::RecordDeletion(const std::string& pool, Time now) {
  auto ps = pools_.find(pool);
  if (ps == pools_.end()) return;
  ExpectTargetChange(ps->second, -1, now);
  --ps->second.registered;
  SyncRequests(ps->second, now);
}

std::optional<Time> PoolTracker::OnIncreaseResult(const std::string& pool, int count,
                                                  const Result<void>& result, Time now) {
  auto it = pools_.find(pool);
  if (it == pools_.end()) return std::nullopt;
  PoolState& ps = it->second;
  ps.unreported = std::max(0, ps.unreported - 1);
  ps.expected_touched = now;
  if (result) return std::nullopt;
  if (ps.expected_target) *ps.expected_target = std::max(0, *ps.expected_target - count);
  // A conflict: the provider's state changed under the request (another writer, machines the
  // provider adopted), so what the loop expected is void; the next Refresh is the truth.
  if (result.error().code() == Error::Code::kConflict) ps.expected_target.reset();
  DropNewestRequests(ps, count);  // these nodes will not come
  ps.not_registered = std::max(0, ps.target() - ps.registered);
  // Throttled (a 429 left after the client's own Retry-After retries) says the API is busy, not
  // that the pool cannot grow (provider.h: transient); a conflict, that the provider's state
  // changed under the request, which was not made. Neither is the pool's fault: no backoff, the
  // same pool a little later, on a fresh Refresh.
  if (result.error().code() == Error::Code::kThrottled ||
      result.error().code() == Error::Code::kConflict) {
    return now + kThrottledRetry;
  }
  Backoff(ps, fmt::format("increasing the pool by {} failed: {}", count, result.error().message()),
          now, /*refused=*/true);
  return now;  // the pods, at once, on the other pools
}

void PoolTracker::OnDecreaseResult(const std::string& pool, int count, const Result<void>& result,
                                   Time now) {
  auto it = pools_.find(pool);
  if (it == pools_.end()) return;
  PoolState& ps = it->second;
  ps.unreported = std::max(0, ps.unreported - 1);
  ps.expected_touched = now;
  if (result) return;
  if (ps.expected_target) *ps.expected_target += count;
  ps.not_registered = std::max(0, ps.target() - ps.registered);
}

void PoolTracker::OnDeleteReported(const std::string& pool, bool ok, Time now) {
  auto it = pools_.find(pool);
  if (it == pools_.end()) return;
  PoolState& ps = it->second;
  ps.unreported = std::max(0, ps.unreported - 1);
  ps.expected_touched = now;
  if (!ok && ps.expected_target) ++*ps.expected_target;
}

std::optional<PoolFailure> PoolTracker::FailureSince(std::string_view pool, Time since) const {
  auto it = pools_.find(pool);
  if (it == pools_.end() || !it->second.backoff_until || it->second.backoff_cause.at < since) {
    return std::nullopt;
  }
  return it->second.backoff_cause;
}

int PoolTracker::GiveBack(StepContext& ctx, const std::string& pool, int count,
                          std::string reason) {
  auto it = pools_.find(pool);
  if (it == pools_.end()) return 0;
  PoolState& ps = it->second;
  const int cancel = std::min(count, ps.not_registered);
  if (cancel <= 0) return 0;
  CancelNewest(ctx, pool, ps, cancel, std::move(reason));
  return cancel;
}

int PoolTracker::Upcoming(std::string_view pool) const {
  auto it = pools_.find(pool);
  return it == pools_.end() ? 0 : it->second.upcoming();
}

int PoolTracker::Stopped(std::string_view pool) const {
  auto it = pools_.find(pool);
  return it == pools_.end() ? 0 : it->second.stopped();
}

int PoolTracker::Target(std::string_view pool) const {
  auto it = pools_.find(pool);
  return it == pools_.end() ? 0 : it->second.target();
}

bool PoolTracker::InBackoff(std::string_view pool, Time now) const {
  auto it = pools_.find(pool);
  return it != pools_.end() && InBackoff(it->second, now);
}

void PoolTracker::FillPlannerInput(planner::PlannerInput& in, Time now, bool backoffs) const {
  for (const auto& [name, ps] : pools_) {
    if (ps.upcoming() > 0) in.upcoming[name] = ps.upcoming();
    if (backoffs && InBackoff(ps, now)) in.backoff_until[name] = *ps.backoff_until;
  }
}

bool PoolTracker::BackoffEndedSince(Time now, const std::optional<Time>& last_planned) const {
  for (const auto& [name, ps] : pools_) {
    if (ps.backoff_until && *ps.backoff_until <= now &&
        (!last_planned || *ps.backoff_until > *last_planned)) {
      return true;
    }
  }
  return false;
}

void PoolTracker::Cleanup(const StepContext& ctx) {
  if (NamesUnchanged(ctx)) return;
  // Both maps are in name order, each name once: one walk finds the nodes that are gone, with one
  // comparison per step when they hold the same names.
  auto seen = ctx.nodes.begin();
  for (auto it = nodes_.begin(); it != nodes_.end();) {
    if (SeekName(seen, ctx.nodes.end(), it->first)) {
      ++it;
      ++seen;
    } else {
      it = nodes_.erase(it);
      ++node_changes_;
    }
  }
  names_of_ = NamesOf(ctx);
}

void PoolTracker::AddDigest(Digest& d) const {
  for (const auto& [name, ps] : pools_) {
    d.Add(name);
    for (int v :
         {int{ps.observed}, ps.observed_target, ps.provider_registered, int{ps.stockout},
          ps.expected_target.value_or(-1), int{ps.expected_target.has_value()}, ps.unreported,
          ps.backoff_level, ps.registered, ps.ready, ps.starting, ps.not_registered}) {
      d.AddInt(v);
    }
    d.Add(ps.stockout_reason);
    d.Add(ps.expected_touched);
    d.AddInt(ps.observed_stopped);
    d.AddInt(ps.expected_stopped.value_or(-1));
    d.Add(ps.expected_stopped_touched);
    d.Add(ps.stopped_reason);
    for (const ScaleUpRequest& r : ps.requests) {
      d.AddInt(r.remaining);
      d.AddInt(r.restarts);
      d.Add(r.requested_at);
    }
    d.Add(ps.backoff_until);
    d.Add(ps.backoff_cause.at);
    d.Add(ps.backoff_cause.reason);
    d.AddInt(int{ps.backoff_cause.refused});
  }
  d.Add(node_changes_);  // what nodes_ holds changes only with it
}

void PoolTracker::AddTimers(Timers& t, bool pods_pending) const {
  for (const model::Pool& pool : config_.pools) {
    const PoolState& ps = pools_.at(pool.name);
    if (!ps.requests.empty()) t.Wake(ps.requests.front().requested_at + ProvisionTimeout(pool));
    if (ps.backoff_until) {
      if (pods_pending && InBackoff(ps, t.now())) {
        t.Wake(*ps.backoff_until);
      } else {
        t.Decide(*ps.backoff_until);
      }
    }
    if (ps.expected_target) {
      if (ps.unreported == 0) {
        t.Wake(ps.expected_touched + options_.observe_grace);
      } else {
        t.Decide(ps.expected_touched + options_.observe_grace);
      }
      t.Decide(ps.expected_touched + ProvisionTimeout(pool));
    }
  }
}

PoolStatus PoolTracker::Status(const model::Pool& pool, Time now) const {
  const PoolState& ps = pools_.at(pool.name);
  PoolStatus p;
  p.name = pool.name;
  p.min = pool.min;
  p.max = pool.max;
  p.target = ps.target();
  p.registered = ps.registered;
  p.ready = ps.ready;
  p.upcoming = ps.upcoming();
  if (InBackoff(ps, now)) {
    p.backoff_until = ps.backoff_until;
    p.backoff_reason = ps.backoff_cause.reason;
  }
  p.stockout = ps.stockout;
  if (pool.scale_down.Deallocates()) {
    p.deallocate = true;
    p.stopped = ps.stopped();
    p.max_stopped = pool.scale_down.max_stopped;
    p.stopped_reason = ps.stopped_reason;
  }
  return p;
}

}  // namespace tidepool::autoscaler
