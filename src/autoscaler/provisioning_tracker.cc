#include "autoscaler/provisioning_tracker.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "planner/scale_up.h"

namespace tidepool::autoscaler {

using model::ConditionStatus;
using model::ProvisioningClass;
using model::ProvisioningCondition;

namespace {

// Condition reasons tidepool writes (a request's status is read by Kueue and by people).
constexpr std::string_view kAccepted = "Accepted";
constexpr std::string_view kCapacityIsFound = "CapacityIsFound";
constexpr std::string_view kCapacityIsProvisioned = "CapacityIsProvisioned";
constexpr std::string_view kCapacityIsNotFound = "CapacityIsNotFound";
constexpr std::string_view kScaleUpRequested = "ScaleUpRequested";
constexpr std::string_view kBookingExpired = "BookingExpired";
constexpr std::string_view kPodTemplateNotFound = "PodTemplateNotFound";
constexpr std::string_view kInvalidPodTemplate = "InvalidPodTemplate";
constexpr std::string_view kInvalidParameters = "InvalidParameters";
constexpr std::string_view kExpired = "Expired";  // the Cluster Autoscaler's reason
constexpr std::string_view kScaleUpFailed = "ScaleUpFailed";

model::Condition Cond(ProvisioningCondition type, bool status, std::string_view reason,
                      std::string message) {
  return {.type = type,
          .status = status ? ConditionStatus::kTrue : ConditionStatus::kFalse,
          .reason = std::string(reason),
          .message = std::move(message)};
}

bool Same(const model::Condition& a, const model::Condition& b) {
  return a.type == b.type && a.status == b.status && a.reason == b.reason && a.message == b.message;
}

Event RequestEvent(const model::ProvisioningRequest& r, EventReason reason, std::string message,
                   bool warning, std::string pool = "") {
  return Event{EventObject::kProvisioningRequest,
               r.Key(),
               reason,
               std::move(message),
               warning,
               std::move(pool)};
}

bool NoRetry(const model::ProvisioningRequest& r) {
  const std::string* v = r.Parameter(model::kNoRetryParameter);
  return v != nullptr && *v == "true";
}

bool AllFit(const planner::ScaleUpPlan& plan, const std::vector<model::Pod>& pods) {
  for (const model::Pod& p : pods)
    if (!std::binary_search(plan.fits_existing.begin(), plan.fits_existing.end(), p.Key()))
      return false;
  return true;
}

// The kind that stops a pool: a gang member's own kind for a gang reason.
planner::ReasonKind Effective(const planner::PoolReason& r) {
  return r.kind == planner::ReasonKind::kGang ? r.member_kind : r.kind;
}

}  // namespace

void ProvisioningTracker::RollBack(StepContext& ctx) {
  waiting_.clear();
  writes_.clear();
  deadline_.reset();
  for (auto it = grown_.begin(); it != grown_.end();) {
    auto r =
        std::find_if(ctx.obs.provisioning_requests.begin(), ctx.obs.provisioning_requests.end(),
                     [&](const auto* x) { return x->Key() == it->first; });
    const auto stage = r == ctx.obs.provisioning_requests.end()
                           ? ProvisioningStage::kDone
                           : StageOf(**r, ctx.now, config_.scale_up.booking_time);
    // kNew: planned, its Accepted not observed yet.
    if ((stage != ProvisioningStage::kNew && stage != ProvisioningStage::kPending) ||
        FailedUnobserved(**r)) {
      it = grown_.erase(it);
      continue;
    }
    bool failed = false;
    for (const auto& [pool, count] : it->second.pools) {
      if (auto f = pools_.FailureSince(pool, it->second.at)) {
        RollBackOne(ctx, **r, it->second, pool, *f);
        failed = true;
        break;
      }
    }
    it = failed ? grown_.erase(it) : std::next(it);
  }
}

void ProvisioningTracker::RollBackOne(StepContext& ctx, const model::ProvisioningRequest& r,
                                      const Grown& g, const std::string& failed,
                                      const PoolFailure& failure) {
  std::vector<std::string> back;
  for (const auto& [pool, count] : g.pools) {
    // A refused increase added nothing to give back.
    if (pool == failed && failure.refused) continue;
    const int n = pools_.GiveBack(
        ctx, pool, count,
        fmt::format("roll back the scale-up for ProvisioningRequest {}: pool {} failed", r.Key(),
                    failed));
    if (n > 0) back.push_back(fmt::format("{} -{}", pool, n));
  }
  std::string words = fmt::format(
      "the scale-up for all pods at once failed in pool {}: {}; {}", failed, failure.reason,
      back.empty()
          ? std::string("no requested node was left to cancel")
          : fmt::format("cancelled the nodes not registered yet: {}", fmt::join(back, ", ")));
  Want(r, Cond(ProvisioningCondition::kFailed, true, kScaleUpFailed, words),
       RequestEvent(r, EventReason::kProvisioningFailed, words, true, failed));
}

bool ProvisioningTracker::FailedUnobserved(const model::ProvisioningRequest& r) const {
  auto is_failed = [](const model::Condition& c) {
    return c.type == ProvisioningCondition::kFailed && c.status == ConditionStatus::kTrue;
  };
  if (auto w = writes_.find(r.Key()); w != writes_.end()) {
    if (std::any_of(w->second.conditions.begin(), w->second.conditions.end(), is_failed)) {
      return true;
    }
  }
  auto s = sent_.find(r.Key());
  return s != sent_.end() && std::any_of(s->second.begin(), s->second.end(), is_failed);
}

void ProvisioningTracker::Prepare(StepContext& ctx, const planner::PlannerInput& in) {
  if (ctx.obs.provisioning_requests.empty()) {
    sent_.clear();
    return;
  }
  std::vector<const model::ProvisioningRequest*> requests = ctx.obs.provisioning_requests;
  std::sort(requests.begin(), requests.end(), [](const auto* a, const auto* b) {
    return std::pair(a->meta.creation_timestamp.value_or(Time{}), a->Key()) <
           std::pair(b->meta.creation_timestamp.value_or(Time{}), b->Key());
  });
  Index index{IndexTemplates(ctx.obs.pod_templates), IndexConsumers(ctx.base.pods), {}};
  std::vector<Served> booked, check, atomic;
  for (const model::ProvisioningRequest* r : requests) {
    if (r->provisioning_class != ProvisioningClass::kOther) {
      Classify(ctx, *r, index, booked, check, atomic);
    }
  }
  // Pending pods consuming a served request trigger no scale-up of their own.
  if (!index.hidden.empty()) {
    auto hidden = [&](const model::Pod* p) { return index.hidden.contains(p); };
    std::erase_if(ctx.base.pods, hidden);
    if (ctx.base.unbound) std::erase_if(*ctx.base.unbound, hidden);
  }
  HoldBooked(ctx, in, booked);
  CheckCapacity(ctx, in, check, atomic);
  CheckRegistered(ctx, in, atomic);
  std::erase_if(sent_, [&](const auto& e) {
    return std::none_of(requests.begin(), requests.end(),
                        [&](const auto* r) { return r->Key() == e.first; });
  });
}

void ProvisioningTracker::Classify(StepContext& ctx, const model::ProvisioningRequest& r,
                                   Index& index, std::vector<Served>& booked,
                                   std::vector<Served>& check, std::vector<Served>& atomic) {
  const ProvisioningStage stage = StageOf(r, ctx.now, config_.scale_up.booking_time);
  if (stage == ProvisioningStage::kDone || FailedUnobserved(r)) return;
  if (stage == ProvisioningStage::kBookingOver) {
    Want(r, Cond(ProvisioningCondition::kBookingExpired, true, kBookingExpired,
                 fmt::format("the capacity was booked for {}; it is no longer held",
                             FormatDuration(config_.scale_up.booking_time))));
    return;
  }
  if (auto end = BookingEnd(r, config_.scale_up.booking_time)) Deadline(*end);
  if (stage != ProvisioningStage::kBooked && Expired(ctx, r)) return;
  auto pods = ExpandPods(r, index.templates);
  if (!pods) {
    TemplateProblem(ctx, r, pods.error());
    return;
  }
  if (stage == ProvisioningStage::kNew) {
    Want(r, Cond(ProvisioningCondition::kAccepted, true, kAccepted,
                 fmt::format("tidepool serves {}", r.class_name)));
  }
  // Consuming pods that are scheduled have taken their share of the booking.
  size_t consumed = 0;
  if (auto it = index.consumers.find(r.Key()); it != index.consumers.end()) {
    for (const model::Pod* p : it->second) {
      if (!p->node_name.empty()) {
        ++consumed;
      } else if (!p->IsTerminal()) {
        index.hidden.insert(p);
      }
    }
  }
  Served s{&r, std::move(*pods)};
  if (stage == ProvisioningStage::kBooked) {
    s.pods.erase(s.pods.begin(), s.pods.begin() + std::min(consumed, s.pods.size()));
    if (!s.pods.empty()) booked.push_back(std::move(s));
  } else if (r.provisioning_class == ProvisioningClass::kCheckCapacity) {
    check.push_back(std::move(s));
  } else {
    atomic.push_back(std::move(s));
  }
}

bool ProvisioningTracker::Expired(const StepContext& ctx, const model::ProvisioningRequest& r) {
  auto window = RetryWindow(r);
  if (!window) {
    Want(r,
         Cond(ProvisioningCondition::kFailed, true, kInvalidParameters, window.error().message()),
         RequestEvent(r, EventReason::kProvisioningFailed, window.error().message(), true));
    return true;
  }
  // Retrying starts after the first pass (Accepted); nodes on their way are not a retry (the
  // provision timeout bounds them).
  const model::Condition* p = r.Find(ProvisioningCondition::kProvisioned);
  const bool in_flight = p != nullptr && p->reason == kScaleUpRequested;
  if (!r.meta.creation_timestamp || r.Find(ProvisioningCondition::kAccepted) == nullptr ||
      in_flight) {
    return false;
  }
  const Time until = *r.meta.creation_timestamp + *window;
  if (ctx.now < until) {
    Deadline(until);
    return false;
  }
  std::string words =
      fmt::format("not provisioned within {} of its creation ({}); not retried any more",
                  FormatDuration(*window),
                  ValidUntilSeconds(r) != nullptr
                      ? fmt::format("spec.parameters.{}", model::kValidUntilSecondsParameter)
                      : std::string("the longest a request is retried"));
  Want(r, Cond(ProvisioningCondition::kFailed, true, kExpired, words),
       RequestEvent(r, EventReason::kProvisioningFailed, words, true));
  return true;
}

void ProvisioningTracker::TemplateProblem(const StepContext& ctx,
                                          const model::ProvisioningRequest& r, const Error& error) {
  const bool missing = error.code() == Error::Code::kNotFound;
  // Kueue creates the PodTemplates with the request: one not seen yet may be on its way.
  if (missing && r.meta.creation_timestamp &&
      ctx.now < *r.meta.creation_timestamp + options_.template_grace) {
    Deadline(*r.meta.creation_timestamp + options_.template_grace);
    return;
  }
  Want(r,
       Cond(ProvisioningCondition::kFailed, true,
            missing ? kPodTemplateNotFound : kInvalidPodTemplate, error.message()),
       RequestEvent(r, EventReason::kProvisioningFailed, error.message(), true));
}

planner::PlannerInput ProvisioningTracker::NoGrowth(const StepContext& ctx,
                                                    const planner::PlannerInput& in,
                                                    const std::vector<Served>& extra) const {
  planner::PlannerInput out = in;
  out.placeholders.clear();
  for (const model::Pool& pool : config_.pools) out.backoff_until[pool.name] = Time::max();
  out.pods.clear();
  // Bound pods, and the booked room held on upcoming nodes. They come from the Step's base, which
  // may have gained pods held on nodes since `in` was made: its model goes with them (a held pod
  // takes the model out, planner::AddUnmodelledPod).
  out.model = ctx.base.model;
  out.unbound.emplace();
  for (const model::Pod* p : ctx.base.pods) {
    if (!p->node_name.empty()) {
      out.pods.push_back(p);
    } else if (ctx.provisioning_keys.contains(p->Key())) {
      planner::AddUnmodelledPod(out, p);
    }
  }
  for (const Served& s : extra)
    for (const model::Pod& p : s.pods) planner::AddUnmodelledPod(out, &p);
  return out;
}

void ProvisioningTracker::Hold(StepContext& ctx, Served& s, const planner::ScaleUpPlan& plan) {
  for (model::Pod& p : s.pods) {
    auto it = plan.gang_nodes.find(p.Key());
    model::Pod& held = ctx.provisioning_pods.emplace_back(p);
    if (it != plan.gang_nodes.end() && ctx.Find(it->second) != nullptr) {
      held.node_name = it->second;  // holds the room on that node, also against scale-down
    } else {
      ctx.provisioning_keys.emplace(held.Key(), s.request->Key());  // upcoming: planned as pending
    }
    planner::AddUnmodelledPod(ctx.base, &held);
  }
}

void ProvisioningTracker::HoldBooked(StepContext& ctx, const planner::PlannerInput& in,
                                     std::vector<Served>& booked) {
  if (booked.empty()) return;
  planner::ScaleUpPlan plan =
      planner::ScaleUpPlanner().Plan(NoGrowth(ctx, in, booked), options_.scale_up);
  for (Served& s : booked) {
    // Capacity that went away is not held: the pods that consume it are planned as usual.
    if (AllFit(plan, s.pods)) Hold(ctx, s, plan);
  }
}

void ProvisioningTracker::CheckCapacity(StepContext& ctx, const planner::PlannerInput& in,
                                        std::vector<Served>& check,
                                        const std::vector<Served>& atomic) {
  if (check.empty()) return;
  // Atomic requests take part too (by age, as every gang), so that a check-capacity request does
  // not count on the upcoming nodes an older atomic request is waiting for.
  planner::PlannerInput input = NoGrowth(ctx, in, atomic);
  for (const Served& s : check)
    for (const model::Pod& p : s.pods) planner::AddUnmodelledPod(input, &p);
  planner::ScaleUpPlan plan = planner::ScaleUpPlanner().Plan(input, options_.scale_up);
  for (Served& s : check) {
    const model::ProvisioningRequest& r = *s.request;
    if (AllFit(plan, s.pods)) {
      std::string words =
          fmt::format("room for all {} pods on existing and upcoming nodes", s.pods.size());
      Want(r, Cond(ProvisioningCondition::kProvisioned, true, kCapacityIsFound, words),
           RequestEvent(r, EventReason::kProvisioned, words, false));
      Hold(ctx, s, plan);
      continue;
    }
    std::string words = fmt::format(
        "no room for all {} pods on existing and upcoming nodes (this class never adds nodes)",
        s.pods.size());
    if (NoRetry(r)) {
      Want(r, Cond(ProvisioningCondition::kFailed, true, kCapacityIsNotFound, words),
           RequestEvent(r, EventReason::kProvisioningFailed, words, true));
    } else {
      Want(r, Cond(ProvisioningCondition::kProvisioned, false, kCapacityIsNotFound,
                   words + "; checked again at every scan"));
    }
  }
}

void ProvisioningTracker::CheckRegistered(StepContext& ctx, const planner::PlannerInput& in,
                                          std::vector<Served>& atomic) {
  if (atomic.empty()) return;
  planner::PlannerInput input = NoGrowth(ctx, in, atomic);
  input.upcoming.clear();
  planner::ScaleUpPlan plan = planner::ScaleUpPlanner().Plan(input, options_.scale_up);
  for (Served& s : atomic) {
    const model::ProvisioningRequest& r = *s.request;
    if (AllFit(plan, s.pods)) {
      std::string words = fmt::format("room for all {} pods on registered nodes", s.pods.size());
      Want(r, Cond(ProvisioningCondition::kProvisioned, true, kCapacityIsProvisioned, words),
           RequestEvent(r, EventReason::kProvisioned, words, false));
      Hold(ctx, s, plan);
      continue;
    }
    Waiting& w = waiting_.emplace_back(Waiting{&r, {}});
    for (model::Pod& p : s.pods) {
      model::Pod& pending = ctx.provisioning_pods.emplace_back(std::move(p));
      ctx.provisioning_keys.emplace(pending.Key(), r.Key());
      planner::AddUnmodelledPod(ctx.base, &pending);
      w.keys.insert(pending.Key());
    }
  }
}

void ProvisioningTracker::Conclude(StepContext& ctx) {
  if (ctx.plan) {
    const planner::ScaleUpPlan& plan = *ctx.plan;
    for (const Waiting& s : waiting_) {
      const auto& keys = s.keys;
      auto u = std::find_if(plan.unschedulable.begin(), plan.unschedulable.end(),
                            [&](const planner::Unschedulable& u) { return keys.contains(u.pod); });
      if (u != plan.unschedulable.end()) {
        Unserved(s, *u);
        continue;
      }
      std::vector<std::string> grown = RecordGrowth(ctx, s);
      if (grown.empty()) continue;  // on upcoming nodes: Provisioned once they register
      const model::ProvisioningRequest& r = *s.request;
      std::string words = fmt::format(
          "scale-up for all {} pods at once: {}; Provisioned once "
          "the nodes have registered",
          s.keys.size(), fmt::join(grown, ", "));
      Want(r, Cond(ProvisioningCondition::kProvisioned, false, kScaleUpRequested, words),
           RequestEvent(r, EventReason::kTriggeredScaleUp, words, false));
    }
  }
  Flush(ctx);
}

std::vector<std::string> ProvisioningTracker::RecordGrowth(const StepContext& ctx,
                                                           const Waiting& w) {
  std::vector<std::string> words;
  for (const planner::ScaleUp& su : ctx.plan->scale_ups) {
    const auto mine = std::count_if(su.pods.begin(), su.pods.end(),
                                    [&](const std::string& k) { return w.keys.contains(k); });
    if (mine == 0) continue;
    words.push_back(fmt::format("{} +{}", su.pool, su.add));
    // Its share of the nodes: all of them, or (beside other pods) in proportion to its pods.
    const int nodes = su.add - su.warm_add;
    const auto total = static_cast<int64_t>(su.pods.size());
    const int share = mine == total ? nodes : std::max(1, static_cast<int>(nodes * mine / total));
    Grown& g = grown_[w.request->Key()];
    if (g.pools.empty()) g.at = ctx.now;
    g.pools[su.pool] += share;
  }
  return words;
}

void ProvisioningTracker::Unserved(const Waiting& s, const planner::Unschedulable& u) {
  const model::ProvisioningRequest& r = *s.request;
  bool transient = false;
  std::vector<std::string> why;
  for (const auto& [pool, reason] : u.reasons) {
    const bool gang = reason.kind == planner::ReasonKind::kGang;
    why.push_back(fmt::format("pool {}: {}", pool, gang ? reason.member_text : reason.text));
    transient = transient || Effective(reason) == planner::ReasonKind::kBackoff;
  }
  std::string words = fmt::format("no pool can provision all {} pods at once: {}", s.keys.size(),
                                  fmt::join(why, "; "));
  if (transient && !NoRetry(r)) {
    Want(r, Cond(ProvisioningCondition::kProvisioned, false, kCapacityIsNotFound,
                 words + "; tried again when the backoff ends"));
    return;
  }
  Want(r, Cond(ProvisioningCondition::kFailed, true, kCapacityIsNotFound, words),
       RequestEvent(r, EventReason::kProvisioningFailed, words, true));
}

void ProvisioningTracker::Want(const model::ProvisioningRequest& r, model::Condition c,
                               std::optional<Event> event) {
  Write& w = writes_[r.Key()];
  w.request = &r;
  std::erase_if(w.conditions, [&](const model::Condition& x) { return x.type == c.type; });
  w.conditions.push_back(std::move(c));
  if (event) w.events.push_back(std::move(*event));
}

void ProvisioningTracker::Flush(StepContext& ctx) {
  for (auto& [key, w] : writes_) {
    std::erase_if(w.conditions, [&](const model::Condition& c) {
      const model::Condition* seen = w.request->Find(c.type);
      return seen != nullptr && Same(*seen, c);
    });
    if (w.conditions.empty()) {
      sent_.erase(key);
      continue;
    }
    auto it = sent_.find(key);
    if (it != sent_.end() && std::equal(it->second.begin(), it->second.end(), w.conditions.begin(),
                                        w.conditions.end(), Same)) {
      continue;  // written already, not observed yet
    }
    ctx.actions.push_back(UpdateProvisioningRequest{w.request->meta.namespace_,
                                                    w.request->meta.name,
                                                    w.request->provisioning_class, w.conditions});
    for (Event& e : w.events) ctx.actions.push_back(std::move(e));
    sent_[key] = std::move(w.conditions);
  }
  writes_.clear();
}

void ProvisioningTracker::AddTimers(Timers& t) const {
  if (deadline_) t.Wake(std::max(*deadline_, t.now()));
}

void ProvisioningTracker::AddDigest(Digest& d) const {
  d.Add(grown_.size());
  for (const auto& [key, g] : grown_) {
    d.Add(key);
    d.Add(g.at);
    for (const auto& [pool, n] : g.pools) {
      d.Add(pool);
      d.AddInt(n);
    }
  }
  d.Add(sent_.size());
  for (const auto& [key, conditions] : sent_) {
    d.Add(key);
    for (const model::Condition& c : conditions) {
      d.AddInt(static_cast<int>(c.type));
      d.AddInt(static_cast<int>(c.status));
      d.Add(c.reason);
      d.Add(c.message);
    }
  }
}

}  // namespace tidepool::autoscaler
