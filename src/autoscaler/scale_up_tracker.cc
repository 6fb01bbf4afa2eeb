#include "autoscaler/scale_up_tracker.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <memory>
#include <utility>

#include "autoscaler/buffers.h"
#include "autoscaler/provisioning.h"
#include "planner/scale_up.h"

namespace tidepool::autoscaler {

namespace {

using RequestOf = std::map<std::string, std::string, std::less<>>;

// How the status names pending pod `key`: by its own key, or, when it stands in for a
// ProvisioningRequest or a CapacityBuffer (`request_of`: pod key -> the object's shown name), by
// the object, the first time only (`shown`: the objects named already); nullopt when its object
// is named already.
std::optional<std::string> ShownName(const std::string& key, const RequestOf& request_of,
                                     std::set<std::string, std::less<>>& shown) {
  auto r = request_of.find(key);
  if (r == request_of.end()) return key;
  if (!shown.insert(r->second).second) return std::nullopt;
  return r->second;
}

// `keys` with the stand-in pods of each ProvisioningRequest or CapacityBuffer replaced by the
// object, once, where its first pod was.
template <typename Keys>
std::vector<std::string> Shown(const Keys& keys, const RequestOf& request_of) {
  std::vector<std::string> out;
  std::set<std::string, std::less<>> shown;
  for (const std::string& key : keys) {
    if (auto name = ShownName(key, request_of, shown)) out.push_back(std::move(*name));
  }
  return out;
}

// The pods of this Step that stand in for an object, by key, with the object's shown name.
RequestOf StandIns(const StepContext& ctx) {
  RequestOf out;
  for (const auto& [pod, request] : ctx.provisioning_keys) out.emplace(pod, ShownRequest(request));
  for (const auto& [pod, buffer] : ctx.buffer_keys) out.emplace(pod, ShownBuffer(buffer));
  return out;
}

bool IsStandIn(const StepContext& ctx, const std::string& pod) {
  return ctx.provisioning_keys.contains(pod) || ctx.buffer_keys.contains(pod);
}

}  // namespace

ScaleUpTracker::ScaleUpTracker(const model::AutoscalerConfig& config, const LoopOptions& options)
    : config_(config), options_(options) {}

void ScaleUpTracker::ObservePending(StepContext& ctx) {
  bool added = false;
  const int32_t cutoff = config_.scale_up.expendable_priority_cutoff;
  // The observation's pods as ProvisioningTracker left them (its requests' pods in, the pods
  // that consume a booking out).
  gated_count_ = 0;
  for (const model::Pod* pod : planner::UnboundPods(ctx.base)) {
    if (!planner::IsPendingForScaleUp(*pod, cutoff)) {
      if (planner::IsHeldBySchedulingGates(*pod, cutoff)) ++gated_count_;
      continue;
    }
    ctx.pending.push_back(pod);
    auto [it, inserted] = ctx.pending_keys.insert(pod->Key());
    if (inserted && !prev_pending_.contains(*it)) added = true;
  }
  if (ctx.pending.empty()) {
    batch_start_.reset();
    return;
  }
  if (added) {
    if (!batch_start_) batch_start_ = ctx.now;
    batch_last_add_ = ctx.now;
  }
}

bool ScaleUpTracker::ShouldPlan(const StepContext& ctx, bool scan, const PoolTracker& pools) const {
  // Warm placeholders are planned at every periodic pass, and at once for a new pre-warm.
  if (!ctx.placeholders.empty()) {
    if (scan) return true;
    for (const auto& [name, wp] : ctx.warm)
      if (wp.approved > 0) return true;
  }
  if (ctx.pending.empty()) return false;
  if (replan_at_ && ctx.now >= *replan_at_) return true;
  if (pools.BackoffEndedSince(ctx.now, last_planned_)) return true;
  if (batch_start_) {
    return ctx.now >= batch_last_add_ + config_.scale_up.batch_idle ||
           ctx.now >= *batch_start_ + config_.scale_up.batch_max;
  }
  return scan;
}

bool ScaleUpTracker::Run(StepContext& ctx, const planner::PlannerInput& in, PoolTracker& pools,
                         WarmPlanner& warm) {
  planner::ScaleUpPlan plan = planner::ScaleUpPlanner().Plan(in, options_.scale_up);
  batch_start_.reset();
  last_planned_ = ctx.now;
  warm.SetUnmet(plan.warm_unmet);
  bool any = false;
  for (const planner::ScaleUp& su : plan.scale_ups) {
    const model::Pool* pool = config_.FindPool(su.pool);
    if (pool != nullptr && Increase(ctx, *pool, su, pools, warm)) any = true;
  }
  RecordVerdicts(ctx, plan);
  ctx.plan = std::move(plan);
  return any;
}

bool ScaleUpTracker::Increase(StepContext& ctx, const model::Pool& pool, planner::ScaleUp su,
                              PoolTracker& pools, WarmPlanner& warm) {
  const int from = pools.Target(su.pool);
  std::string reason = su.reason;
  if (su.warm_add > 0) {
    reason = warm.AdjustScaleUp(ctx, su, pools.Upcoming(su.pool), from, pool.max);
  }
  if (su.add <= 0) return false;
  const int to = from + su.add;
  ctx.actions.push_back(IncreasePool{su.pool, su.add, su.pods, su.warm_add, reason});
  pools.RecordIncrease(su.pool, su.add, ctx.now);
  last_scale_up_ = ScaleUpRecord{ctx.now, su.pool, from, to, Shown(su.pods, StandIns(ctx)), reason};
  std::string message =
      fmt::format("pod triggered scale-up: [{{{} {}->{} (max: {})}}]", su.pool, from, to, pool.max);
  for (const std::string& pod : su.pods) {
    // ProvisioningTracker tells the request, BufferTracker the buffer.
    if (IsStandIn(ctx, pod)) continue;
    if (warm.IsWarm(su.pool)) planned_pool_[pod] = su.pool;
    ctx.actions.push_back(
        Event{EventObject::kPod, pod, EventReason::kTriggeredScaleUp, message, false, su.pool});
    not_triggered_.erase(pod);
  }
  return true;
}

void ScaleUpTracker::RecordVerdicts(StepContext& ctx, const planner::ScaleUpPlan& plan) {
  waiting_for_capacity_.clear();
  const RequestOf told_before = std::exchange(request_of_, StandIns(ctx));
  waiting_for_capacity_.insert(plan.fits_existing.begin(), plan.fits_existing.end());
  for (const planner::ScaleUp& su : plan.scale_ups)
    waiting_for_capacity_.insert(su.pods.begin(), su.pods.end());
  // In pod-key order, as the plan lists them (ScaleUpPlan::unschedulable).
  auto verdicts = std::make_shared<std::vector<planner::Unschedulable>>(plan.unschedulable);
  // The previous plan's verdicts, in the same order: walked beside these.
  auto before = unschedulable_->begin();
  const auto before_end = unschedulable_->end();
  for (const planner::Unschedulable& u : *verdicts) {
    if (IsStandIn(ctx, u.pod)) continue;
    while (before != before_end && before->pod < u.pod) ++before;
    const bool told = before != before_end && before->pod == u.pod && !told_before.contains(u.pod);
    TellNotTriggered(ctx, u, told ? &*before : nullptr);
  }
  unschedulable_ = std::move(verdicts);
}

void ScaleUpTracker::TellNotTriggered(StepContext& ctx, const planner::Unschedulable& u,
                                      const planner::Unschedulable* before) {
  auto it = not_triggered_.find(u.pod);
  // Told at the previous plan, in the same words, and not triggered since.
  if (before != nullptr && before->reasons == u.reasons && it != not_triggered_.end()) return;
  std::string message = "pod didn't trigger scale-up: ";
  std::string_view sep;
  for (const auto& [pool, reason] : u.reasons) {
    message += fmt::format("{}{}: {}", sep, pool, reason.text);
    sep = "; ";
  }
  if (it == not_triggered_.end()) it = not_triggered_.emplace(u.pod, std::string()).first;
  if (it->second == message) return;
  it->second = message;
  ctx.actions.push_back(
      Event{EventObject::kPod, u.pod, EventReason::kNotTriggerScaleUp, std::move(message)});
}

void ScaleUpTracker::Cleanup(StepContext& ctx) {
  auto not_pending = [&](const auto& e) { return !ctx.pending_keys.contains(e.first); };
  std::erase_if(not_triggered_, not_pending);
  auto gone = [&](const planner::Unschedulable& u) { return !ctx.pending_keys.contains(u.pod); };
  if (std::any_of(unschedulable_->begin(), unschedulable_->end(), gone)) {
    auto kept = std::make_shared<std::vector<planner::Unschedulable>>();
    std::remove_copy_if(unschedulable_->begin(), unschedulable_->end(), std::back_inserter(*kept),
                        gone);
    unschedulable_ = std::move(kept);
  }
  std::erase_if(waiting_for_capacity_,
                [&](const std::string& k) { return !ctx.pending_keys.contains(k); });
  std::erase_if(planned_pool_, not_pending);
  std::erase_if(request_of_, not_pending);
  pending_count_ = static_cast<int>(ctx.pending.size());
  prev_pending_ = std::move(ctx.pending_keys);
}

void ScaleUpTracker::AddDigest(Digest& d) const {
  // An unordered set: combine its members order-independently.
  uint64_t pending_sum = 0;
  for (const std::string& key : prev_pending_) pending_sum += std::hash<std::string>()(key);
  d.Add(pending_sum);
  d.Add(prev_pending_.size());
  d.Add(batch_start_);
  d.Add(batch_last_add_);
  d.Add(replan_at_);
  d.AddInt(pending_count_);
  d.Add(planned_pool_.size());
  d.Add(not_triggered_.size());
  for (const auto& [pod, message] : not_triggered_) {
    d.Add(pod);
    d.Add(message);
  }
}

void ScaleUpTracker::AddTimers(Timers& t) const {
  if (batch_start_) {
    Time idle = batch_last_add_ + config_.scale_up.batch_idle;
    Time max = *batch_start_ + config_.scale_up.batch_max;
    t.Wake(std::min(idle, max));
    t.Decide(idle);
    t.Decide(max);
  }
  if (replan_at_) t.Wake(std::max(*replan_at_, t.now()));
}

void ScaleUpTracker::FillStatus(Status& s) const {
  s.last_scale_up = last_scale_up_;
  s.pending_pods = pending_count_;
  s.gated_pods = gated_count_;
  s.batch_open_since = batch_start_;
  if (request_of_.empty()) {
    s.unschedulable = unschedulable_;  // shared, not copied
  } else {
    auto shown_list = std::make_shared<std::vector<planner::Unschedulable>>();
    std::set<std::string, std::less<>> shown;  // requests listed already
    for (const planner::Unschedulable& u : *unschedulable_) {
      if (auto name = ShownName(u.pod, request_of_, shown)) {
        shown_list->push_back(u);
        shown_list->back().pod = std::move(*name);
      }
    }
    s.unschedulable = std::move(shown_list);
  }
  s.waiting_for_capacity = Shown(waiting_for_capacity_, request_of_);
}

}  // namespace tidepool::autoscaler
