// ConstraintLists: the nodes a pod's node constraints let it onto, kept per set of constraints,
// so a search for a node walks those only (docs/architecture.md, "Searches that skip the nodes a
// pod cannot use").
//
// Both planners search for a node by walking every node in a fixed order (scale-up's ranks,
// scale-down's destinations) and trying each. A pod whose node selector, required node affinity,
// tolerations or cordon toleration let it onto few of them (pods for a pool whose nodes are still
// booting) tries the rest for nothing, and a burst of such pods, each of its own Job and so of
// its own equivalence group, tries them once each. The nodes that pass those filters are the same
// for every pod of one NodeConstraintsKey.
//
// A set's list is made only once its long searches have tried as many nodes as there are: making
// it costs one more such walk, so a set that searches little (pods that fit where the last one
// did) never pays for a list, and one that searches much pays at most double what walking did.
// A search that ends within its first few tries does not even ask which set the pod is of.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/pod.h"

namespace tidepool::planner {

class ConstraintLists {
 public:
  static constexpr size_t kNotFound = SIZE_MAX;

  // The id of `pod`'s set of node constraints. It builds the key each call: callers keep the id
  // per equivalence group or per pod.
  uint32_t IdOf(const model::Pod& pod);

  // A walk that ends within this many tries costs about what finding the pod's set would: it
  // neither asks for the set nor counts toward its list.
  static constexpr size_t kShortWalk = 16;

  // Tries the positions [0, n) from `start` on and around, as a walk of every node would, until
  // `fits(position)` says yes; returns that position, or kNotFound. After kShortWalk tries it asks
  // `set_of()` for the pod's set; once the set's list is made, it tries only the positions where
  // `passes(position)` (the pod's node constraints hold). The answer is the full walk's: a
  // position that fits passes.
  template <class SetOf, class Passes, class Fits>
  size_t Walk(const SetOf& set_of, size_t n, size_t start, const Passes& passes, const Fits& fits) {
    return Walk(set_of, n, start, passes, fits, [](size_t from, size_t) { return from; });
  }

  // The same, where `next(from, end)` gives the first position in [from, end) that may fit (or
  // `end`): a walk without a list tries only those after its first tries (a room index passing
  // over nodes without room). Every position it passes over must not fit. Only the positions
  // tried count toward the set's list.
  template <class SetOf, class Passes, class Fits, class Next>
  size_t Walk(const SetOf& set_of, size_t n, size_t start, const Passes& passes, const Fits& fits,
              const Next& next) {
    if (n == 0) return kNotFound;
    start %= n;
    const size_t first_tries = std::min(n, kShortWalk);
    for (size_t k = 0; k < first_tries; ++k) {
      const size_t position = Wrap(start + k, n);
      if (fits(position)) return position;
    }
    if (first_tries == n) return kNotFound;
    const uint32_t id = set_of();
    if (const std::vector<uint32_t>* list = Positions(id, n, passes)) {
      // The positions tried so far fit nowhere: going on from the next one around the list
      // finds the full walk's answer (at worst trying those again).
      return WalkList(*list, n, Wrap(start + first_tries, n), fits);
    }
    size_t tried = first_tries;
    auto run = [&](size_t from, size_t end) {
      for (size_t p = next(from, end); p < end; p = next(p + 1, end)) {
        ++tried;
        if (fits(p)) return p;
      }
      return kNotFound;
    };
    // The rest in order: up to the end, then from the first position up to `start`.
    const size_t rest = start + first_tries;
    size_t found = rest < n ? run(rest, n) : kNotFound;
    if (found == kNotFound) found = run(rest < n ? 0 : rest - n, start);
    sets_[id].tried += tried;
    return found;
  }

  // The positions name other nodes now (a revert freed slots that new nodes reuse): every list
  // is made again when next needed.
  void Forget() {
    for (Set& s : sets_) {
      s.made_upto = 0;
      s.positions.clear();
    }
  }

  // Whether the set's list is made (for tests).
  bool Made(uint32_t id) const { return sets_[id].made_upto > 0; }

 private:
  struct Set {
    size_t tried = 0;      // positions its searches tried while it had no list
    size_t made_upto = 0;  // the list covers the positions below this (0: not made)
    std::vector<uint32_t> positions;
  };

  static size_t Wrap(size_t position, size_t n) { return position >= n ? position - n : position; }

  // The first position of `list` below `n`, from `start` on and around, that fits.
  template <class Fits>
  static size_t WalkList(const std::vector<uint32_t>& list, size_t n, size_t start,
                         const Fits& fits) {
    auto below = [&](size_t p) {
      return static_cast<size_t>(
          std::lower_bound(list.begin(), list.end(), static_cast<uint32_t>(p)) - list.begin());
    };
    const size_t size = below(n);
    if (size == 0) return kNotFound;
    const size_t first = below(start);
    for (size_t k = 0; k < size; ++k) {
      const uint32_t position = list[Wrap(first + k, size)];
      if (fits(position)) return position;
    }
    return kNotFound;
  }

  // The passing positions among [0, n) and maybe beyond (a walk over fewer positions than the
  // list was made for reads its first ones), or nullptr while walking them all costs less.
  // Positions appended since the list was made are read once, when first needed.
  template <class Passes>
  const std::vector<uint32_t>* Positions(uint32_t id, size_t n, const Passes& passes) {
    Set& s = sets_[id];
    if (s.made_upto == 0 && s.tried < n) return nullptr;
    for (size_t position = s.made_upto; position < n; ++position)
      if (passes(position)) s.positions.push_back(static_cast<uint32_t>(position));
    s.made_upto = std::max(s.made_upto, n);
    return &s.positions;
  }

  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<Set> sets_;
};

}  // namespace tidepool::planner
