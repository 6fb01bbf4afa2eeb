#include "autoscaler/loop.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <nlohmann/json.hpp>
#include <utility>

#include "base/check.h"
#include "planner/cluster.h"
#include "planner/scale_down.h"
#include "planner/scale_up.h"
#include "sched/fit.h"

namespace tidepool::autoscaler {
namespace {

using planner::kDeletionCandidateTaint;
using planner::kToBeDeletedTaint;

bool HasTaint(const model::Node& node, std::string_view key) {
  for (const model::Taint& t : node.taints)
    if (t.key == key) return true;
  return false;
}

// Taints a node carries while it is still starting, whatever its Ready condition says: the node
// lifecycle controller removes node.kubernetes.io/not-ready a moment after Ready turns True, the
// cloud controller removes uninitialized, and CA's startup-taint prefix marks taints a node
// agent removes once it is set up. Pods cannot land on such a node yet, so it is upcoming.
bool HasStartupTaint(const model::Node& node) {
  for (const model::Taint& t : node.taints) {
    if (t.effect == model::TaintEffect::kPreferNoSchedule) continue;
    if (t.key == "node.kubernetes.io/not-ready" || t.key == "node.kubernetes.io/unreachable" ||
        t.key == "node.kubernetes.io/network-unavailable" ||
        t.key == "node.cloudprovider.kubernetes.io/uninitialized" ||
        t.key.starts_with("startup-taint.cluster-autoscaler.kubernetes.io/")) {
      return true;
    }
  }
  return false;
}

// A pod that must leave before its node goes: not finished, not a DaemonSet or mirror pod.
bool MustLeave(const model::Pod& pod) {
  return !pod.IsTerminal() && !pod.IsDaemonSetPod() && !pod.IsMirrorPod();
}

std::string_view KindWord(planner::RemovalKind kind) {
  return kind == planner::RemovalKind::kEmpty ? "empty" : "underutilized";
}

Action PoolAction(Action::Kind kind, std::string pool, int count, std::string reason) {
  Action a;
  a.kind = kind;
  a.pool = std::move(pool);
  a.count = count;
  a.reason = std::move(reason);
  return a;
}

Action NodeAction(Action::Kind kind, std::string node, std::string pool, std::string reason) {
  Action a;
  a.kind = kind;
  a.node = std::move(node);
  a.pool = std::move(pool);
  a.reason = std::move(reason);
  return a;
}

Action Event(std::string object_kind, std::string object, std::string reason, std::string message,
             bool warning = false) {
  Action a;
  a.kind = Action::Kind::kEvent;
  a.object_kind = std::move(object_kind);
  a.object = std::move(object);
  a.reason = std::move(reason);
  a.message = std::move(message);
  a.warning = warning;
  return a;
}

std::string Seconds(Duration d) {
  return FormatDuration(std::chrono::floor<std::chrono::seconds>(std::max(Duration(0), d)));
}

}  // namespace

std::string_view ActionKindName(Action::Kind kind) {
  switch (kind) {
    case Action::Kind::kIncreasePool:
      return "IncreasePool";
    case Action::Kind::kDecreaseTarget:
      return "DecreaseTarget";
    case Action::Kind::kTaintNode:
      return "TaintNode";
    case Action::Kind::kMarkCandidate:
      return "MarkCandidate";
    case Action::Kind::kUnmarkCandidate:
      return "UnmarkCandidate";
    case Action::Kind::kEvictPods:
      return "EvictPods";
    case Action::Kind::kDeleteNode:
      return "DeleteNode";
    case Action::Kind::kUntaintNode:
      return "UntaintNode";
    case Action::Kind::kEvent:
      return "Event";
  }
  return "?";
}

std::string DescribeAction(const Action& a) {
  std::string_view name = ActionKindName(a.kind);
  switch (a.kind) {
    case Action::Kind::kIncreasePool:
      return fmt::format("{} {} +{} for [{}] ({})", name, a.pool, a.count, fmt::join(a.pods, ", "),
                         a.reason);
    case Action::Kind::kDecreaseTarget:
      return fmt::format("{} {} -{} ({})", name, a.pool, a.count, a.reason);
    case Action::Kind::kEvictPods:
      return fmt::format("{} {} [{}]", name, a.node, fmt::join(a.pods, ", "));
    case Action::Kind::kEvent:
      return fmt::format("{} {} {} {}{}: {}", name, a.object_kind, a.object, a.reason,
                         a.warning ? " (Warning)" : "", a.message);
    default:
      return a.reason.empty() ? fmt::format("{} {}", name, a.node)
                              : fmt::format("{} {} ({})", name, a.node, a.reason);
  }
}

// Indexes of one observation, built once per Step.
struct Autoscaler::StepContext {
  enum class NodeClass {
    kReady,     // capacity
    kStarting,  // not usable yet, within the provision timeout: counted as upcoming
    kUnusable,  // not usable past the provision timeout (or no longer ready): no capacity
    kGone,      // the loop is deleting it or deleted it: counts for nothing
  };

  StepContext(const Observation& o, Time t) : obs(o), now(t) {}

  const model::Node* Find(std::string_view name) const {
    auto it = nodes.find(name);
    return it == nodes.end() ? nullptr : it->second;
  }
  const std::vector<const model::Pod*>& PodsOn(std::string_view node) const {
    static const std::vector<const model::Pod*> kNone;
    auto it = pods_on.find(node);
    return it == pods_on.end() ? kNone : it->second;
  }
  // A copy of `node` the loop may change for the planner's eyes; stable address.
  model::Node& Copy(const model::Node& node) { return copies.emplace_back(node); }

  const Observation& obs;
  const Time now;
  std::vector<Action> actions;
  planner::PlannerInput base;  // config, pods, PDBs, DaemonSets, now, provider mapping
  std::map<std::string_view, const model::Node*> nodes;    // by name, first of duplicates
  std::map<std::string_view, const model::Pool*> pool_of;  // managed nodes only
  std::map<std::string_view, NodeClass> node_class;        // managed nodes only
  // Pods on the nodes the loop is removing or finds tainted ToBeDeleted.
  std::map<std::string_view, std::vector<const model::Pod*>> pods_on;
  std::vector<const model::Pod*> pending;
  std::unordered_set<std::string> pending_keys;
  std::deque<model::Node> copies;
  std::optional<Time> next_starting_deadline;

  // Warm capacity (UpdateWarm), per pool with pools[].warm.
  struct WarmPool {
    model::Resources whole_request;  // a whole-node placeholder: the template less DaemonSets
    int spare = 0;                   // whole-node placeholders for warm.spareNodes
    int prewarm = 0;                 // whole-node placeholders held for a predicted burst
    int approved = 0;                // of those, new pre-warm nodes approved in this Step
    std::vector<model::Resources> headroom;  // headroom placeholders, each fits one node
    std::string headroom_words;              // "nvidia.com/gpu 4"
    std::string prewarm_reason;              // "warm: predicted burst ..." when prewarm > 0
  };
  std::map<std::string, WarmPool, std::less<>> warm;
  std::deque<model::Pod> warm_pods;  // the placeholders (stable addresses)
  std::vector<const model::Pod*> placeholders;
  // Nodes of warm pools: requests of their non-terminal pods, and whether any must leave.
  struct NodeLoad {
    model::Resources requested;
    bool busy = false;
  };
  std::map<std::string_view, NodeLoad> loads;
};

Autoscaler::Autoscaler(const model::AutoscalerConfig& config, LoopOptions options)
    : config_(config), options_(std::move(options)) {
  for (const model::Pool& p : config_.pools) {
    pools_[p.name];
    if (p.warm.Any()) warm_[p.name];
  }
}

std::vector<Action> Autoscaler::Step(const Observation& obs, Time now) {
  if (SkipUnchangedStep(obs, now)) return {};
  const bool may_skip_next = options_.skip_unchanged && obs.version != 0;
  const uint64_t digest_before = may_skip_next ? StateDigest() : 0;
  quiet_.reset();
  StepContext ctx(obs, now);
  ctx.actions = std::move(outbox_);
  outbox_.clear();
  last_step_ = now;

  ctx.base.config = &config_;
  ctx.base.pods = obs.pods;
  ctx.base.pdbs = obs.pdbs;
  ctx.base.daemon_sets = obs.daemon_sets;
  ctx.base.now = now;
  ctx.base.provider_pool_of = obs.provider_pool_of;

  for (const model::Node* n : obs.nodes) {
    if (n != nullptr && !n->name().empty()) ctx.nodes.emplace(n->name(), n);
  }
  bool any_tainted = false;
  for (const auto& [name, node] : ctx.nodes) {
    auto [it, inserted] = nodes_.try_emplace(std::string(name));
    if (inserted) it->second.first_seen = now;
    if (const model::Pool* pool = planner::PoolOf(*node, ctx.base)) {
      ctx.pool_of.emplace(name, pool);
      any_tainted = any_tainted || HasTaint(*node, kToBeDeletedTaint);
    }
  }
  if (!removals_.empty() || any_tainted) {
    for (const model::Pod* pod : obs.pods) {
      if (pod->node_name.empty()) continue;
      const model::Node* node = ctx.Find(pod->node_name);
      if (node == nullptr) continue;
      if (removals_.contains(pod->node_name) || HasTaint(*node, kToBeDeletedTaint)) {
        ctx.pods_on[node->name()].push_back(pod);
      }
    }
  }

  ObservePools(ctx);
  HandlePoolFailures(ctx);
  bool scan = !last_scan_ || now >= *last_scan_ + config_.scan_interval;
  UpdateBatch(ctx);
  UpdateWarm(ctx, scan);
  bool scaled_up = false;
  if (ShouldPlanScaleUp(ctx, scan)) scaled_up = RunScaleUp(ctx);
  replan_ = false;
  AdvanceRemovals(ctx);
  if (scan) {
    last_scan_ = now;
    AdoptTaintedNodes(ctx);
    RunScaleDown(ctx, /*may_start=*/!scaled_up);
  }
  Cleanup(ctx);
  ComputeWakeup(ctx);
  // A periodic pass that decided nothing and changed nothing: until a timer comes due, the same
  // observation would decide nothing again.
  if (may_skip_next && scan && ctx.actions.empty() && outbox_.empty() && !replan_ &&
      StateDigest() == digest_before) {
    quiet_ = QuietStep{obs.version, NextDecisionTime(ctx), timers_wakeup_};
  }
  return std::move(ctx.actions);
}

bool Autoscaler::SkipUnchangedStep(const Observation& obs, Time now) {
  if (!quiet_ || !options_.skip_unchanged) return false;
  if (obs.version == 0 || obs.version != quiet_->version || now >= quiet_->until ||
      !outbox_.empty() || replan_ || !last_scan_ || (last_step_ && now < *last_step_)) {
    quiet_.reset();
    return false;
  }
  // What the full Step would change: the step and scan times and, at a periodic pass with pods
  // pending, the time of the last scale-up plan (which found nothing to add).
  last_step_ = now;
  if (now >= *last_scan_ + config_.scan_interval) {
    last_scan_ = now;
    if (pending_count_ > 0) last_planned_ = now;
  }
  wakeup_ = std::max(std::min(*last_scan_ + config_.scan_interval, quiet_->timers_wakeup), now);
  return true;
}

namespace {

// A streaming 64-bit digest of loop state (collisions are not a practical concern at 64 bits
// for comparing two consecutive states).
class Digest {
 public:
  void Add(uint64_t v) { h_ ^= v + 0x9e3779b97f4a7c15ULL + (h_ << 6) + (h_ >> 2); }
  void Add(std::string_view s) {
    Add(std::hash<std::string_view>()(s));
    Add(s.size());
  }
  void Add(Time t) { Add(static_cast<uint64_t>(t.time_since_epoch().count())); }
  void Add(const std::optional<Time>& t) {
    Add(uint64_t{t.has_value()});
    if (t) Add(*t);
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 0xcbf29ce484222325ULL;
};

}  // namespace

uint64_t Autoscaler::StateDigest() const {
  Digest d;
  for (const auto& [name, ps] : pools_) {
    d.Add(name);
    for (int v :
         {int{ps.observed}, ps.observed_target, ps.provider_registered, int{ps.stockout},
          ps.expected_target.value_or(-1), int{ps.expected_target.has_value()}, ps.unreported,
          ps.backoff_level, ps.registered, ps.ready, ps.starting, ps.not_registered}) {
      d.Add(static_cast<uint64_t>(v));
    }
    d.Add(ps.stockout_reason);
    d.Add(ps.expected_touched);
    for (const ScaleUpRequest& r : ps.requests) {
      d.Add(static_cast<uint64_t>(r.remaining));
      d.Add(r.requested_at);
    }
    d.Add(ps.backoff_until);
    d.Add(ps.backoff_reason);
  }
  d.Add(nodes_.size());
  for (const auto& [name, mem] : nodes_) {
    d.Add(name);
    d.Add(mem.first_seen);
    d.Add(uint64_t{mem.ever_usable} * 2 + uint64_t{mem.broken_reported});
  }
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
      d.Add(static_cast<uint64_t>(ev.failures));
      d.Add(ev.retry_at);
      d.Add(ev.last_error);
    }
  }
  for (const auto* times : {&deleted_, &cooldown_, &unneeded_since_, &untainted_}) {
    d.Add(times->size());
    for (const auto& [name, t] : *times) {
      d.Add(name);
      d.Add(t);
    }
  }
  d.Add(marked_.size());
  for (const std::string& name : marked_) d.Add(name);
  // An unordered set: combine its members order-independently.
  uint64_t pending_sum = 0;
  for (const std::string& key : prev_pending_) pending_sum += std::hash<std::string>()(key);
  d.Add(pending_sum);
  d.Add(prev_pending_.size());
  d.Add(batch_start_);
  d.Add(batch_last_add_);
  d.Add(uint64_t{replan_});
  d.Add(static_cast<uint64_t>(pending_count_));
  for (const auto& [name, ws] : warm_) {
    d.Add(name);
    d.Add(static_cast<uint64_t>(ws.profile.current_slot()));
    d.Add(static_cast<uint64_t>(ws.profile.folded()));
    d.Add(std::bit_cast<uint64_t>(ws.profile.current_peak()));
    d.Add(static_cast<uint64_t>(ws.boot_estimate.value_or(Duration(-1)).count()));
    d.Add(ws.ledger.size());
    if (!ws.ledger.empty()) d.Add(ws.ledger.back().at);
  }
  d.Add(planned_pool_.size());
  d.Add(not_triggered_.size());
  for (const auto& [pod, message] : not_triggered_) {
    d.Add(pod);
    d.Add(message);
  }
  return d.value();
}

Time Autoscaler::NextDecisionTime(const StepContext& ctx) const {
  const Time now = ctx.now;
  Time next = Time::max();
  auto at = [&](Time t) {
    if (t > now) next = std::min(next, t);
  };
  for (const model::Pool& pool : config_.pools) {
    const PoolState& ps = pools_.at(pool.name);
    if (!ps.requests.empty()) at(ps.requests.front().requested_at + ProvisionTimeout(pool));
    if (ps.backoff_until) at(*ps.backoff_until);
    if (ps.expected_target) {
      at(ps.expected_touched + options_.observe_grace);
      at(ps.expected_touched + ProvisionTimeout(pool));
    }
  }
  if (ctx.next_starting_deadline) at(*ctx.next_starting_deadline);
  // Predictive pools: the next slot of the profile, the next slot entering the horizon, the
  // value/cost rule turning, a pre-warm charge leaving the 24 h window.
  for (const model::Pool& pool : config_.pools) {
    auto it = warm_.find(pool.name);
    if (it == warm_.end() || !pool.warm.predictive.enabled) continue;
    const WarmState& ws = it->second;
    const Duration slot = DemandProfile::kSlot;
    Time slot_start = Time(Duration((now.time_since_epoch() / slot) * slot));
    at(slot_start + slot);
    Time horizon_end = now + pool.warm.predictive.horizon;
    Time horizon_slot = Time(Duration((horizon_end.time_since_epoch() / slot) * slot));
    at(horizon_slot + slot - pool.warm.predictive.horizon);
    if (ws.next_prewarm) at(*ws.next_prewarm);
    for (const PrewarmCharge& c : ws.ledger) {
      at(c.at + std::chrono::hours(24));
      at(c.until);
    }
  }
  if (batch_start_) {
    at(batch_last_add_ + config_.scale_up.batch_idle);
    at(*batch_start_ + config_.scale_up.batch_max);
  }
  const Duration max_eviction = config_.scale_down.max_pod_eviction_time;
  for (const auto& [name, r] : removals_) {
    at(r.started + max_eviction);
    if (r.drain_started) at(*r.drain_started + max_eviction);
    if (r.all_evicted_at) at(*r.all_evicted_at + options_.pod_termination_wait);
    for (const auto& [key, ev] : r.pods) at(ev.retry_at);
  }
  for (const auto& [name, t] : cooldown_) at(t);
  for (const auto& [name, t] : unneeded_since_) at(t + config_.scale_down.unneeded_time);
  for (const auto& [name, t] : untainted_) at(t + options_.observe_grace);
  // Nodes younger than delayAfterAdd are not scale-down candidates yet; starting nodes become
  // unusable at their provision timeout (next_starting_deadline above).
  for (const auto& [name, pool] : ctx.pool_of) {
    const model::Node& node = *ctx.nodes.at(name);
    if (node.meta.creation_timestamp) {
      at(*node.meta.creation_timestamp + config_.scale_down.delay_after_add);
    }
  }
  return next;
}

void Autoscaler::ObservePools(StepContext& ctx) {
  const Time now = ctx.now;
  std::map<std::string_view, const PoolObservation*> reported;
  for (const PoolObservation& p : ctx.obs.pools) reported.emplace(p.pool, &p);

  std::map<std::string_view, int> previously_registered;
  for (auto& [name, ps] : pools_) {
    previously_registered[name] = ps.registered;
    ps.registered = ps.ready = ps.starting = 0;
  }

  for (const auto& [name, pool] : ctx.pool_of) {
    PoolState& ps = pools_[pool->name];
    auto removal = removals_.find(name);
    if (deleted_.contains(name) ||
        (removal != removals_.end() && removal->second.phase == Removal::Phase::kDeleting)) {
      ctx.node_class[name] = StepContext::NodeClass::kGone;
      continue;
    }
    ++ps.registered;
    const model::Node& node = *ctx.nodes.at(name);
    NodeMemory& mem = nodes_.find(name)->second;
    bool usable =
        node.ready && !HasStartupTaint(node) &&
        !(pool->template_node.allocatable.gpus() > 0 && node.allocatable.gpus() == 0);
    Time created = node.meta.creation_timestamp.value_or(mem.first_seen);
    Time deadline = created + ProvisionTimeout(*pool);
    if (usable) {
      ++ps.ready;
      ctx.node_class[name] = StepContext::NodeClass::kReady;
    } else if (now < deadline) {
      ++ps.starting;
      ctx.node_class[name] = StepContext::NodeClass::kStarting;
      if (!ctx.next_starting_deadline || deadline < *ctx.next_starting_deadline) {
        ctx.next_starting_deadline = deadline;
      }
    } else {
      ctx.node_class[name] = StepContext::NodeClass::kUnusable;
    }
    if (usable) mem.ever_usable = true;
  }

  for (const model::Pool& pool : config_.pools) {
    PoolState& ps = pools_[pool.name];
    // A node of the pool joined: the provider delivers again.
    if (ps.registered > previously_registered[pool.name]) {
      ps.backoff_level = 0;
      // Warm pools learn how long a node takes from the request to joining.
      auto ws = warm_.find(pool.name);
      if (ws != warm_.end() && !ps.requests.empty() && ps.requests.front().requested_at <= now) {
        Duration sample = now - ps.requests.front().requested_at;
        std::optional<Duration>& boot = ws->second.boot_estimate;
        boot = boot ? (*boot + sample) / 2 : sample;
      }
    }
    if (auto it = reported.find(pool.name); it != reported.end()) {
      ps.observed = true;
      ps.observed_target = it->second->target;
      ps.provider_registered = it->second->registered;
      ps.stockout = it->second->stockout;
      ps.stockout_reason = it->second->stockout_reason;
    } else {
      ps.observed = false;
      ps.observed_target = ps.registered;
      ps.provider_registered = ps.registered;
      ps.stockout = false;
      ps.stockout_reason.clear();
    }
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
}

void Autoscaler::SyncRequests(PoolState& ps, Time now) {
  ps.not_registered = std::max(0, ps.target() - ps.registered);
  int total = 0;
  for (const ScaleUpRequest& r : ps.requests) total += r.remaining;
  // Arrivals (or cancellations elsewhere) fill the oldest requests first.
  for (int gone = total - ps.not_registered; gone > 0 && !ps.requests.empty();) {
    int take = std::min(gone, ps.requests.front().remaining);
    ps.requests.front().remaining -= take;
    gone -= take;
    if (ps.requests.front().remaining == 0) ps.requests.pop_front();
  }
  // Nodes the loop did not ask for in this life (a restart, someone else's increase): count
  // them as requested now, the conservative choice for the timeout.
  if (total < ps.not_registered) ps.requests.push_back({ps.not_registered - total, now});
}

void Autoscaler::DropNewestRequests(PoolState& ps, int count) {
  for (int left = count; left > 0 && !ps.requests.empty();) {
    int take = std::min(left, ps.requests.back().remaining);
    ps.requests.back().remaining -= take;
    left -= take;
    if (ps.requests.back().remaining == 0) ps.requests.pop_back();
  }
}

void Autoscaler::HandlePoolFailures(StepContext& ctx) {
  const Time now = ctx.now;
  for (const model::Pool& pool : config_.pools) {
    PoolState& ps = pools_[pool.name];
    Duration timeout = ProvisionTimeout(pool);
    if (ps.stockout && !InBackoff(ps, now)) {
      Backoff(ps,
              ps.stockout_reason.empty()
                  ? std::string("the provider reports no capacity")
                  : fmt::format("the provider reports no capacity: {}", ps.stockout_reason),
              now);
      // A provider that removed the failed machines itself shows a target below the one the
      // loop expects: those requests are gone already. Cancelling them again would take
      // machines that are still coming (the good half of a partly failed scale-up).
      if (ps.observed && ps.expected_target && ps.unreported == 0 &&
          ps.observed_target < *ps.expected_target) {
        DropNewestRequests(ps, *ps.expected_target - ps.observed_target);
        ps.expected_target.reset();
        SyncRequests(ps, now);
        replan_ = true;
      }
      int cancel = ps.target() - std::max(ps.registered, ps.provider_registered);
      if (cancel > 0) {
        ctx.actions.push_back(PoolAction(
            Action::Kind::kDecreaseTarget, pool.name, cancel,
            fmt::format("cancel {} requested node(s): the provider reports no capacity", cancel)));
        ExpectTargetChange(ps, -cancel, now);
        replan_ = true;
      }
      // The cancelled nodes were the newest asked for; instances the provider has keep their
      // request time (and their timeout).
      DropNewestRequests(ps, cancel);
      SyncRequests(ps, now);
    } else if (!ps.requests.empty() && ps.not_registered > 0 &&
               now >= ps.requests.front().requested_at + timeout) {
      int cancel = ps.not_registered;
      std::string why =
          fmt::format("{} node(s) requested at {} did not register within {}", cancel,
                      FormatRfc3339(ps.requests.front().requested_at), FormatDuration(timeout));
      Backoff(ps, why, now);
      ctx.actions.push_back(PoolAction(Action::Kind::kDecreaseTarget, pool.name, cancel,
                                       fmt::format("cancel: {}", why)));
      ExpectTargetChange(ps, -cancel, now);
      ps.requests.clear();
      SyncRequests(ps, now);
      replan_ = true;
    }
  }
  // A node the loop saw being provisioned that never became usable: its pool does not deliver.
  // (A node that was already old when first seen, or was usable before, blames no pool.)
  for (const auto& [name, cls] : ctx.node_class) {
    if (cls != StepContext::NodeClass::kUnusable) continue;
    NodeMemory& mem = nodes_.find(name)->second;
    if (mem.ever_usable || mem.broken_reported) continue;
    mem.broken_reported = true;
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
    replan_ = true;
  }
}

void Autoscaler::UpdateBatch(StepContext& ctx) {
  bool added = false;
  const int32_t cutoff = config_.scale_up.expendable_priority_cutoff;
  for (const model::Pod* pod : ctx.obs.pods) {
    if (!planner::IsPendingForScaleUp(*pod, cutoff)) continue;
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

bool Autoscaler::ShouldPlanScaleUp(const StepContext& ctx, bool scan) const {
  // Warm placeholders are planned at every periodic pass, and at once for a new pre-warm.
  if (!ctx.placeholders.empty()) {
    if (scan) return true;
    for (const auto& [name, wp] : ctx.warm)
      if (wp.approved > 0) return true;
  }
  if (ctx.pending.empty()) return false;
  if (replan_) return true;
  // A backoff ran out since the last plan: its pool may take the waiting pods now.
  for (const auto& [name, ps] : pools_) {
    if (ps.backoff_until && *ps.backoff_until <= ctx.now &&
        (!last_planned_ || *ps.backoff_until > *last_planned_)) {
      return true;
    }
  }
  if (batch_start_) {
    return ctx.now >= batch_last_add_ + config_.scale_up.batch_idle ||
           ctx.now >= *batch_start_ + config_.scale_up.batch_max;
  }
  return scan;
}

bool Autoscaler::RunScaleUp(StepContext& ctx) {
  const Time now = ctx.now;
  planner::PlannerInput in = ctx.base;
  for (const auto& [name, node] : ctx.nodes) {
    auto cls = ctx.node_class.find(name);
    if (cls == ctx.node_class.end()) {
      in.nodes.push_back(node);  // unmanaged: its free capacity counts
      continue;
    }
    switch (cls->second) {
      case StepContext::NodeClass::kGone:
      case StepContext::NodeClass::kStarting:  // modelled from the template as upcoming
        continue;
      case StepContext::NodeClass::kUnusable: {
        model::Node& copy = ctx.Copy(*node);  // counts towards the pool's size, holds nothing
        copy.unschedulable = true;
        in.nodes.push_back(&copy);
        continue;
      }
      case StepContext::NodeClass::kReady:
        break;
    }
    if (removals_.contains(name)) {
      model::Node& copy = ctx.Copy(*node);
      copy.unschedulable = true;
      if (!HasTaint(copy, kToBeDeletedTaint)) {
        copy.taints.push_back(
            {std::string(kToBeDeletedTaint), "", model::TaintEffect::kNoSchedule});
      }
      in.nodes.push_back(&copy);
      continue;
    }
    in.nodes.push_back(node);
  }
  for (const auto& [name, ps] : pools_) {
    if (ps.upcoming() > 0) in.upcoming[name] = ps.upcoming();
    if (InBackoff(ps, now)) in.backoff_until[name] = *ps.backoff_until;
  }
  in.placeholders = ctx.placeholders;

  planner::ScaleUpPlan plan = planner::ScaleUpPlanner().Plan(in, options_.scale_up);
  batch_start_.reset();
  last_planned_ = now;

  for (auto& [name, ws] : warm_) {
    auto it = plan.warm_unmet.find(name);
    ws.unmet = it == plan.warm_unmet.end() ? "" : it->second;
  }

  bool any = false;
  for (planner::ScaleUp su : plan.scale_ups) {
    const model::Pool* pool = config_.FindPool(su.pool);
    if (pool == nullptr) continue;
    PoolState& ps = pools_[su.pool];
    std::string reason = su.reason;
    if (su.warm_add > 0) {
      const StepContext::WarmPool& wp = ctx.warm.at(su.pool);
      // Spare and headroom placeholders fit upcoming nodes: while the pool has some, more warm
      // nodes wait for them (a guard against a template larger than the real nodes). New
      // pre-warm nodes approved in this Step may go.
      int allowed = ps.upcoming() > 0 ? wp.approved : su.warm_add;
      if (su.warm_add > allowed) {
        su.add -= su.warm_add - allowed;
        su.warm_add = allowed;
      }
      std::vector<std::string> why;
      if (wp.spare > 0) why.push_back(fmt::format("warm: spareNodes {}", wp.spare));
      if (!wp.headroom.empty()) why.push_back(fmt::format("warm: headroom {}", wp.headroom_words));
      if (wp.prewarm > 0) why.push_back(wp.prewarm_reason);
      std::string words = fmt::format("{}", fmt::join(why, "; "));
      reason = su.warm_add == su.add ? words
                                     : fmt::format("{}; +{} for {}", su.reason, su.warm_add, words);
      if (su.warm_add > 0) {
        WarmState& ws = warm_.at(su.pool);
        ws.reason = fmt::format("{}: added {} node(s) at {}", words, su.warm_add,
                                FormatRfc3339(now));
        ctx.actions.push_back(
            Event("ConfigMap", "", "WarmScaleUp",
                  fmt::format("pool {} {}->{} (max: {}): {} warm node(s): {}", su.pool,
                              ps.target(), ps.target() + su.add, pool->max, su.warm_add, words)));
      }
    }
    if (su.add <= 0) continue;
    int from = ps.target();
    int to = from + su.add;
    Action a = PoolAction(Action::Kind::kIncreasePool, su.pool, su.add, reason);
    a.pods = su.pods;
    ctx.actions.push_back(std::move(a));
    ExpectTargetChange(ps, su.add, now);
    ps.requests.push_back({su.add, now});
    ps.not_registered += su.add;
    last_scale_up_ = ScaleUpRecord{now, su.pool, from, to, su.pods, reason};
    std::string message = fmt::format("pod triggered scale-up: [{{{} {}->{} (max: {})}}]", su.pool,
                                      from, to, pool->max);
    for (const std::string& pod : su.pods) {
      if (warm_.contains(su.pool)) planned_pool_[pod] = su.pool;
      ctx.actions.push_back(Event("Pod", pod, "TriggeredScaleUp", message));
      not_triggered_.erase(pod);
    }
    any = true;
  }
  unschedulable_.clear();
  waiting_for_capacity_.clear();
  waiting_for_capacity_.insert(plan.fits_existing.begin(), plan.fits_existing.end());
  for (const planner::ScaleUp& su : plan.scale_ups)
    waiting_for_capacity_.insert(su.pods.begin(), su.pods.end());
  for (const planner::Unschedulable& u : plan.unschedulable) {
    unschedulable_[u.pod] = u;
    std::string message = "pod didn't trigger scale-up: ";
    std::string_view sep;
    for (const auto& [pool, reason] : u.reasons) {
      message += fmt::format("{}{}: {}", sep, pool, reason);
      sep = "; ";
    }
    std::string& told = not_triggered_[u.pod];
    if (told == message) continue;
    told = message;
    ctx.actions.push_back(Event("Pod", u.pod, "NotTriggerScaleUp", std::move(message)));
  }
  return any;
}

void Autoscaler::AdvanceRemovals(StepContext& ctx) {
  std::vector<std::string> names;
  for (const auto& [name, r] : removals_) names.push_back(name);
  for (const std::string& name : names) {
    auto it = removals_.find(name);
    if (it != removals_.end()) AdvanceRemoval(ctx, it->second);
  }
}

void Autoscaler::AdvanceRemoval(StepContext& ctx, Removal& r) {
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
  if (r.phase != Removal::Phase::kDraining) return;

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
        ctx.actions.push_back(Event("Pod", pod, "ScaleDown", "deleting pod for node scale down"));
      }
    }
    Action a = NodeAction(Action::Kind::kEvictPods, r.node, r.pool,
                          fmt::format("drain for scale-down ({})", KindWord(r.kind)));
    a.pods = std::move(evict);
    ctx.actions.push_back(std::move(a));
  }

  bool all_evicted = std::all_of(r.pods.begin(), r.pods.end(), [](const auto& e) {
    return e.second.state == PodEviction::State::kEvicted;
  });
  if (all_evicted) {
    if (!r.all_evicted_at) r.all_evicted_at = now;
    if (present.empty()) {
      ctx.actions.push_back(
          NodeAction(Action::Kind::kDeleteNode, r.node, r.pool,
                     fmt::format("scale-down: {}, {}", KindWord(r.kind), r.detail)));
      r.phase = Removal::Phase::kDeleting;
      if (auto ps = pools_.find(r.pool); ps != pools_.end()) {
        ExpectTargetChange(ps->second, -1, now);
        --ps->second.registered;
        SyncRequests(ps->second, now);
      }
    } else if (now >= *r.all_evicted_at + options_.pod_termination_wait) {
      RollBack(r.node,
               fmt::format("evicted pods still on the node {} after their eviction: {}",
                           FormatDuration(options_.pod_termination_wait), fmt::join(present, ", ")),
               now, ctx.actions);
    }
    return;
  }
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

void Autoscaler::RollBack(const std::string& node, const std::string& why, Time now,
                          std::vector<Action>& out) {
  auto it = removals_.find(node);
  if (it == removals_.end()) return;
  std::string pool = it->second.pool;
  untainted_[node] = now;
  out.push_back(NodeAction(Action::Kind::kUntaintNode, node, pool,
                           fmt::format("scale-down rolled back: {}", why)));
  out.push_back(Event("Node", node, "ScaleDownFailed",
                      fmt::format("failed to remove the node, scale-down aborted and the node "
                                  "untainted: {}",
                                  why),
                      /*warning=*/true));
  cooldown_[node] = now + options_.removal_cooldown.value_or(config_.scale_down.unneeded_time);
  unneeded_since_.erase(node);
  last_scale_down_ = ScaleDownRecord{now, node, pool, "failed", why};
  removals_.erase(it);
}

void Autoscaler::AdoptTaintedNodes(StepContext& ctx) {
  std::set<std::string_view> orphans;
  for (const auto& [name, pool] : ctx.pool_of) {
    if (removals_.contains(name) || deleted_.contains(name)) continue;
    if (!HasTaint(*ctx.nodes.at(name), kToBeDeletedTaint)) continue;
    // Untainted a moment ago and the observation does not show it yet.
    auto u = untainted_.find(name);
    if (u != untainted_.end() && ctx.now < u->second + options_.observe_grace) continue;
    orphans.insert(name);
  }
  if (orphans.empty()) return;

  // Ask the planner whether each one would still go if it were not tainted: then resume its
  // removal, else take the taint off.
  planner::PlannerInput in = ctx.base;
  for (const auto& [name, node] : ctx.nodes) {
    auto cls = ctx.node_class.find(name);
    if (cls != ctx.node_class.end() && cls->second == StepContext::NodeClass::kGone) continue;
    if (orphans.contains(name)) {
      model::Node& copy = ctx.Copy(*node);
      std::erase_if(copy.taints, [](const model::Taint& t) { return t.key == kToBeDeletedTaint; });
      in.nodes.push_back(&copy);
    } else if (removals_.contains(name) && !HasTaint(*node, kToBeDeletedTaint)) {
      model::Node& copy = ctx.Copy(*node);
      copy.taints.push_back({std::string(kToBeDeletedTaint), "", model::TaintEffect::kNoSchedule});
      in.nodes.push_back(&copy);
    } else {
      in.nodes.push_back(node);
    }
  }
  planner::ScaleDownOptions options;
  options.rate_limit = false;
  options.evict_training_pods = options_.evict_training_pods;
  options.may_remove = [&](const model::Node& n) {
    auto cd = cooldown_.find(n.name());
    return orphans.contains(n.name()) && (cd == cooldown_.end() || cd->second <= ctx.now);
  };
  planner::ScaleDownPlan plan = planner::ScaleDownPlanner().Plan(in, options);

  std::set<std::string_view> resumed;
  for (const planner::ScaleDown& sd : plan.scale_downs) {
    if (!orphans.contains(sd.node)) continue;
    Removal r;
    r.node = sd.node;
    r.pool = sd.pool;
    r.kind = sd.kind;
    r.detail = sd.detail;
    r.started = ctx.now;
    r.taint_confirmed = true;
    Removal& stored = removals_[sd.node] = std::move(r);
    resumed.insert(stored.node);
    ctx.actions.push_back(
        Event("Node", sd.node, "ScaleDown",
              fmt::format("resuming the removal of the node found with the {} taint: {}, {}",
                          kToBeDeletedTaint, KindWord(sd.kind), sd.detail)));
    last_scale_down_ = ScaleDownRecord{ctx.now, sd.node, sd.pool, "started", sd.detail};
    AdvanceRemoval(ctx, stored);
  }
  for (std::string_view name : orphans) {
    if (resumed.contains(name)) continue;
    std::string why = "no longer removable";
    for (const planner::Keep& k : plan.keep) {
      if (k.node == name) why = fmt::format("no longer removable: {}", k.reason);
    }
    const model::Pool* pool = ctx.pool_of.at(name);
    untainted_[std::string(name)] = ctx.now;
    ctx.actions.push_back(NodeAction(
        Action::Kind::kUntaintNode, std::string(name), pool->name,
        fmt::format("found with the {} taint and not being removed: {}", kToBeDeletedTaint, why)));
  }
}

std::string Autoscaler::NotRemovableReason(const StepContext& ctx, std::string_view node) const {
  if (auto cd = cooldown_.find(node); cd != cooldown_.end() && cd->second > ctx.now) {
    return fmt::format("its removal failed recently; not tried again before {}",
                       FormatRfc3339(cd->second));
  }
  if (auto p = ctx.pool_of.find(node); p != ctx.pool_of.end()) {
    const PoolState& ps = pools_.at(p->second->name);
    if (ps.upcoming() > 0) {
      return fmt::format("pool {} is scaling up ({} node(s) upcoming)", p->second->name,
                         ps.upcoming());
    }
  }
  return "";
}

void Autoscaler::RunScaleDown(StepContext& ctx, bool may_start) {
  const Time now = ctx.now;
  std::set<std::string> unneeded;
  if (!config_.scale_down.enabled) {
    unneeded_since_.clear();
    kept_.clear();
    UpdateCandidateMarks(ctx, unneeded);
    return;
  }
  planner::PlannerInput in = ctx.base;
  for (const auto& [name, node] : ctx.nodes) {
    auto cls = ctx.node_class.find(name);
    if (cls != ctx.node_class.end() && cls->second == StepContext::NodeClass::kGone) continue;
    if (removals_.contains(name) && !HasTaint(*node, kToBeDeletedTaint)) {
      model::Node& copy = ctx.Copy(*node);
      copy.taints.push_back({std::string(kToBeDeletedTaint), "", model::TaintEffect::kNoSchedule});
      in.nodes.push_back(&copy);
      continue;
    }
    in.nodes.push_back(node);
  }
  for (const auto& [name, ps] : pools_)
    if (ps.upcoming() > 0) in.upcoming[name] = ps.upcoming();
  std::map<std::string, std::string> warm_hosts = BindWarmPlaceholders(ctx, in);

  planner::ScaleDownPlanner planner;
  std::vector<std::string> list;
  planner::ScaleDownOptions all;
  all.rate_limit = false;
  all.evict_training_pods = options_.evict_training_pods;
  kept_ = planner.Plan(in, all, &list).keep;
  for (planner::Keep& k : kept_) {
    if (auto it = warm_hosts.find(k.node); it != warm_hosts.end()) k.reason = it->second;
  }
  for (std::string& name : list)
    if (!removals_.contains(name)) unneeded.insert(std::move(name));
  std::erase_if(unneeded_since_, [&](const auto& e) { return !unneeded.contains(e.first); });
  for (const std::string& name : unneeded) unneeded_since_.try_emplace(name, now);
  UpdateCandidateMarks(ctx, unneeded);
  if (!may_start) return;

  std::set<std::string, std::less<>> ripe;
  for (const auto& [name, since] : unneeded_since_) {
    if (now >= since + config_.scale_down.unneeded_time && NotRemovableReason(ctx, name).empty()) {
      ripe.insert(name);
    }
  }
  if (ripe.empty()) return;
  planner::ScaleDownOptions options;
  options.rate_limit = true;
  options.evict_training_pods = options_.evict_training_pods;
  options.may_remove = [&](const model::Node& n) { return ripe.contains(n.name()); };
  options.not_yet_reason = [&](const model::Node& n) {
    std::string why = NotRemovableReason(ctx, n.name());
    if (!why.empty()) return why;
    auto since = unneeded_since_.find(n.name());
    if (since == unneeded_since_.end()) return std::string("not unneeded");
    return fmt::format("unneeded for {} of scaleDown.unneededTime {}", Seconds(now - since->second),
                       FormatDuration(config_.scale_down.unneeded_time));
  };
  planner::ScaleDownPlan plan = planner.Plan(in, options);

  // Non-empty drains per pool, counting the ones still running from earlier passes.
  std::map<std::string, int> draining;
  for (const auto& [name, r] : removals_) {
    if (r.kind == planner::RemovalKind::kUnderutilized && r.phase != Removal::Phase::kDeleting) {
      ++draining[r.pool];
    }
  }
  for (const planner::ScaleDown& sd : plan.scale_downs) {
    if (sd.kind == planner::RemovalKind::kUnderutilized) {
      if (draining[sd.pool] >= config_.scale_down.max_non_empty_per_pool) continue;
      ++draining[sd.pool];
    }
    StartRemoval(ctx, sd);
  }
}

void Autoscaler::StartRemoval(StepContext& ctx, const planner::ScaleDown& sd) {
  Removal r;
  r.node = sd.node;
  r.pool = sd.pool;
  r.kind = sd.kind;
  r.detail = sd.detail;
  r.started = ctx.now;
  std::string why = fmt::format("{}, {}", KindWord(sd.kind), sd.detail);
  ctx.actions.push_back(NodeAction(Action::Kind::kTaintNode, sd.node, sd.pool, why));
  ctx.actions.push_back(
      Event("Node", sd.node, "ScaleDown",
            fmt::format("marked the node as toBeDeleted/unschedulable: {}; {} pod(s) to evict", why,
                        sd.evict.size())));
  unneeded_since_.erase(sd.node);
  last_scale_down_ = ScaleDownRecord{ctx.now, sd.node, sd.pool, "started", why};
  removals_[sd.node] = std::move(r);
}

void Autoscaler::UpdateCandidateMarks(StepContext& ctx, const std::set<std::string>& unneeded) {
  if (!options_.mark_deletion_candidates) return;
  for (const std::string& name : unneeded) {
    const model::Node* node = ctx.Find(name);
    if (node == nullptr || marked_.contains(name)) continue;
    marked_.insert(name);
    if (HasTaint(*node, kDeletionCandidateTaint)) continue;
    ctx.actions.push_back(NodeAction(Action::Kind::kMarkCandidate, name,
                                     ctx.pool_of.contains(name) ? ctx.pool_of.at(name)->name : "",
                                     "unneeded"));
  }
  for (const auto& [name, pool] : ctx.pool_of) {
    bool marked = marked_.contains(name) || HasTaint(*ctx.nodes.at(name), kDeletionCandidateTaint);
    if (!marked || removals_.contains(name)) continue;
    if (unneeded.contains(std::string(name))) continue;
    ctx.actions.push_back(
        NodeAction(Action::Kind::kUnmarkCandidate, std::string(name), pool->name, "needed again"));
    marked_.erase(std::string(name));
  }
}

void Autoscaler::Cleanup(StepContext& ctx) {
  auto unseen = [&](const auto& e) { return !ctx.nodes.contains(e.first); };
  std::erase_if(nodes_, unseen);
  std::erase_if(deleted_, unseen);
  std::erase_if(untainted_, [&](const auto& e) {
    const model::Node* n = ctx.Find(e.first);
    return n == nullptr || !HasTaint(*n, kToBeDeletedTaint);
  });
  std::erase_if(unneeded_since_, unseen);
  std::erase_if(cooldown_, [&](const auto& e) { return e.second <= ctx.now; });
  std::erase_if(marked_, [&](const std::string& n) { return !ctx.nodes.contains(n); });
  std::erase_if(not_triggered_, [&](const auto& e) { return !ctx.pending_keys.contains(e.first); });
  std::erase_if(unschedulable_, [&](const auto& e) { return !ctx.pending_keys.contains(e.first); });
  std::erase_if(waiting_for_capacity_, [&](const auto& k) { return !ctx.pending_keys.contains(k); });
  std::erase_if(planned_pool_, [&](const auto& e) { return !ctx.pending_keys.contains(e.first); });
  pending_count_ = static_cast<int>(ctx.pending.size());
  prev_pending_ = std::move(ctx.pending_keys);
}

void Autoscaler::ComputeWakeup(const StepContext& ctx) {
  const Time now = ctx.now;
  Time w = Time::max();
  auto at = [&w](Time t) { w = std::min(w, t); };
  if (batch_start_) {
    at(std::min(batch_last_add_ + config_.scale_up.batch_idle,
                *batch_start_ + config_.scale_up.batch_max));
  }
  if (ctx.next_starting_deadline) at(*ctx.next_starting_deadline);
  for (const model::Pool& pool : config_.pools) {
    const PoolState& ps = pools_.at(pool.name);
    if (!ps.requests.empty()) at(ps.requests.front().requested_at + ProvisionTimeout(pool));
    if (pending_count_ > 0 && InBackoff(ps, now)) at(*ps.backoff_until);
    if (ps.expected_target && ps.unreported == 0) {
      at(ps.expected_touched + options_.observe_grace);
    }
  }
  const Duration max_eviction = config_.scale_down.max_pod_eviction_time;
  for (const auto& [name, r] : removals_) {
    if (r.phase == Removal::Phase::kTainting) at(r.started + max_eviction);
    if (r.phase != Removal::Phase::kDraining) continue;
    if (r.all_evicted_at) {
      at(*r.all_evicted_at + options_.pod_termination_wait);
      continue;
    }
    at(*r.drain_started + max_eviction);
    for (const auto& [key, ev] : r.pods)
      if (ev.state == PodEviction::State::kRetry) at(ev.retry_at);
  }
  if (replan_ || !outbox_.empty()) at(now);
  timers_wakeup_ = w;
  wakeup_ = std::max(std::min(w, *last_scan_ + config_.scan_interval), now);
}

void Autoscaler::Backoff(PoolState& ps, std::string reason, Time now) {
  if (InBackoff(ps, now)) return;  // one failure, one backoff
  Duration d = config_.scale_up.backoff_initial;
  for (int i = 0; i < ps.backoff_level && d < config_.scale_up.backoff_max; ++i) d *= 2;
  d = std::min(d, config_.scale_up.backoff_max);
  ps.backoff_until = now + d;
  ps.backoff_reason = std::move(reason);
  ++ps.backoff_level;
}

void Autoscaler::ExpectTargetChange(PoolState& ps, int delta, Time now) {
  ps.expected_target = std::max(0, ps.target() + delta);
  ++ps.unreported;
  ps.expected_touched = now;
}

void Autoscaler::OnIncreaseResult(const std::string& pool, int count, const Result<void>& result,
                                  Time now) {
  quiet_.reset();  // feedback changes state outside a Step
  auto it = pools_.find(pool);
  if (it == pools_.end()) return;
  PoolState& ps = it->second;
  ps.unreported = std::max(0, ps.unreported - 1);
  ps.expected_touched = now;
  if (result) return;
  if (ps.expected_target) *ps.expected_target = std::max(0, *ps.expected_target - count);
  DropNewestRequests(ps, count);  // these nodes will not come
  ps.not_registered = std::max(0, ps.target() - ps.registered);
  Backoff(ps, fmt::format("increasing the pool by {} failed: {}", count, result.error().message()),
          now);
  replan_ = true;
  Wake(now);
}

void Autoscaler::OnDecreaseResult(const std::string& pool, int count, const Result<void>& result,
                                  Time now) {
  quiet_.reset();  // feedback changes state outside a Step
  auto it = pools_.find(pool);
  if (it == pools_.end()) return;
  PoolState& ps = it->second;
  ps.unreported = std::max(0, ps.unreported - 1);
  ps.expected_touched = now;
  if (result) return;
  if (ps.expected_target) *ps.expected_target += count;
  ps.not_registered = std::max(0, ps.target() - ps.registered);
}

void Autoscaler::OnTaintResult(const std::string& node, const Result<void>& result, Time now) {
  quiet_.reset();  // feedback changes state outside a Step
  auto it = removals_.find(node);
  if (it == removals_.end() || it->second.phase != Removal::Phase::kTainting) return;
  if (result) {
    it->second.taint_confirmed = true;
  } else {
    RollBack(node, fmt::format("tainting the node failed: {}", result.error().message()), now,
             outbox_);
  }
  Wake(now);
}

void Autoscaler::OnEvictResult(const std::string& node, const std::string& pod,
                               const Result<void>& result, Time now) {
  quiet_.reset();  // feedback changes state outside a Step
  auto it = removals_.find(node);
  if (it == removals_.end() || it->second.phase != Removal::Phase::kDraining) return;
  Removal& r = it->second;
  auto ev = r.pods.find(pod);
  if (ev == r.pods.end() || ev->second.state != PodEviction::State::kInFlight) return;
  PodEviction& e = ev->second;
  if (result || result.error().code() == Error::Code::kNotFound) {
    e.state = PodEviction::State::kEvicted;
    Wake(now);
    return;
  }
  ++e.failures;
  Duration delay = options_.eviction_retry_initial;
  for (int i = 1; i < e.failures && delay < options_.eviction_retry_max; ++i) delay *= 2;
  delay = std::min(delay, options_.eviction_retry_max);
  e.state = PodEviction::State::kRetry;
  e.retry_at = now + delay;
  e.last_error = result.error().message();
  Wake(std::min(e.retry_at, *r.drain_started + config_.scale_down.max_pod_eviction_time));
}

void Autoscaler::OnDeleteResult(const std::string& node, const Result<void>& result, Time now) {
  quiet_.reset();  // feedback changes state outside a Step
  auto it = removals_.find(node);
  if (it == removals_.end() || it->second.phase != Removal::Phase::kDeleting) return;
  Removal& r = it->second;
  auto ps = pools_.find(r.pool);
  if (ps != pools_.end()) {
    ps->second.unreported = std::max(0, ps->second.unreported - 1);
    ps->second.expected_touched = now;
  }
  if (result || result.error().code() == Error::Code::kNotFound) {
    std::string why = fmt::format("{}, {}", KindWord(r.kind), r.detail);
    outbox_.push_back(
        Event("Node", node, "ScaleDown", fmt::format("node removed by tidepool: {}", why)));
    last_scale_down_ = ScaleDownRecord{now, node, r.pool, "deleted", why};
    deleted_[node] = now;
    removals_.erase(it);
  } else {
    if (ps != pools_.end() && ps->second.expected_target) ++*ps->second.expected_target;
    RollBack(node, fmt::format("deleting the node failed: {}", result.error().message()), now,
             outbox_);
  }
  Wake(now);
}

Status Autoscaler::GetStatus() const {
  Status s;
  s.last_step = last_step_;
  Time now = last_step_.value_or(Time{});
  for (const model::Pool& pool : config_.pools) {
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
      p.backoff_reason = ps.backoff_reason;
    }
    p.stockout = ps.stockout;
    if (auto it = warm_.find(pool.name); it != warm_.end()) {
      const WarmState& ws = it->second;
      p.warm = true;
      p.warm_spare_nodes = pool.warm.spare_nodes;
      std::vector<std::string> headroom;
      for (model::ResourceId id : pool.warm.headroom_set) {
        headroom.push_back(fmt::format("{} {}", model::ResourceName(id),
                                       model::FormatAmount(id, pool.warm.headroom.Get(id))));
      }
      p.warm_headroom = fmt::format("{}", fmt::join(headroom, ", "));
      p.warm_predictive = pool.warm.predictive.enabled;
      p.warm_demand = ws.demand;
      if (ws.prediction.demand > 0) {
        p.warm_predicted = ws.prediction.demand;
        p.warm_confidence = ws.prediction.confidence;
        p.warm_predicted_at = ws.prediction.at;
      }
      p.warm_prewarm_nodes = ws.prewarm_nodes;
      for (const PrewarmCharge& c : ws.ledger)
        if (c.at + std::chrono::hours(24) > now) p.warm_spend_24h += c.cost;
      p.warm_max_cost_per_day = pool.warm.predictive.max_cost_per_day;
      p.warm_reason = ws.unmet.empty() ? ws.reason
                                       : fmt::format("{} (warm room not all made: {})", ws.reason,
                                                     ws.unmet);
    }
    s.pools.push_back(std::move(p));
  }
  s.last_scale_up = last_scale_up_;
  s.last_scale_down = last_scale_down_;
  for (const auto& [name, since] : unneeded_since_) s.unneeded.push_back({name, since});
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
  s.kept = kept_;
  s.pending_pods = pending_count_;
  s.batch_open_since = batch_start_;
  for (const auto& [pod, u] : unschedulable_) s.unschedulable.push_back(u);
  s.waiting_for_capacity.assign(waiting_for_capacity_.begin(), waiting_for_capacity_.end());
  return s;
}

// --- Warm capacity --------------------------------------------------------------------------

namespace {

constexpr std::string_view kWarmNamespace = "tidepool-warm";
constexpr int kWarmStateVersion = 1;

// The resource a pool's demand is counted in: GPUs when its nodes have them, else CPU cores.
model::ResourceId PrimaryResource(const model::Pool& pool) {
  if (pool.template_node.allocatable.gpus() > 0) {
    return model::InternResource(model::kNvidiaGpu);
  }
  return model::kCpu;
}

double Units(model::ResourceId id, int64_t amount) {
  return id == model::kCpu ? static_cast<double>(amount) / 1000.0 : static_cast<double>(amount);
}

std::string_view UnitWord(model::ResourceId id) {
  return id == model::kCpu ? "CPU cores" : model::ResourceName(id);
}

double Hours(Duration d) { return std::chrono::duration<double, std::ratio<3600>>(d).count(); }

// A placeholder pod: pinned to `pool` (node selector, tolerating its template's taints), never
// sent anywhere. `node` binds it for the scale-down simulation.
model::Pod MakePlaceholder(const model::Pool& pool, std::string name, const model::Resources& req,
                           bool whole, int32_t priority, std::string node = "") {
  model::Pod p;
  p.meta.name = std::move(name);
  p.meta.namespace_ = std::string(kWarmNamespace);
  p.meta.annotations[std::string(planner::kWarmPoolAnnotation)] = pool.name;
  if (whole) p.meta.annotations[std::string(planner::kWarmWholeNodeAnnotation)] = "true";
  p.node_selector[std::string(model::kLabelPool)] = pool.name;
  for (const model::Taint& t : pool.template_node.taints) {
    p.tolerations.push_back({t.key, model::TolerationOp::kExists, "", t.effect, std::nullopt});
  }
  model::Container c;
  c.name = "warm";
  req.ForEach([&](model::ResourceId id, int64_t v) {
    if (id != model::kPods && v > 0) c.requests.Set(id, v);
  });
  p.containers.push_back(std::move(c));
  p.priority = priority;
  p.node_name = std::move(node);
  p.phase = p.node_name.empty() ? model::PodPhase::kPending : model::PodPhase::kRunning;
  p.Finalize();
  return p;
}

}  // namespace

bool Autoscaler::HasPredictive() const {
  for (const model::Pool& p : config_.pools)
    if (p.warm.predictive.enabled) return true;
  return false;
}

Duration Autoscaler::BootEstimate(const model::Pool& pool) const {
  if (auto it = warm_.find(pool.name); it != warm_.end() && it->second.boot_estimate) {
    return *it->second.boot_estimate;
  }
  return pool.boot_delay.value_or(config_.provider.boot_delay.value_or(std::chrono::minutes(10)));
}

void Autoscaler::UpdateWarm(StepContext& ctx, bool scan) {
  if (warm_.empty()) return;
  std::map<std::string_view, double> demand;
  for (const model::Pod* pod : ctx.obs.pods) {
    if (pod->node_name.empty() || pod->IsTerminal()) continue;
    auto pool = ctx.pool_of.find(pod->node_name);
    if (pool == ctx.pool_of.end() || !warm_.contains(pool->second->name)) continue;
    StepContext::NodeLoad& load = ctx.loads[pool->first];
    load.requested += pod->requests;
    if (!MustLeave(*pod)) continue;
    load.busy = true;
    model::ResourceId id = PrimaryResource(*pool->second);
    demand[pool->second->name] += Units(id, pod->requests.Get(id));
  }
  for (const model::Pod* pod : ctx.pending) {
    if (planned_pool_.empty()) break;
    auto planned = planned_pool_.find(pod->Key());
    if (planned == planned_pool_.end()) continue;
    const model::Pool* pool = config_.FindPool(planned->second);
    if (pool == nullptr) continue;
    model::ResourceId id = PrimaryResource(*pool);
    demand[pool->name] += Units(id, pod->requests.Get(id));
  }
  const int32_t priority = config_.scale_up.expendable_priority_cutoff;
  for (const model::Pool& pool : config_.pools) {
    auto wit = warm_.find(pool.name);
    if (wit == warm_.end()) continue;
    WarmState& ws = wit->second;
    StepContext::WarmPool& wp = ctx.warm[pool.name];
    // What one idle node of the pool offers pods: the template less its DaemonSets.
    model::Resources room = pool.template_node.allocatable;
    for (const model::Pod* d : planner::DaemonSetPodsFor(pool.template_node, ctx.obs.daemon_sets)) {
      d->requests.ForEach([&](model::ResourceId id, int64_t v) {
        room.Set(id, std::max<int64_t>(0, room.Get(id) - v));
      });
    }
    room.Set(model::kPods, 0);
    wp.whole_request = room;
    wp.spare = pool.warm.spare_nodes;
    // Headroom in as few placeholders as keep each within one node.
    if (!pool.warm.headroom_set.empty()) {
      int64_t parts = 1;
      for (model::ResourceId id : pool.warm.headroom_set) {
        int64_t per_node = std::max<int64_t>(1, room.Get(id));
        parts = std::max(parts, (pool.warm.headroom.Get(id) + per_node - 1) / per_node);
      }
      model::Resources chunk;
      std::vector<std::string> words;
      for (model::ResourceId id : pool.warm.headroom_set) {
        int64_t h = pool.warm.headroom.Get(id);
        chunk.Set(id, (h + parts - 1) / parts);
        words.push_back(fmt::format("{} {}", model::ResourceName(id), model::FormatAmount(id, h)));
      }
      wp.headroom.assign(static_cast<size_t>(parts), chunk);
      wp.headroom_words = fmt::format("{}", fmt::join(words, ", "));
    }

    ws.demand = demand.contains(pool.name) ? demand[pool.name] : 0;
    if (pool.warm.predictive.enabled) {
      ws.profile.Observe(ctx.now, ws.demand);
      model::ResourceId id = PrimaryResource(pool);
      double pending_units = 0;
      for (const model::Pod* pod : ctx.pending) {
        if (planned_pool_.contains(pod->Key())) continue;  // counted in the demand already
        int64_t amount = pod->requests.Get(id);
        if (amount > 0 && sched::CheckNodeStatic(*pod, pool.template_node).fits()) {
          pending_units += Units(id, amount);
        }
      }
      // Free room on the pool's busy nodes takes part of a burst without any new node.
      double free_units = 0;
      for (const auto& [name, p] : ctx.pool_of) {
        if (p != &pool || ctx.node_class.at(name) != StepContext::NodeClass::kReady) continue;
        if (removals_.contains(name) || HasTaint(*ctx.nodes.at(name), kToBeDeletedTaint)) continue;
        auto load = ctx.loads.find(name);
        if (load == ctx.loads.end() || !load->second.busy) continue;
        int64_t free = ctx.nodes.at(name)->allocatable.Get(id) - load->second.requested.Get(id);
        free_units += Units(id, std::max<int64_t>(0, free));
      }
      PlanPrewarm(ctx, pool, ws, pending_units, free_units, scan);
    }

    auto add = [&](std::string kind, int i, const model::Resources& req, bool whole) {
      ctx.warm_pods.push_back(MakePlaceholder(
          pool, fmt::format("warm-{}-{}-{}", pool.name, kind, i), req, whole, priority));
      ctx.placeholders.push_back(&ctx.warm_pods.back());
    };
    for (int i = 0; i < wp.spare; ++i) add("spare", i, wp.whole_request, true);
    for (int i = 0; i < wp.prewarm; ++i) add("prewarm", i, wp.whole_request, true);
    for (size_t i = 0; i < wp.headroom.size(); ++i) {
      add("headroom", static_cast<int>(i), wp.headroom[i], false);
    }
  }
}

void Autoscaler::PlanPrewarm(StepContext& ctx, const model::Pool& pool, WarmState& ws,
                             double pending_units, double free_units, bool scan) {
  const Time now = ctx.now;
  const model::WarmConfig::Predictive& cfg = pool.warm.predictive;
  StepContext::WarmPool& wp = ctx.warm.at(pool.name);
  const model::ResourceId id = PrimaryResource(pool);
  const double per_node = std::max(1e-9, Units(id, wp.whole_request.Get(id)));
  std::erase_if(ws.ledger, [&](const PrewarmCharge& c) {
    return c.at + std::chrono::hours(24) <= now;
  });
  double spent = 0;
  for (const PrewarmCharge& c : ws.ledger) spent += c.cost;

  ws.prediction = ws.profile.Predict(now, cfg.horizon);
  ws.next_prewarm.reset();
  const DemandProfile::Prediction& pred = ws.prediction;
  const double expected = ws.demand + pending_units + free_units;
  // Idle nodes the burst needs beyond the demand already there and the room busy nodes have.
  int want = pred.demand > expected
                 ? static_cast<int>(std::ceil((pred.demand - expected) / per_node - 1e-9))
                 : 0;
  // Nodes held for earlier charges whose burst has not passed.
  int held = 0;
  for (const PrewarmCharge& c : ws.ledger)
    if (c.until > now) held += c.nodes;
  int shortfall = want - held;
  if (pred.demand <= 0) {
    if (scan) {
      ws.reason = fmt::format("no burst predicted within {} ({} quarter-hours observed)",
                              FormatDuration(cfg.horizon), ws.profile.folded());
    }
  } else if (want == 0 && scan) {
    ws.reason = fmt::format("predicted {:.1f} {} at {}: the demand there now and the free room cover it", pred.demand,
                            UnitWord(id), FormatRfc3339(pred.at));
  }
  if (scan && shortfall > 0 && !InBackoff(pools_.at(pool.name), now)) {
    const Duration lead = BootEstimate(pool);
    // The burst starts needing nodes when the expected demand first exceeds what is there.
    const Time starts = ws.profile.FirstAbove(now, cfg.horizon, expected).value_or(pred.at);
    const double hold_h = Hours(pred.slot_end - std::min(pred.at, starts) +
                                config_.scale_down.unneeded_time);
    const double value = per_node * Hours(lead) * cfg.wait_value_per_gpu_hour * pred.confidence;
    const double idle_h =
        Hours(std::max(Duration(0), starts - now - lead)) + (1 - pred.confidence) * hold_h;
    const double idle_cost = pool.price_per_hour * idle_h;
    const double commit =
        pool.price_per_hour * Hours(pred.slot_end - now + config_.scale_down.unneeded_time);
    std::string head = fmt::format(
        "predicted burst of {:.1f} {} at {} ({} profile, confidence {:.2f}), {} node(s) short",
        pred.demand, UnitWord(id), FormatRfc3339(pred.at), pred.weekly ? "day-of-week" : "daily",
        pred.confidence, shortfall);
    // Starting earlier than the boot time (plus a quarter for its variance) saves no more wait,
    // it only adds idle time.
    const Duration earliest = lead + lead / 4;
    if (starts - now > earliest) {
      ws.next_prewarm = starts - earliest;
      ws.reason = fmt::format("{}: not yet, nodes take {} to come; starting at {}", head,
                              FormatDuration(std::chrono::floor<std::chrono::seconds>(lead)),
                              FormatRfc3339(*ws.next_prewarm));
    } else if (value <= idle_cost) {
      // When the idle cost falls below the value: the burst is closer than the lead plus the
      // idle hours the value pays for.
      double x = value / std::max(1e-12, pool.price_per_hour) - (1 - pred.confidence) * hold_h;
      if (x > 0) {
        ws.next_prewarm = starts - lead - Duration(static_cast<int64_t>(x * 3600e3));
      }
      ws.reason = fmt::format(
          "{}: not yet, expected wait saved ${:.2f} <= expected idle cost ${:.2f} per node{}", head,
          value, idle_cost,
          ws.next_prewarm ? fmt::format(" (until {})", FormatRfc3339(*ws.next_prewarm)) : "");
    } else {
      int approved = 0;
      while (approved < shortfall && spent + commit <= cfg.max_cost_per_day + 1e-9) {
        spent += commit;
        ++approved;
      }
      if (approved > 0) {
        ws.ledger.push_back({now, approved, approved * commit, pred.slot_end});
        wp.approved = approved;
      }
      ws.reason = fmt::format(
          "{}: pre-warming {} node(s) (wait saved ${:.2f} > idle cost ${:.2f} per node; "
          "committed ${:.2f} each, ${:.2f} of ${:.2f} in 24h){}",
          head, approved, value, idle_cost, commit, spent, cfg.max_cost_per_day,
          approved < shortfall ? fmt::format("; {} not pre-warmed: maxCostPerDay reached",
                                             shortfall - approved)
                               : "");
    }
  }
  wp.prewarm = std::max(0, std::min(want, held + wp.approved));
  ws.prewarm_nodes = wp.prewarm;
  if (wp.prewarm > 0) {
    wp.prewarm_reason =
        fmt::format("warm: predicted burst of {:.1f} {} at {}", pred.demand, UnitWord(id),
                    FormatRfc3339(pred.at));
  }
}

std::map<std::string, std::string> Autoscaler::BindWarmPlaceholders(StepContext& ctx,
                                                                   planner::PlannerInput& in) {
  std::map<std::string, std::string> hosts;
  const int32_t priority = config_.scale_up.expendable_priority_cutoff;
  for (const model::Pool& pool : config_.pools) {
    auto wit = ctx.warm.find(pool.name);
    if (wit == ctx.warm.end()) continue;
    const StepContext::WarmPool& wp = wit->second;
    struct Host {
      std::string_view name;
      const model::Node* node;
      model::Resources free;
      bool busy;
    };
    std::vector<Host> nodes;
    for (const auto& [name, p] : ctx.pool_of) {
      if (p != &pool || ctx.node_class.at(name) != StepContext::NodeClass::kReady) continue;
      const model::Node& node = *ctx.nodes.at(name);
      if (removals_.contains(name) || node.unschedulable || HasTaint(node, kToBeDeletedTaint)) {
        continue;
      }
      Host h{name, &node, node.allocatable, false};
      if (auto load = ctx.loads.find(name); load != ctx.loads.end()) {
        load->second.requested.ForEach([&](model::ResourceId id, int64_t v) {
          h.free.Set(id, std::max<int64_t>(0, h.free.Get(id) - v));
        });
        h.busy = load->second.busy;
      }
      h.free.Set(model::kPods, 0);
      nodes.push_back(std::move(h));
    }
    auto bind = [&](Host& h, std::string kind, int i, const model::Resources& req, bool whole,
                    std::string why) {
      ctx.warm_pods.push_back(MakePlaceholder(pool, fmt::format("warm-{}-{}-{}", pool.name, kind, i),
                                              req, whole, priority, std::string(h.name)));
      in.pods.push_back(&ctx.warm_pods.back());
      hosts[std::string(h.name)] = std::move(why);
    };
    // Whole-node placeholders on idle nodes (name order), then headroom where it fits best.
    int whole = wp.spare + wp.prewarm;
    std::vector<bool> taken(nodes.size(), false);
    for (size_t i = 0, k = 0; i < nodes.size() && static_cast<int>(k) < whole; ++i) {
      if (nodes[i].busy) continue;
      taken[i] = true;
      bool spare = static_cast<int>(k) < wp.spare;
      bind(nodes[i], spare ? "spare" : "prewarm", static_cast<int>(k), nodes[i].free, true,
           spare ? fmt::format("warm: a spare node of pool {} (warm.spareNodes {})", pool.name,
                               wp.spare)
                 : fmt::format("{}: held idle for it", wp.prewarm_reason));
      ++k;
    }
    const model::ResourceId id = PrimaryResource(pool);
    for (size_t c = 0; c < wp.headroom.size(); ++c) {
      const model::Resources& chunk = wp.headroom[c];
      std::optional<size_t> best;
      for (size_t i = 0; i < nodes.size(); ++i) {
        if (taken[i]) continue;
        bool fits = true;
        for (model::ResourceId r : pool.warm.headroom_set)
          if (nodes[i].free.Get(r) < chunk.Get(r)) fits = false;
        if (!fits) continue;
        if (!best || nodes[i].free.Get(id) < nodes[*best].free.Get(id)) best = i;
      }
      if (!best) break;
      Host& h = nodes[*best];
      bind(h, "headroom", static_cast<int>(c), chunk, false,
           fmt::format("warm: holds headroom of pool {} (warm.headroom {})", pool.name,
                       wp.headroom_words));
      for (model::ResourceId r : pool.warm.headroom_set) h.free.Set(r, h.free.Get(r) - chunk.Get(r));
    }
  }
  return hosts;
}

std::string Autoscaler::ExportWarmState() const {
  nlohmann::json j;
  j["version"] = kWarmStateVersion;
  nlohmann::json pools = nlohmann::json::object();
  for (const auto& [name, ws] : warm_) {
    nlohmann::json p;
    p["profile"] = ws.profile.ToJson();
    if (ws.boot_estimate) p["bootMs"] = ws.boot_estimate->count();
    nlohmann::json ledger = nlohmann::json::array();
    for (const PrewarmCharge& c : ws.ledger) {
      ledger.push_back(
          {c.at.time_since_epoch().count(), c.nodes, c.cost, c.until.time_since_epoch().count()});
    }
    p["ledger"] = std::move(ledger);
    pools[name] = std::move(p);
  }
  j["pools"] = std::move(pools);
  return j.dump();
}

Result<void> Autoscaler::ImportWarmState(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return InvalidArgument("warm state: not a JSON object");
  }
  auto version = j.find("version");
  if (version == j.end() || !version->is_number_integer() ||
      version->get<int64_t>() != kWarmStateVersion) {
    return InvalidArgument("warm state: version: expected {}", kWarmStateVersion);
  }
  auto pools = j.find("pools");
  if (pools == j.end() || !pools->is_object()) {
    return InvalidArgument("warm state: pools: expected an object of pool name -> state");
  }
  std::map<std::string, WarmState, std::less<>> next = warm_;
  for (const auto& [name, p] : pools->items()) {
    auto it = next.find(name);
    if (it == next.end()) continue;  // no longer a warm pool
    std::string where = fmt::format("warm state: pools.{}", name);
    if (!p.is_object() || !p.contains("profile")) {
      return InvalidArgument("{}: expected an object with a profile", where);
    }
    WarmState ws;
    TIDEPOOL_ASSIGN_OR_RETURN(ws.profile,
                              DemandProfile::FromJson(p.at("profile"), where + ".profile"));
    if (auto boot = p.find("bootMs"); boot != p.end()) {
      if (!boot->is_number_integer() || boot->get<int64_t>() < 0) {
        return InvalidArgument("{}.bootMs: expected a non-negative integer", where);
      }
      ws.boot_estimate = Duration(boot->get<int64_t>());
    }
    if (auto ledger = p.find("ledger"); ledger != p.end()) {
      if (!ledger->is_array()) return InvalidArgument("{}.ledger: expected a list", where);
      for (const auto& e : *ledger) {
        if (!e.is_array() || e.size() != 4 || !e[0].is_number_integer() ||
            !e[1].is_number_integer() || !e[2].is_number() || e[2].get<double>() < 0 ||
            !std::isfinite(e[2].get<double>()) || !e[3].is_number_integer()) {
          return InvalidArgument(
              "{}.ledger: expected [time ms, nodes, cost, until ms] entries, got {}", where,
              e.dump());
        }
        ws.ledger.push_back({Time(Duration(e[0].get<int64_t>())), e[1].get<int>(),
                             e[2].get<double>(), Time(Duration(e[3].get<int64_t>()))});
      }
    }
    it->second = std::move(ws);
  }
  warm_ = std::move(next);
  quiet_.reset();
  return {};
}

}  // namespace tidepool::autoscaler
