#include "autoscaler/loop.h"

#include "autoscaler/planner_input.h"
#include "planner/model_fork.h"
#include "sched/cluster_model.h"

namespace tidepool::autoscaler {

using planner::kToBeDeletedTaint;

Autoscaler::Autoscaler(const model::AutoscalerConfig& config, LoopOptions options)
    : config_(config), options_(std::move(options)) {}

std::vector<Action> Autoscaler::Step(const Observation& obs, Time now) {
  if (SkipUnchangedStep(obs, now)) {
    ++skipped_steps_;
    return {};
  }
  const bool may_skip_next = options_.skip_unchanged && obs.version != 0;
  const uint64_t digest_before = may_skip_next ? StateDigest() : 0;
  quiet_.reset();
  StepContext ctx(obs, now);
  ctx.actions = std::move(outbox_);
  outbox_.clear();
  last_step_ = now;

  Index(ctx);
  if (ctx.base.model != nullptr) ctx.base.slot_pools = &slot_pools_;
  warm_.LearnBoot(pools_.Observe(ctx, [this](std::string_view n) { return removals_.Gone(n); }));
  if (pools_.HandleFailures(ctx)) scale_up_.RequestReplan(now);
  provisioning_.RollBack(ctx);
  const bool scan = !last_scan_ || now >= *last_scan_ + config_.scan_interval;
  PrepareProvisioning(ctx);
  buffers_.Prepare(ctx);
  scale_up_.ObservePending(ctx);
  warm_.Update(ctx, scan, scale_up_.planned_pools(), pools_, removing_);
  bool scaled_up = false;
  if (scale_up_.ShouldPlan(ctx, scan, pools_)) scaled_up = RunScaleUp(ctx);
  if (scan) warm_.StockStopped(ctx, pools_);
  scale_up_.ClearReplan(now);
  provisioning_.Conclude(ctx);
  buffers_.Conclude(ctx);
  removals_.Advance(ctx);
  replacements_.Advance(ctx);
  if (scan) {
    last_scan_ = now;
    removals_.Adopt(ctx);
    pools_.TrimStopped(ctx, [this](const model::Pool& pool, Time now) {
      return warm_.StoppedWorthKeeping(pool, now);
    });
    RunScaleDown(ctx, /*may_start=*/!scaled_up);
  }
  Cleanup(ctx);
  // A periodic pass that decided nothing and changed nothing: until a timer comes due, the same
  // observation would decide nothing again.
  Finish(ctx, may_skip_next && scan && ctx.actions.empty() && outbox_.empty() &&
                  !scale_up_.replan() && StateDigest() == digest_before);
  return std::move(ctx.actions);
}

void Autoscaler::Index(StepContext& ctx) {
  const Observation& obs = ctx.obs;
  ctx.base.config = &config_;
  ctx.base.pods = obs.pods;
  // The model knows its pods without a node: the passes look for pending pods there.
  if (obs.model != nullptr) ctx.base.unbound = obs.model->Unbound();
  ctx.base.pdbs = obs.pdbs;
  ctx.base.daemon_sets = obs.daemon_sets;
  ctx.base.dra = obs.dra;
  ctx.base.model = obs.model;
  ctx.base.now = ctx.now;
  ctx.base.provider_pool_of = obs.provider_pool_of;
  // The model's own nodes in its name order (distinct, named): each slot's pool is kept across
  // Steps (SlotPools), and ctx.nodes holds them in the same order, appended without comparing
  // names. Other drivers list nodes in name order too: each goes in at the end, without a search.
  const bool model_order = obs.model != nullptr && planner::InModelOrder(*obs.model, obs.nodes);
  ctx.nodes.Reserve(obs.nodes.size());
  for (const model::Node* n : obs.nodes) {
    if (model_order) {
      ctx.nodes.Append(n->name(), n);
    } else if (n != nullptr && !n->name().empty()) {
      ctx.nodes.Add(n->name(), n);
    }
  }
  const planner::PoolNames pools(config_);
  planner::SlotPools* slot_pools = nullptr;
  const std::vector<sched::NodeIndex>* slots = nullptr;
  if (model_order) {
    ctx.nodes_are_model = true;
    slot_pools = &slot_pools_;
    slot_pools->Begin(*obs.model, config_);
    slots = &obs.model->NodesByName();
  }
  ctx.pool_of.Reserve(ctx.nodes.size());
  size_t k = 0;
  for (const auto& [name, node] : ctx.nodes) {
    const sched::NodeIndex slot = slots != nullptr ? (*slots)[k++] : sched::kNoNode;
    if (const model::Pool* pool = planner::PoolOfSlot(slot_pools, slot, *node, ctx.base, pools)) {
      ctx.pool_of.Append(name, pool);  // ctx.nodes' order
      if (HasTaint(*node, kToBeDeletedTaint)) ctx.tainted.push_back(name);
    }
  }
  if (removals_.Empty() && ctx.tainted.empty()) return;
  for (const model::Pod* pod : obs.pods) {
    if (pod->node_name.empty()) continue;
    const model::Node* node = ctx.Find(pod->node_name);
    if (node == nullptr) continue;
    if (Removing(pod->node_name) || HasTaint(*node, kToBeDeletedTaint)) {
      ctx.pods_on[node->name()].push_back(pod);
    }
  }
}

void Autoscaler::PrepareProvisioning(StepContext& ctx) {
  planner::PlannerInput in;
  if (!ctx.obs.provisioning_requests.empty()) {
    in = BuildPlannerInput(ctx, InputFor::kScaleUp, removing_);
    pools_.FillPlannerInput(in, ctx.now, /*backoffs=*/true);
  }
  provisioning_.Prepare(ctx, in);
}

bool Autoscaler::RunScaleUp(StepContext& ctx) {
  planner::PlannerInput in = BuildPlannerInput(ctx, InputFor::kScaleUp, removing_);
  pools_.FillPlannerInput(in, ctx.now, /*backoffs=*/true);
  in.placeholders = ctx.placeholders;
  return scale_up_.Run(ctx, in, pools_, warm_);
}

void Autoscaler::Cleanup(StepContext& ctx) {
  pools_.Cleanup(ctx);
  removals_.Cleanup(ctx);
  unneeded_.Cleanup(ctx);
  scale_up_.Cleanup(ctx);
}

void Autoscaler::Finish(const StepContext& ctx, bool quiet) {
  const Time now = ctx.now;
  Timers t(now, /*want_decide=*/quiet);
  if (ctx.next_starting_deadline) t.Wake(*ctx.next_starting_deadline);
  pools_.AddTimers(t, scale_up_.pending_count() > 0);
  scale_up_.AddTimers(t);
  removals_.AddTimers(t);
  replacements_.AddTimers(t);
  unneeded_.AddTimers(t);
  warm_.AddTimers(t);
  provisioning_.AddTimers(t);
  if (!outbox_.empty()) t.Wake(now);
  // Nodes younger than delayAfterAdd are not scale-down candidates yet.
  if (quiet) {
    NameMap<const model::Node*>::Walker nodes(ctx.nodes);  // pool_of is in name order too
    for (const auto& [name, pool] : ctx.pool_of) {
      const model::Node& node = *nodes.at(name);
      if (node.meta.creation_timestamp) {
        t.Decide(*node.meta.creation_timestamp + config_.scale_down.delay_after_add);
      }
    }
  }
  wakeup_ = std::max(std::min(t.wake(), *last_scan_ + config_.scan_interval), now);
  if (quiet) quiet_ = QuietStep{ctx.obs.version, t.decide(), t.wake()};
}

bool Autoscaler::Unchanged(uint64_t version, Time now) const {
  return quiet_ && options_.skip_unchanged && version != 0 && version == quiet_->version &&
         now < quiet_->until && outbox_.empty() && !scale_up_.replan() && last_scan_ &&
         !(last_step_ && now < *last_step_);
}

bool Autoscaler::SkipUnchangedStep(const Observation& obs, Time now) {
  if (!Unchanged(obs.version, now)) {
    quiet_.reset();
    return false;
  }
  // What the full Step would change: the step and scan times and, at a periodic pass with pods
  // pending, the time of the last scale-up plan (which found nothing to add).
  last_step_ = now;
  if (now >= *last_scan_ + config_.scan_interval) {
    last_scan_ = now;
    if (scale_up_.pending_count() > 0) scale_up_.MarkPlanned(now);
  }
  wakeup_ = std::max(std::min(*last_scan_ + config_.scan_interval, quiet_->timers_wakeup), now);
  return true;
}

uint64_t Autoscaler::StateDigest() const {
  Digest d;
  pools_.AddDigest(d);
  removals_.AddDigest(d);
  replacements_.AddDigest(d);
  unneeded_.AddDigest(d);
  scale_up_.AddDigest(d);
  warm_.AddDigest(d);
  provisioning_.AddDigest(d);
  buffers_.AddDigest(d);
  return d.value();
}

void Autoscaler::OnIncreaseResult(const std::string& pool, int count, const Result<void>& result,
                                  Time now) {
  quiet_.reset();  // feedback changes state outside a Step
  if (auto at = pools_.OnIncreaseResult(pool, count, result, now)) {
    scale_up_.RequestReplan(*at);
    Wake(*at);
  }
}

void Autoscaler::OnDecreaseResult(const std::string& pool, int count, const Result<void>& result,
                                  Time now) {
  quiet_.reset();
  pools_.OnDecreaseResult(pool, count, result, now);
}

void Autoscaler::OnTaintResult(const std::string& node, const Result<void>& result, Time now) {
  quiet_.reset();
  if (auto wake = removals_.OnTaintResult(node, result, now, outbox_)) Wake(*wake);
}

void Autoscaler::OnEvictResult(const std::string& node, const std::string& pod,
                               const Result<void>& result, Time now) {
  quiet_.reset();
  if (auto wake = removals_.OnEvictResult(node, pod, result, now)) Wake(*wake);
}

void Autoscaler::OnDeleteResult(const std::string& node, const Result<void>& result, Time now) {
  quiet_.reset();
  if (auto wake = removals_.OnDeleteResult(node, result, now, outbox_)) Wake(*wake);
}

Status Autoscaler::GetStatus() const {
  Status s;
  s.last_step = last_step_;
  const Time now = last_step_.value_or(Time{});
  for (const model::Pool& pool : config_.pools) {
    PoolStatus p = pools_.Status(pool, now);
    warm_.FillStatus(p, pool, now);
    s.pools.push_back(std::move(p));
  }
  scale_up_.FillStatus(s);
  removals_.FillStatus(s);
  unneeded_.FillStatus(s);
  buffers_.FillStatus(s);
  return s;
}

bool Autoscaler::HasPredictive() const { return warm_.HasPredictive(); }

std::string Autoscaler::ExportWarmState() const { return warm_.Export(); }

Result<void> Autoscaler::ImportWarmState(std::string_view json) {
  TIDEPOOL_RETURN_IF_ERROR(warm_.Import(json));
  quiet_.reset();
  return {};
}

}  // namespace tidepool::autoscaler
