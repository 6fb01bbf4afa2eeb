// The allocation search, as kube-scheduler's structured allocator does it: the pending claims'
// requests in order, each request's alternatives in order (firstAvailable), devices in the node's
// order, backtracking when a later request or a matchAttribute constraint cannot be met.
#include <algorithm>

#include "sched/dra/dra_detail.h"

namespace tidepool::sched {
namespace {

// Search steps before a node is given up on; far beyond any real claim, it bounds pathological
// ones (many devices, a constraint nothing satisfies).
constexpr int kMaxSteps = 100000;

bool ConstraintApplies(const model::DeviceConstraint& c, const CompiledRequest& request,
                       const CompiledSubRequest& alt) {
  if (c.requests.empty()) return true;
  return std::any_of(c.requests.begin(), c.requests.end(), [&](const std::string& r) {
    return r == request.name || r == alt.request_name;
  });
}

class Searcher {
 public:
  Searcher(DraState::Impl& s, const std::vector<const PodClaim*>& pending,
           const std::vector<DeviceId>& inventory)
      : s_(s), pending_(pending), inventory_(inventory), pinned_(pending.size()) {
    for (size_t k = 0; k < pending.size(); ++k) {
      pinned_[k].assign(pending[k]->spec->constraints->size(), nullptr);
      for (const auto& r : pending[k]->spec->requests) slots_.push_back({pending[k], k, &r});
    }
    taken_.resize(pending.size());
  }

  bool Run() {
    bool ok = Solve(0);
    // Release what the search marked, whatever the outcome; the caller allocates for real.
    for (auto& list : taken_)
      for (DeviceId id : list) Release(id);
    return ok;
  }
  std::vector<std::vector<DeviceId>> TakeResult() { return std::move(result_); }

 private:
  bool Solve(size_t slot) {
    if (slot == slots_.size()) {
      result_ = taken_;
      return true;
    }
    const Slot& sl = slots_[slot];
    for (const CompiledSubRequest& alt : sl.request->alternatives) {
      if (++steps_ > kMaxSteps) return false;
      if (alt.sub->mode == model::AllocationMode::kAll) {
        if (TryAll(slot, sl, alt)) return true;
      } else if (Choose(slot, sl, alt, 0, alt.sub->count)) {
        return true;
      }
    }
    return false;
  }

  // Every matching device, none of them in use.
  bool TryAll(size_t slot, const Slot& sl, const CompiledSubRequest& alt) {
    size_t mark = taken_[sl.claim_index].size();
    bool ok = true;
    size_t found = 0;
    for (DeviceId id : inventory_) {
      if (!s_.Matches(alt, id)) continue;
      ++found;
      if (s_.in_use[id] != 0 || !Take(sl, alt, id)) {
        ok = false;
        break;
      }
    }
    if (ok && found > 0 && Solve(slot + 1)) return true;
    Untake(sl.claim_index, mark);
    return false;
  }

  // `need` more devices from inventory positions `from` on.
  bool Choose(size_t slot, const Slot& sl, const CompiledSubRequest& alt, size_t from,
              int64_t need) {
    if (need == 0) return Solve(slot + 1);
    for (size_t i = from; i < inventory_.size(); ++i) {
      if (++steps_ > kMaxSteps) return false;
      // Not enough devices left to choose from.
      if (static_cast<int64_t>(inventory_.size() - i) < need) return false;
      DeviceId id = inventory_[i];
      if (s_.in_use[id] != 0 || !s_.Matches(alt, id)) continue;
      size_t mark = taken_[sl.claim_index].size();
      if (Take(sl, alt, id) && Choose(slot, sl, alt, i + 1, need - 1)) return true;
      Untake(sl.claim_index, mark);
    }
    return false;
  }

  // Marks the device taken if its counters and the claim's constraints allow it.
  bool Take(const Slot& sl, const CompiledSubRequest& alt, DeviceId id) {
    const DeviceRecord& r = s_.devices[id];
    if (r.broken) return false;
    for (const auto& [counter, amount] : r.consumes) {
      if (s_.counter_used[counter] + amount > s_.counter_capacity[counter]) return false;
    }
    const auto& constraints = *sl.claim->spec->constraints;
    auto& pins = pinned_[sl.claim_index];
    std::vector<size_t> newly_pinned;
    for (size_t c = 0; c < constraints.size(); ++c) {
      const auto& con = constraints[c];
      if (con.match_attribute.empty() || !ConstraintApplies(con, *sl.request, alt)) continue;
      auto it = r.device->attributes.find(con.match_attribute);
      if (it == r.device->attributes.end() || (pins[c] != nullptr && !(*pins[c] == it->second))) {
        for (size_t p : newly_pinned) pins[p] = nullptr;
        return false;
      }
      if (pins[c] == nullptr) {
        pins[c] = &it->second;
        newly_pinned.push_back(c);
      }
    }
    pin_log_.push_back(std::move(newly_pinned));
    for (const auto& [counter, amount] : r.consumes) s_.counter_used[counter] += amount;
    s_.in_use[id] = 2;
    taken_[sl.claim_index].push_back(id);
    return true;
  }

  void Untake(size_t claim_index, size_t mark) {
    auto& list = taken_[claim_index];
    while (list.size() > mark) {
      Release(list.back());
      list.pop_back();
      for (size_t p : pin_log_.back()) pinned_[claim_index][p] = nullptr;
      pin_log_.pop_back();
    }
  }

  void Release(DeviceId id) {
    if (s_.in_use[id] != 2) return;
    s_.in_use[id] = 0;
    for (const auto& [counter, amount] : s_.devices[id].consumes)
      s_.counter_used[counter] -= amount;
  }

  DraState::Impl& s_;
  const std::vector<const PodClaim*>& pending_;
  const std::vector<DeviceId>& inventory_;
  std::vector<Slot> slots_;
  // Per pending claim: the value each matchAttribute constraint is pinned to.
  std::vector<std::vector<const model::DeviceAttribute*>> pinned_;
  std::vector<std::vector<size_t>> pin_log_;  // per Take: the constraints it pinned
  std::vector<std::vector<DeviceId>> taken_;  // per pending claim
  std::vector<std::vector<DeviceId>> result_;
  int steps_ = 0;
};

}  // namespace

bool DraState::Impl::Matches(const CompiledSubRequest& sub, DeviceId id) {
  const DeviceRecord& r = devices[id];
  if (matches.size() <= r.proto) matches.resize(r.proto + 1);
  std::vector<int8_t>& row = matches[r.proto];
  if (row.size() <= sub.id) row.resize(next_sub_id, -1);
  int8_t& cached = row[sub.id];
  if (cached < 0) {
    cel::DeviceView view{r.slice->driver, r.device};
    bool ok = true;
    for (const cel::Program* p : sub.selectors) {
      if (!p->Matches(view)) {
        ok = false;
        break;
      }
    }
    cached = ok ? 1 : 0;
  }
  return cached == 1;
}

std::optional<std::vector<const PodClaim*>> DraState::Impl::Pending(const PodClaims& claims,
                                                                    const model::Node& node) const {
  std::vector<const PodClaim*> pending;
  for (const PodClaim& c : claims.claims) {
    const ClaimState* st = StateOf(ClaimKey(c));
    if (st != nullptr && st->allocated && (!c.per_pod || st->in_cluster)) {
      if (!st->UsableOn(node)) return std::nullopt;
      continue;
    }
    pending.push_back(&c);
  }
  return pending;
}

bool DraState::Impl::Search(const std::vector<const PodClaim*>& pending,
                            const std::vector<DeviceId>& inventory,
                            std::vector<std::vector<DeviceId>>* out) {
  bool any_request = std::any_of(pending.begin(), pending.end(),
                                 [](const PodClaim* c) { return !c->spec->requests.empty(); });
  if (inventory.empty() && any_request) return false;
  Searcher searcher(*this, pending, inventory);
  if (!searcher.Run()) return false;
  if (out != nullptr) *out = searcher.TakeResult();
  return true;
}

}  // namespace tidepool::sched
