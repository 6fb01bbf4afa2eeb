#include "autoscaler/unneeded_tracker.h"

#include <fmt/format.h>

#include "base/name_map.h"
#include "planner/disruption.h"

namespace tidepool::autoscaler {
namespace {

std::string Seconds(Duration d) {
  return FormatDuration(std::chrono::floor<std::chrono::seconds>(std::max(Duration(0), d)));
}

}  // namespace

UnneededTracker::UnneededTracker(const model::AutoscalerConfig& config) : config_(config) {}

void UnneededTracker::Disable(StepContext& ctx,
                              const std::function<bool(std::string_view)>& removing) {
  since_.clear();
  waiting_.clear();
  kept_ = NoKeptNodes();
  weighed_training_ = false;
  turn_after_.clear();
  turn_left_out_ = false;
  UpdateMarks(ctx, {}, removing);
}

void UnneededTracker::Update(StepContext& ctx, UnneededPass pass,
                             const std::function<bool(std::string_view)>& removing) {
  kept_ = std::make_shared<const std::vector<planner::Keep>>(std::move(pass.kept));
  waiting_ = std::move(pass.waiting);
  weighed_training_ = pass.weighed_training;
  turn_after_ = std::move(pass.turn_ends_at);
  turn_left_out_ = pass.turn_left_out;
  // Both in name order: one walk drops the nodes no longer unneeded and adds the new ones.
  auto it = since_.begin();
  for (const std::string& name : pass.nodes) {
    auto passed = it;
    const bool found = SeekName(it, since_.end(), name);
    it = since_.erase(passed, it);
    if (!found) it = since_.emplace_hint(it, name, ctx.now);
    ++it;
  }
  since_.erase(it, since_.end());
  UpdateMarks(ctx, pass.nodes, removing);
}

std::vector<std::string> UnneededTracker::Ripe(Time now) const {
  std::vector<std::string> ripe;
  for (const auto& [name, since] : since_) {
    if (now >= since + config_.scale_down.unneeded_time) ripe.push_back(name);
  }
  return ripe;
}

std::string UnneededTracker::NotYetReason(std::string_view node, Time now) const {
  auto since = since_.find(node);
  if (since == since_.end()) return "not unneeded";
  return fmt::format("unneeded for {} of scaleDown.unneededTime {}", Seconds(now - since->second),
                     FormatDuration(config_.scale_down.unneeded_time));
}

void UnneededTracker::Forget(std::string_view node) {
  if (auto it = since_.find(node); it != since_.end()) since_.erase(it);
}

void UnneededTracker::UpdateMarks(StepContext& ctx, const std::set<std::string>& unneeded,
                                  const std::function<bool(std::string_view)>& removing) {
  if (!config_.scale_down.mark_candidates) return;
  size_t added = 0;
  for (const std::string& name : unneeded) {
    const model::Node* node = ctx.Find(name);
    if (node == nullptr || marked_.contains(name)) continue;
    if (HasTaint(*node, planner::kDeletionCandidateTaint)) {
      marked_.insert(name);
      continue;
    }
    if (added == kMaxCandidateMarksPerScan) continue;  // marked at a later scan
    ++added;
    marked_.insert(name);
    auto pool = ctx.pool_of.find(name);
    ctx.actions.push_back(
        MarkCandidate{name, pool != ctx.pool_of.end() ? pool->second->name : "", "unneeded"});
  }
  for (const auto& [name, pool] : ctx.pool_of) {
    bool marked =
        marked_.contains(name) || HasTaint(*ctx.nodes.at(name), planner::kDeletionCandidateTaint);
    if (!marked || removing(name)) continue;
    if (unneeded.contains(std::string(name))) continue;
    ctx.actions.push_back(UnmarkCandidate{std::string(name), pool->name, "needed again"});
    if (auto it = marked_.find(name); it != marked_.end()) marked_.erase(it);
  }
}

void UnneededTracker::Cleanup(const StepContext& ctx) {
  // Each is in name order, as ctx.nodes is: a walk over the nodes, not a search per name.
  auto gone = [&ctx](auto& names, auto name_of) {
    NameMap<const model::Node*>::Walker nodes(ctx.nodes);
    std::erase_if(names, [&](const auto& e) { return nodes.find(name_of(e)) == ctx.nodes.end(); });
  };
  gone(since_, [](const auto& e) -> const std::string& { return e.first; });
  gone(waiting_, [](const auto& e) -> const std::string& { return e.first; });
  gone(marked_, [](const std::string& n) -> const std::string& { return n; });
}

void UnneededTracker::AddDigest(Digest& d) const {
  // Which nodes are unneeded, and since when, feeds the next pass only through a turn that leaves
  // candidates out (those unneeded before are weighed first). A pass that weighed every candidate
  // finds the same nodes again from the same observation, and since_ keeps their times: a Step
  // that only found nodes unneeded, or needed again, changed nothing the next Step would read. Its
  // timers (AddTimers) still wake the loop when a node ripens.
  d.Add(uint64_t{turn_left_out_});
  if (turn_left_out_) {
    d.Add(since_.size());
    for (const auto& [name, t] : since_) {
      d.Add(name);
      d.Add(t);
    }
  }
  d.Add(marked_.size());
  for (const std::string& name : marked_) d.Add(name);
  // A pass that moved the turn on has candidates left to weigh: it is not a quiet one.
  d.Add(turn_after_);
}

void UnneededTracker::AddTimers(Timers& t) const {
  for (const auto& [name, since] : since_) t.Decide(since + config_.scale_down.unneeded_time);
  // Consolidation's numbers move with time: they are weighed anew at each minute.
  if (weighed_training_) t.Decide(planner::NextWeighTime(t.now()));
}

void UnneededTracker::FillStatus(Status& s) const {
  for (const auto& [name, since] : since_) {
    UnneededNode& u = s.unneeded.emplace_back(UnneededNode{name, since, std::nullopt});
    if (auto w = waiting_.find(name); w != waiting_.end()) u.waiting = w->second;
  }
  s.kept = kept_;
}

}  // namespace tidepool::autoscaler
