#include "autoscaler/replacement_tracker.h"

#include <fmt/format.h>

#include "planner/disruption.h"

namespace tidepool::autoscaler {

ReplacementTracker::ReplacementTracker(const model::AutoscalerConfig& config, PoolTracker& pools)
    : config_(config), pools_(pools) {}

void ReplacementTracker::Start(StepContext& ctx,
                               const std::vector<const planner::ScaleDown*>& members) {
  if (members.empty()) return;
  const planner::ScaleDown& first = *members.front();
  for (const planner::ScaleDown* sd : members)
    if (Tied(sd->node) || sd->replacement_pool != first.replacement_pool) return;
  std::vector<std::string> pods;
  for (const planner::ScaleDown* sd : members)
    pods.insert(pods.end(), sd->replacement_pods.begin(), sd->replacement_pods.end());
  std::set<std::string> had;
  for (const auto& [name, pool] : ctx.pool_of)
    if (pool->name == first.replacement_pool) had.emplace(name);
  std::string what = members.size() == 1 ? fmt::format("replaces node {}", first.node)
                                         : fmt::format("replaces nodes {}",
                                                       fmt::join(first.replacement_group, ", "));
  std::string why = fmt::format("{} (pods {}): {}", what, fmt::join(pods, ", "), first.Detail());
  ctx.actions.push_back(IncreasePool{first.replacement_pool, 1, {}, 0, why, first.node});
  pools_.RecordIncrease(first.replacement_pool, 1, ctx.now);
  for (const planner::ScaleDown* sd : members) {
    ReplacementTie tie{
        .pool = sd->replacement_pool,
        .node_pool = sd->pool,
        .requested_at = ctx.now,
        .had = had,
        .ready = std::nullopt,
        .verdict = sd->consolidation,
        .group = members.size() > 1 ? sd->replacement_group : std::vector<std::string>{}};
    std::vector<std::string> others;
    for (const std::string& n : tie.group)
      if (n != sd->node) others.push_back(n);
    std::string together =
        others.empty() ? "" : fmt::format(", together with node(s) {}", fmt::join(others, ", "));
    Tell(ctx, sd->node, tie,
         fmt::format("replacing the node with one of pool {}{} (pods {} move there); nothing is "
                     "evicted before it is Ready: {}",
                     tie.pool, together, fmt::join(sd->replacement_pods, ", "), sd->Detail()),
         false);
    ties_.emplace(sd->node, std::move(tie));
  }
}

bool ReplacementTracker::GroupStays(const std::string& node, const ReplacementTie& tie) const {
  for (const std::string& other : tie.group)
    if (other != node && ties_.contains(other)) return true;
  return false;
}

void ReplacementTracker::Advance(StepContext& ctx) {
  std::set<std::string, std::less<>> claimed;
  for (const auto& [node, tie] : ties_)
    if (tie.ready) claimed.insert(*tie.ready);
  for (auto it = ties_.begin(); it != ties_.end();) {
    const std::string& node = it->first;
    ReplacementTie& tie = it->second;
    std::string why;
    if (ctx.Find(node) == nullptr) {
      why = "the node is gone";
      // The new node is given back only when no node of its group waits for it.
      if (!tie.ready && !GroupStays(node, tie))
        pools_.GiveBack(ctx, tie.pool, 1, "the node it was to replace is gone");
    } else if (tie.ready) {
      // Ready already: Ready() hands it to the loop at this pass.
    } else if (auto failure = pools_.FailureSince(tie.pool, tie.requested_at)) {
      why = fmt::format("pool {} failed: {}", tie.pool, failure->reason);
    } else if (ctx.now >= Deadline(tie)) {
      why = fmt::format("no node of pool {} was Ready within its provision timeout {}", tie.pool,
                        FormatDuration(Deadline(tie) - tie.requested_at));
    } else {
      for (const auto& [name, pool] : ctx.pool_of) {
        if (pool->name != tie.pool || tie.had.contains(std::string(name)) ||
            claimed.contains(name) || ctx.ClassOf(name) != NodeClass::kReady) {
          continue;
        }
        tie.ready = std::string(name);
        claimed.emplace(name);
        // The group's other nodes take the same new node.
        for (const std::string& other : tie.group) {
          auto o = ties_.find(other);
          if (o != ties_.end() && !o->second.ready) o->second.ready = std::string(name);
        }
        break;
      }
    }
    if (why.empty()) {
      ++it;
      continue;
    }
    Tell(ctx, node, tie, "replacement given up, the node stays: " + why, true);
    it = ties_.erase(it);
  }
}

std::vector<std::string> ReplacementTracker::Ready() const {
  std::vector<std::string> out;
  for (const auto& [node, tie] : ties_)
    if (tie.ready) out.push_back(node);
  return out;
}

void ReplacementTracker::Complete(std::string_view node) {
  if (auto it = ties_.find(node); it != ties_.end()) ties_.erase(it);
}

void ReplacementTracker::Drop(StepContext& ctx, const std::string& node, const std::string& why) {
  auto it = ties_.find(node);
  if (it == ties_.end()) return;
  Tell(ctx, node, it->second,
       fmt::format("replacement given up, the node stays: node {} of pool {} is Ready, but {}",
                   it->second.ready.value_or(""), it->second.pool, why),
       true);
  ties_.erase(it);
}

std::vector<planner::Keep> ReplacementTracker::Kept(Time now) const {
  std::vector<planner::Keep> out;
  for (const auto& [node, tie] : ties_) {
    std::string reason = fmt::format(
        "replacement of pool {} coming up (asked for {} ago)", tie.pool,
        FormatDuration(std::chrono::floor<std::chrono::seconds>(now - tie.requested_at)));
    if (tie.verdict) reason += "; " + planner::DescribeVerdict(*tie.verdict);
    out.push_back({node, std::move(reason), {}, planner::ShareVerdict(tie.verdict)});
  }
  return out;
}

void ReplacementTracker::AddDigest(Digest& d) const {
  d.Add(ties_.size());
  for (const auto& [node, tie] : ties_) {
    d.Add(node);
    d.Add(tie.pool);
    d.Add(tie.requested_at);
    d.Add(tie.ready.value_or(""));
  }
}

void ReplacementTracker::AddTimers(Timers& t) const {
  for (const auto& [node, tie] : ties_)
    if (!tie.ready) t.Wake(Deadline(tie));
}

Time ReplacementTracker::Deadline(const ReplacementTie& tie) const {
  const model::Pool* pool = config_.FindPool(tie.pool);
  return tie.requested_at +
         (pool != nullptr ? pools_.ProvisionTimeout(*pool) : config_.scale_up.provision_timeout);
}

void ReplacementTracker::Tell(StepContext& ctx, const std::string& node, const ReplacementTie& tie,
                              std::string message, bool warning) const {
  ctx.actions.push_back(Event{EventObject::kNode, node, EventReason::kConsolidationReplace,
                              std::move(message), warning, tie.node_pool});
}

}  // namespace tidepool::autoscaler
