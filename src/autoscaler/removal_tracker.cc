#include "autoscaler/removal_tracker.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "autoscaler/backoff.h"

namespace tidepool::autoscaler {

using planner::kToBeDeletedTaint;

RemovalTracker::RemovalTracker(const model::AutoscalerConfig& config, const LoopOptions& options,
                               PoolTracker& pools, UnneededTracker& unneeded)
    : config_(config), options_(options), pools_(pools), unneeded_(unneeded) {}

bool RemovalTracker::Gone(std::string_view node) const {
  if (deleted_.contains(node)) return true;
  auto it = removals_.find(node);
  return it != removals_.end() && it->second.phase == Removal::Phase::kDeleting;
}

std::map<std::string, int> RemovalTracker::DrainsPerPool() const {
  std::map<std::string, int> draining;
  for (const auto& [name, r] : removals_) {
    if (planner::Drains(r.kind) && r.phase != Removal::Phase::kDeleting) {
      ++draining[r.pool];
    }
  }
  return draining;
}

std::string RemovalTracker::NotRemovableReason(const StepContext& ctx,
                                               std::string_view node) const {
  if (auto cd = cooldown_.find(node); cd != cooldown_.end() && cd->second > ctx.now) {
    return fmt::format("its removal failed recently; not tried again before {}",
                       FormatRfc3339(cd->second));
  }
  if (auto p = ctx.pool_of.find(node); p != ctx.pool_of.end()) {
    int upcoming = pools_.Upcoming(p->second->name);
    if (upcoming > 0) {
      return fmt::format("pool {} is scaling up ({} node(s) upcoming)", p->second->name, upcoming);
    }
  }
  return "";
}

void RemovalTracker::Advance(StepContext& ctx) {
  std::vector<std::string> names;
  for (const auto& [name, r] : removals_) names.push_back(name);
  for (const std::string& name : names) {
    auto it = removals_.find(name);
    if (it != removals_.end()) AdvanceOne(ctx, it->second);
  }
}

void RemovalTracker::AdvanceOne(StepContext& ctx, Removal& r) {
  const Time now = ctx.now;
  const Duration max_eviction = config_.scale_down.max_pod_eviction_time;
  const model::Node* node = ctx.Find(r.node);
  if (node == nullptr) {
    // Gone from the cluster (deleted by the loop, or by someone else): nothing left to do.
    if (r.phase == Removal::Phase::kDeleting) deleted_[r.node] = now;
    removals_.erase(r.node);
    return;
  }
  if (HasTaint(*node, kToBeDeletedTaint)) r.taint_confirmed = true;

  if (r.phase == Removal::Phase::kTainting) {
    if (!r.taint_confirmed) {
      if (now >= r.started + max_eviction) {
        RollBack(r.node,
                 fmt::format("the {} taint was not confirmed within {}", kToBeDeletedTaint,
                             FormatDuration(max_eviction)),
                 now, ctx.actions);
      }
      return;
    }
    r.phase = Removal::Phase::kDraining;
    r.drain_started = now;
  }
  if (r.phase == Removal::Phase::kDraining) Drain(ctx, r);
}

void RemovalTracker::Drain(StepContext& ctx, Removal& r) {
  const Time now = ctx.now;
  // Pods that must leave and are still on the node, terminating ones included.
  std::set<std::string> present;
  std::vector<std::string> evict;
  bool first = r.pods.empty() && !r.all_evicted_at;
  for (const model::Pod* pod : ctx.PodsOn(r.node)) {
    if (!MustLeave(*pod)) continue;
    std::string key = pod->Key();
    present.insert(key);
    if (pod->meta.deletion_timestamp || r.pods.contains(key)) continue;
    r.pods[key] = PodEviction{};  // new (or first): evict it
    evict.push_back(key);
  }
  for (auto& [key, ev] : r.pods) {
    if (!present.contains(key)) {
      ev.state = PodEviction::State::kEvicted;
    } else if (ev.state == PodEviction::State::kRetry && ev.retry_at <= now) {
      ev.state = PodEviction::State::kInFlight;
      evict.push_back(key);
    }
  }
  if (!evict.empty()) {
    std::sort(evict.begin(), evict.end());
    if (first) {
      for (const std::string& pod : evict) {
        ctx.actions.push_back(Event{EventObject::kPod, pod, EventReason::kScaleDown,
                                    "deleting pod for node scale down", false, r.pool});
      }
    }
    ctx.actions.push_back(
        EvictPods{r.node, r.pool, r.kind, std::move(evict),
                  fmt::format("drain for scale-down ({})", planner::RemovalKindName(r.kind))});
  }

  bool all_evicted = std::all_of(r.pods.begin(), r.pods.end(), [](const auto& e) {
    return e.second.state == PodEviction::State::kEvicted;
  });
  if (all_evicted) {
    if (!r.all_evicted_at) r.all_evicted_at = now;
    if (present.empty()) {
      PoolTracker::RemovalChoice how = pools_.ChooseRemoval(r.pool, now);
      r.stop = how.stop;
      r.method_reason = std::move(how.why);
      std::string reason =
          fmt::format("scale-down: {}, {}", planner::RemovalKindName(r.kind), r.detail);
      if (!r.method_reason.empty()) reason += "; " + r.method_reason;
      ctx.actions.push_back(DeleteNode{r.node, r.pool, r.kind, std::move(reason), r.consolidation,
                                       r.stop ? RemovalMethod::kStop : RemovalMethod::kDelete});
      r.phase = Removal::Phase::kDeleting;
      pools_.RecordDeletion(r.pool, now);
    } else if (now >= *r.all_evicted_at + options_.pod_termination_wait) {
      RollBack(r.node,
               fmt::format("evicted pods still on the node {} after their eviction: {}",
                           FormatDuration(options_.pod_termination_wait), fmt::join(present, ", ")),
               now, ctx.actions);
    }
    return;
  }
  const Duration max_eviction = config_.scale_down.max_pod_eviction_time;
  if (now >= *r.drain_started + max_eviction) {
    std::string stuck;
    for (const auto& [key, ev] : r.pods) {
      if (ev.state == PodEviction::State::kEvicted) continue;
      stuck = ev.last_error.empty() ? key : fmt::format("{} ({})", key, ev.last_error);
      break;
    }
    RollBack(r.node,
             fmt::format("could not evict pod {} within scaleDown.maxPodEvictionTime {}", stuck,
                         FormatDuration(max_eviction)),
             now, ctx.actions);
  }
}

void RemovalTracker::RollBack(const std::string& node, const std::string& why, Time now,
                              std::vector<Action>& out) {
  auto it = removals_.find(node);
  if (it == removals_.end()) return;
  std::string pool = it->second.pool;
  untainted_[node] = now;
  out.push_back(UntaintNode{node, pool, fmt::format("scale-down rolled back: {}", why)});
  out.push_back(Event{EventObject::kNode, node, EventReason::kScaleDownFailed,
                      fmt::format("failed to remove the node, scale-down aborted and the node "
                                  "untainted: {}",
                                  why),
                      /*warning=*/true, pool});
  cooldown_[node] = now + options_.removal_cooldown.value_or(config_.scale_down.unneeded_time);
  unneeded_.Forget(node);
  last_scale_down_ = ScaleDownRecord{now, node, pool, "failed", why};
  removals_.erase(it);
}

Removal RemovalTracker::FromPlan(const planner::ScaleDown& sd, Time now) {
  Removal r;
  r.node = sd.node;
  r.pool = sd.pool;
  r.kind = sd.kind;
  r.detail = sd.Detail();
  r.consolidation = sd.consolidation;
  r.started = now;
  return r;
}

void RemovalTracker::Start(StepContext& ctx, const planner::ScaleDown& sd) {
  Removal r = FromPlan(sd, ctx.now);
  std::string why = fmt::format("{}, {}", planner::RemovalKindName(sd.kind), sd.Detail());
  ctx.actions.push_back(TaintNode{sd.node, sd.pool, why});
  ctx.actions.push_back(
      Event{EventObject::kNode, sd.node, EventReason::kScaleDown,
            fmt::format("marked the node as toBeDeleted/unschedulable: {}; {} pod(s) to evict", why,
                        sd.evict.size()),
            false, sd.pool});
  unneeded_.Forget(sd.node);
  last_scale_down_ = ScaleDownRecord{ctx.now, sd.node, sd.pool, "started", why};
  removals_[sd.node] = std::move(r);
}

std::optional<Time> RemovalTracker::OnTaintResult(const std::string& node,
                                                  const Result<void>& result, Time now,
                                                  std::vector<Action>& out) {
  auto it = removals_.find(node);
  if (it == removals_.end() || it->second.phase != Removal::Phase::kTainting) return std::nullopt;
  if (result) {
    it->second.taint_confirmed = true;
  } else {
    RollBack(node, fmt::format("tainting the node failed: {}", result.error().message()), now, out);
  }
  return now;
}

std::optional<Time> RemovalTracker::OnEvictResult(const std::string& node, const std::string& pod,
                                                  const Result<void>& result, Time now) {
  auto it = removals_.find(node);
  if (it == removals_.end() || it->second.phase != Removal::Phase::kDraining) return std::nullopt;
  Removal& r = it->second;
  auto ev = r.pods.find(pod);
  if (ev == r.pods.end() || ev->second.state != PodEviction::State::kInFlight) {
    return std::nullopt;
  }
  PodEviction& e = ev->second;
  if (result || result.error().code() == Error::Code::kNotFound) {
    e.state = PodEviction::State::kEvicted;
    return now;
  }
  ++e.failures;
  e.state = PodEviction::State::kRetry;
  e.retry_at = now + DoublingDelay(options_.eviction_retry_initial, options_.eviction_retry_max,
                                   e.failures - 1);
  e.last_error = result.error().message();
  return std::min(e.retry_at, *r.drain_started + config_.scale_down.max_pod_eviction_time);
}

std::optional<Time> RemovalTracker::OnDeleteResult(const std::string& node,
                                                   const Result<void>& result, Time now,
                                                   std::vector<Action>& out) {
  auto it = removals_.find(node);
  if (it == removals_.end() || it->second.phase != Removal::Phase::kDeleting) return std::nullopt;
  Removal& r = it->second;
  bool ok = result || result.error().code() == Error::Code::kNotFound;
  pools_.OnDeleteReported(r.pool, ok, now);
  if (r.stop) pools_.OnStopReported(r.pool, ok, now);
  if (ok) {
    std::string why = fmt::format("{}, {}", planner::RemovalKindName(r.kind), r.detail);
    if (!r.method_reason.empty()) why += "; " + r.method_reason;
    out.push_back(Event{EventObject::kNode, node, EventReason::kScaleDown,
                        fmt::format("node {} by tidepool: {}", r.stop ? "stopped" : "removed", why),
                        false, r.pool});
    last_scale_down_ = ScaleDownRecord{now, node, r.pool, r.stop ? "stopped" : "deleted", why};
    deleted_[node] = now;
    removals_.erase(it);
  } else {
    RollBack(node, fmt::format("deleting the node failed: {}", result.error().message()), now, out);
  }
  return now;
}

void RemovalTracker::Cleanup(const StepContext& ctx) {
  std::erase_if(deleted_, [&](const auto& e) { return !ctx.nodes.contains(e.first); });
  std::erase_if(untainted_, [&](const auto& e) {
    const model::Node* n = ctx.Find(e.first);
    return n == nullptr || !HasTaint(*n, kToBeDeletedTaint);
  });
  std::erase_if(cooldown_, [&](const auto& e) { return e.second <= ctx.now; });
}

void RemovalTracker::AddDigest(Digest& d) const {
  d.Add(removals_.size());
  for (const auto& [name, r] : removals_) {
    d.Add(name);
    d.Add(r.pool);
    d.Add(static_cast<uint64_t>(r.kind));
    d.Add(r.detail);
    d.Add(static_cast<uint64_t>(r.phase));
    d.Add(r.started);
    d.Add(uint64_t{r.taint_confirmed});
    d.Add(r.drain_started);
    d.Add(r.all_evicted_at);
    for (const auto& [key, ev] : r.pods) {
      d.Add(key);
      d.Add(static_cast<uint64_t>(ev.state));
      d.AddInt(ev.failures);
      d.Add(ev.retry_at);
      d.Add(ev.last_error);
    }
  }
  for (const auto* times : {&deleted_, &cooldown_, &untainted_}) {
    d.Add(times->size());
    for (const auto& [name, t] : *times) {
      d.Add(name);
      d.Add(t);
    }
  }
}

void RemovalTracker::AddTimers(Timers& t) const {
  const Duration max_eviction = config_.scale_down.max_pod_eviction_time;
  for (const auto& [name, r] : removals_) {
    if (r.phase == Removal::Phase::kTainting) {
      t.Wake(r.started + max_eviction);
    } else {
      t.Decide(r.started + max_eviction);
    }
    const bool draining = r.phase == Removal::Phase::kDraining;
    if (r.all_evicted_at) {
      Time end = *r.all_evicted_at + options_.pod_termination_wait;
      draining ? t.Wake(end) : t.Decide(end);
    }
    if (r.drain_started) {
      Time end = *r.drain_started + max_eviction;
      draining && !r.all_evicted_at ? t.Wake(end) : t.Decide(end);
    }
    for (const auto& [key, ev] : r.pods) {
      bool retry = draining && !r.all_evicted_at && ev.state == PodEviction::State::kRetry;
      retry ? t.Wake(ev.retry_at) : t.Decide(ev.retry_at);
    }
  }
  for (const auto& [name, when] : cooldown_) t.Decide(when);
  for (const auto& [name, when] : untainted_) t.Decide(when + options_.observe_grace);
}

void RemovalTracker::FillStatus(Status& s) const {
  s.last_scale_down = last_scale_down_;
  for (const auto& [name, r] : removals_) {
    RemovalStatus rs;
    rs.node = name;
    rs.pool = r.pool;
    rs.phase = r.phase == Removal::Phase::kTainting   ? "tainting"
               : r.phase == Removal::Phase::kDraining ? "draining"
                                                      : "deleting";
    rs.started = r.started;
    for (const auto& [key, ev] : r.pods)
      if (ev.state != PodEviction::State::kEvicted) ++rs.pods_left;
    s.removals.push_back(std::move(rs));
  }
}

}  // namespace tidepool::autoscaler
