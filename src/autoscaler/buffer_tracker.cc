#include "autoscaler/buffer_tracker.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace tidepool::autoscaler {
namespace {

using model::BufferCondition;
using model::BufferConditionType;
using model::ConditionStatus;

// Provisioning reasons tidepool writes.
constexpr std::string_view kFitsExistingCapacity = "FitsExistingCapacity";
constexpr std::string_view kRequiresNewCapacity = "RequiresNewCapacity";
constexpr std::string_view kNoCapacity = "CapacityNotAvailable";
constexpr std::string_view kNotReady = "NotReadyForProvisioning";
constexpr std::string_view kBufferEmpty = "BufferEmpty";

BufferCondition Provisioning(bool ok, std::string_view reason, std::string message) {
  return {.type = BufferConditionType::kProvisioning,
          .status = ok ? ConditionStatus::kTrue : ConditionStatus::kFalse,
          .reason = std::string(reason),
          .message = std::move(message)};
}

std::string Words(const BufferCondition& c) {
  return fmt::format("{} {}: {}", model::ConditionStatusName(c.status), c.reason, c.message);
}

// `status` with `c` in place of the condition of its type (appended when there is none).
void Put(model::BufferStatus& status, const BufferCondition& c) {
  for (BufferCondition& x : status.conditions) {
    if (x.type == c.type) {
      x = c;
      return;
    }
  }
  status.conditions.push_back(c);
}

// The status the buffer should have: what is observed, with the fields tidepool decides.
model::BufferStatus Wanted(const ResolvedBuffer& r,
                           const std::optional<BufferCondition>& provisioning) {
  model::BufferStatus s = r.buffer->status;
  s.pod_template = r.pod_template;
  s.replicas = r.replicas;
  s.pod_template_generation = r.template_generation;
  Put(s, r.ready_condition);
  if (provisioning) Put(s, *provisioning);
  return s;
}

// The conditions alone decide whether a write is due; their transition times are the server's.
bool SameStatus(const model::BufferStatus& a, const model::BufferStatus& b) { return a == b; }

}  // namespace

void BufferTracker::Prepare(StepContext& ctx) {
  steps_.clear();
  if (ctx.obs.capacity_buffers.empty()) {
    sent_.clear();
    told_.clear();
    shown_.clear();
    return;
  }
  PodTemplates templates = IndexTemplates(ctx.obs.pod_templates);
  Deployments deployments = IndexDeployments(ctx.obs.deployments);
  std::vector<const model::CapacityBuffer*> buffers = ctx.obs.capacity_buffers;
  std::sort(buffers.begin(), buffers.end(),
            [](const auto* a, const auto* b) { return a->Key() < b->Key(); });
  for (const model::CapacityBuffer* b : buffers) {
    if (!b->Served() || b->meta.deletion_timestamp) continue;
    Step& s = steps_.emplace_back();
    s.resolved = ResolveBuffer(*b, templates, deployments);
    for (model::Pod& p : s.resolved.pods) {
      // The youngest pending pods: real pods of the same priority are placed first, as the
      // scheduler would give them the room.
      p.meta.creation_timestamp = ctx.now;
      model::Pod& copy = ctx.buffer_pods.emplace_back(std::move(p));
      ctx.buffer_keys.emplace(copy.Key(), b->Key());
      planner::AddUnmodelledPod(ctx.base, &copy);
    }
    s.resolved.pods.clear();
    if (!s.resolved.ready) {
      Tell(ctx, b->Key(), EventReason::kBufferNotReady, s.resolved.ready_condition.message, true);
    }
  }
  auto gone = [&](const auto& e) {
    return std::none_of(steps_.begin(), steps_.end(),
                        [&](const Step& s) { return s.resolved.buffer->Key() == e.first; });
  };
  std::erase_if(sent_, gone);
  std::erase_if(told_, gone);
}

void BufferTracker::Conclude(StepContext& ctx) {
  if (steps_.empty()) {
    shown_.clear();
    return;
  }
  std::map<std::string, BufferStatusLine, std::less<>> shown;
  for (Step& s : steps_) {
    const model::CapacityBuffer& b = *s.resolved.buffer;
    if (!s.resolved.ready) {
      s.provisioning = Provisioning(false, kNotReady, "the buffer is not ready for provisioning");
    } else if (s.resolved.replicas.value_or(0) == 0) {
      s.provisioning = Provisioning(false, kBufferEmpty, "the buffer resolves to 0 pods");
    } else if (ctx.plan) {
      Decide(ctx, s, *ctx.plan);
    }
    Write(ctx, s);
    BufferStatusLine line;
    line.buffer = b.Key();
    line.source = s.resolved.source;
    line.replicas = s.resolved.replicas;
    line.ready = Words(s.resolved.ready_condition);
    if (s.provisioning) {
      line.provisioning = Words(*s.provisioning);
      line.pools = s.pools;
    } else if (auto old = shown_.find(b.Key()); old != shown_.end()) {
      line.provisioning = old->second.provisioning;
      line.pools = old->second.pools;
    } else if (const BufferCondition* c = b.status.Find(BufferConditionType::kProvisioning)) {
      line.provisioning = Words(*c);
    }
    shown.emplace(b.Key(), std::move(line));
  }
  shown_ = std::move(shown);
}

void BufferTracker::Decide(StepContext& ctx, Step& s, const planner::ScaleUpPlan& plan) {
  const ResolvedBuffer& r = s.resolved;
  const std::string key = r.buffer->Key();
  const int total = *r.replicas;
  int fit = 0;
  std::map<std::string, int> grown;  // pool -> copies a scale-up is for
  const planner::Unschedulable* stuck = nullptr;
  int stuck_count = 0;
  for (const auto& [pod, buffer] : ctx.buffer_keys) {
    if (buffer != key) continue;
    if (std::binary_search(plan.fits_existing.begin(), plan.fits_existing.end(), pod)) {
      ++fit;
      continue;
    }
    bool up = false;
    for (const planner::ScaleUp& su : plan.scale_ups) {
      if (std::find(su.pods.begin(), su.pods.end(), pod) != su.pods.end()) {
        ++grown[su.pool];
        up = true;
      }
    }
    if (up) continue;
    auto u = std::lower_bound(
        plan.unschedulable.begin(), plan.unschedulable.end(), pod,
        [](const planner::Unschedulable& x, const std::string& k) { return x.pod < k; });
    if (u != plan.unschedulable.end() && u->pod == pod) {
      if (stuck == nullptr) stuck = &*u;
      ++stuck_count;
    }
  }
  if (stuck != nullptr) {
    std::vector<std::string> why;
    for (const auto& [pool, reason] : stuck->reasons) why.push_back(pool + ": " + reason.text);
    std::string message =
        fmt::format("{} of {} pod(s) fit no pool: {}", stuck_count, total, fmt::join(why, "; "));
    s.provisioning = Provisioning(false, kNoCapacity, message);
    Tell(ctx, key, EventReason::kNotTriggerScaleUp, "buffer didn't trigger scale-up: " + message,
         false);
    return;
  }
  if (!grown.empty()) {
    std::vector<std::string> ups;
    for (const auto& [pool, n] : grown) {
      ups.push_back(fmt::format("pool {} for {} pod(s)", pool, n));
      s.pools.push_back(pool);
    }
    std::string message = fmt::format(
        "scale-up of {}; {} of {} pod(s) fit existing or coming "
        "nodes",
        fmt::join(ups, ", "), fit, total);
    s.provisioning = Provisioning(true, kRequiresNewCapacity, message);
    for (const auto& [pool, n] : grown) {
      ctx.actions.push_back(Event{EventObject::kCapacityBuffer, key, EventReason::kTriggeredScaleUp,
                                  fmt::format("buffer triggered scale-up of pool {} for {} of its "
                                              "{} pod(s)",
                                              pool, n, total),
                                  false, pool});
    }
    told_.erase(key);
    return;
  }
  s.provisioning =
      Provisioning(true, kFitsExistingCapacity,
                   fmt::format("room for all {} pod(s) on existing or coming nodes", total));
}

void BufferTracker::Tell(StepContext& ctx, const std::string& key, EventReason reason,
                         std::string message, bool warning, std::string pool) {
  std::string& told = told_[key];
  if (told == message) return;
  told = message;
  ctx.actions.push_back(Event{EventObject::kCapacityBuffer, key, reason, std::move(message),
                              warning, std::move(pool)});
}

void BufferTracker::Write(StepContext& ctx, const Step& s) {
  const model::CapacityBuffer& b = *s.resolved.buffer;
  model::BufferStatus want = Wanted(s.resolved, s.provisioning);
  auto sent = sent_.find(b.Key());
  if (SameStatus(want, b.status)) {
    if (sent != sent_.end()) sent_.erase(sent);  // observed
    return;
  }
  if (sent != sent_.end() && SameStatus(sent->second, want)) return;  // on its way
  sent_[b.Key()] = want;
  ctx.actions.push_back(UpdateCapacityBuffer{b.meta.namespace_, b.meta.name, std::move(want)});
}

void BufferTracker::AddDigest(Digest& d) const {
  d.Add(sent_.size());
  for (const auto& [key, status] : sent_) {
    d.Add(key);
    for (const BufferCondition& c : status.conditions) d.Add(c.message);
  }
  for (const auto& [key, message] : told_) {
    d.Add(key);
    d.Add(message);
  }
}

void BufferTracker::FillStatus(Status& s) const {
  for (const auto& [key, line] : shown_) s.buffers.push_back(line);
}

}  // namespace tidepool::autoscaler
