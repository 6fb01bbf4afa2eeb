// Gangs in a scale-up pass, all or nothing: members on existing capacity first, then new nodes
// from any pools their selectors allow, within all limits; otherwise nothing for the whole gang.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>
#include <unordered_set>

#include "planner/scale_up_pass.h"

namespace tidepool::planner::scale_up_detail {

Gangs Pass::CollectGangs(const std::vector<const Pod*>& pending) const {
  Gangs gangs;
  std::unordered_set<std::string_view> names;  // of the gangs with pending members
  for (const Pod* p : pending) {
    const GangName gang = options_.gang_aware ? FindGang(*p) : GangName{};
    if (gang.name == nullptr) {
      gangs.singles.push_back(p);
      continue;
    }
    names.insert(*gang.name);
    std::string g = GangOf(*p, gang);
    if (!gangs.pending.contains(g)) gangs.order.push_back(g);
    gangs.pending[g].push_back(p);
  }
  // Members already created count towards their gang's size; only gangs with pending members
  // are asked about, so a pass with none reads no other pod.
  if (gangs.pending.empty()) return gangs;
  for (const Pod* p : in_.pods) {
    if (p->IsTerminal() || p->meta.deletion_timestamp) continue;
    // Most pods are in no gang, or in one without pending members: skipped without wording one.
    const GangName gang = FindGang(*p);
    if (gang.name == nullptr || !names.contains(*gang.name)) continue;
    std::string g = GangOf(*p, gang);
    if (gangs.pending.contains(g)) ++gangs.seen[g];
  }
  return gangs;
}

int Pass::AddUncreatedMembers(std::vector<const Pod*>& members, int seen) {
  int size = seen;
  if (std::optional<int> d = DeclaredGangSize(*members.front())) {
    int declared = *d;
    // Members not created yet are planned as copies of a pending one.
    for (int i = size; i < declared; ++i) {
      phantom_pods_.push_back(*members.front());
      phantom_pods_.back().meta.name.clear();  // not reported by name
      members.push_back(&phantom_pods_.back());
    }
    size = std::max(size, declared);
  }
  return size;
}

Accounting Pass::SaveAccounting() const {
  Accounting a;
  for (const PoolState& ps : pools_) a.added.push_back(ps.added);
  for (const Family& f : families_) a.family_used.push_back(f.used);
  a.cluster_nodes = cluster_nodes_;
  a.cluster_capacity = cluster_capacity_;
  a.pass_nodes = pass_nodes_.size();
  return a;
}

void Pass::RestoreAccounting(const Accounting& a) {
  for (size_t i = 0; i < pools_.size(); ++i) pools_[i].added = a.added[i];
  for (size_t i = 0; i < families_.size(); ++i) families_[i].used = a.family_used[i];
  cluster_nodes_ = a.cluster_nodes;
  cluster_capacity_ = a.cluster_capacity;
  pass_nodes_.resize(a.pass_nodes);
  retried_at_ = std::min(retried_at_, a.pass_nodes);
}

void Pass::PlanGang(const std::string& g, Gangs& gangs, ScaleUpPlan& plan,
                    std::map<std::string, ScaleUp>& ups) {
  std::vector<const Pod*> members = gangs.pending[g];
  int size = AddUncreatedMembers(members, gangs.seen[g]);
  snap_.Fork();
  std::vector<const Pod*> left;
  std::vector<std::pair<const Pod*, NodeIndex>> on_existing;
  for (const Pod* m : members) {
    NodeIndex i = PlaceOnExisting(*m, GroupOf(m));
    if (i == sched::kNoNode) {
      left.push_back(m);
    } else {
      on_existing.emplace_back(m, i);
    }
  }
  SortForPacking(left);
  // Tentative accounting, undone if the gang does not fit whole.
  Accounting before = SaveAccounting();
  std::map<std::string, ScaleUp> gang_ups;
  // A gang's new nodes stay in one zone, as each round fills one family.
  while (!left.empty() && GrowOnce(left, gang_ups, /*balance_zones=*/false)) {
  }
  if (!left.empty()) {
    snap_.Revert();
    no_fit_groups_.clear();      // the revert freed the room the gang's members had taken
    constraint_lists_.Forget();  // and dropped the nodes it added, whose ranks new nodes take
    RestoreAccounting(before);
    RejectGang(g, size, members, left, plan);
    return;
  }
  snap_.Commit();
  for (auto [m, i] : on_existing) {
    if (m->meta.name.empty()) continue;
    // A node an earlier gang's growth added (above the registered and upcoming nodes' slots) is
    // not room that exists: the member is one of the pods of that node's scale-up.
    if (i >= base_slots_) {
      AccountRetroPod(*m, i, /*fallback=*/std::nullopt, ups);
      continue;
    }
    const std::string& node = snap_.Get(i).node->name();
    plan.fits_existing.push_back(m->Key());
    fits_node_[m->Key()] = node;
    plan.gang_nodes[m->Key()] = node;
  }
  for (auto& [pool, up] : gang_ups) {
    ScaleUp& dst = ups[pool];
    dst.pool = pool;
    dst.add += up.add;
    if (dst.reason.empty()) dst.reason = up.reason;
    dst.pods.insert(dst.pods.end(), up.pods.begin(), up.pods.end());
  }
}

void Pass::RejectGang(const std::string& g, int size, const std::vector<const Pod*>& members,
                      const std::vector<const Pod*>& left, ScaleUpPlan& plan) {
  RecordStaticReasons(left);
  std::map<std::string, PoolReason> why;  // pool -> reason, from a member that was left
  for (const Pod* m : left)
    for (const auto& [pool, r] : reasons_[m->Key()])
      if (!r.text.empty() && !why.contains(pool)) why[pool] = r;
  const PoolReason part{ReasonKind::kScaleUpLimit, "room for only part of the gang"};
  for (const Pod* m : members) {
    family_note_.erase(m);
    pool_for_.erase(m->Key());
    if (m->meta.name.empty()) continue;
    for (const PoolState& ps : pools_) {
      auto it = why.find(ps.pool->name);
      const PoolReason& r = it != why.end() ? it->second : part;
      reasons_[m->Key()][ps.pool->name] = {
          .kind = ReasonKind::kGang,
          .text =
              fmt::format("gang {} ({} members, all or nothing): {} member(s) cannot be placed: {}",
                          g, size, left.size(), r.text),
          .resource = r.resource,
          .member_kind = r.kind,
          .member_text = r.text};
    }
    plan.unschedulable.push_back({m->Key(), reasons_[m->Key()]});
  }
}

}  // namespace tidepool::planner::scale_up_detail
