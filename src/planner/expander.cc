#include "planner/expander.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/check.h"

namespace tidepool::planner {
namespace {

constexpr double kEpsilon = 1e-9;

double PricePerPod(const ExpanderOption& o) {
  if (o.pods == 0) return std::numeric_limits<double>::infinity();
  return o.cost_per_hour.value_or(o.nodes * o.pool->price_per_hour) / o.pods;
}

// splitmix64: a small, well-mixed, seeded hash for the `random` expander.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Keeps the options whose score equals the best (lowest when `lower`, else highest).
template <typename Score>
void KeepBest(const std::vector<ExpanderOption>& options, std::vector<size_t>& alive, Score score,
              bool lower) {
  double best =
      lower ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
  for (size_t i : alive)
    best = lower ? std::min(best, score(options[i])) : std::max(best, score(options[i]));
  std::erase_if(alive, [&](size_t i) { return std::abs(score(options[i]) - best) > kEpsilon; });
}

}  // namespace

bool IsKnownExpander(std::string_view name) {
  return name == "priority" || name == "least-waste" || name == "price" || name == "most-pods" ||
         name == "random";
}

double Waste(const ExpanderOption& o) {
  double sum = 0;
  int n = 0;
  auto add = [&](int64_t alloc, int64_t req) {
    if (alloc <= 0) return;
    sum += static_cast<double>(alloc - req) / static_cast<double>(alloc);
    ++n;
  };
  add(o.allocatable.cpu_milli(), o.requested.cpu_milli());
  add(o.allocatable.memory(), o.requested.memory());
  add(o.allocatable.gpus(), o.requested.gpus());
  return n == 0 ? 1.0 : sum / n;
}

namespace {

struct Narrowed {
  size_t winner = 0;
  std::vector<std::string> steps;  // empty unless asked for
};

// The chain applied to `options`; `words` fills Narrowed::steps.
Narrowed Narrow(const std::vector<std::string>& chain, const std::vector<ExpanderOption>& options,
                uint64_t seed, uint64_t round, bool words) {
  TIDEPOOL_CHECK(!options.empty());
  std::vector<size_t> alive(options.size());
  for (size_t i = 0; i < options.size(); ++i) alive[i] = i;
  Narrowed out;
  auto step = [&](size_t before, auto&& text) {
    if (words && alive.size() < before) out.steps.push_back(text());
  };
  for (const std::string& name : chain) {
    if (alive.size() == 1) break;
    size_t before = alive.size();
    if (name == "priority") {
      KeepBest(
          options, alive, [](const ExpanderOption& o) { return double(o.pool->priority); }, false);
      step(before, [&] { return fmt::format("priority {}", options[alive[0]].pool->priority); });
    } else if (name == "least-waste") {
      KeepBest(options, alive, Waste, true);
      step(before, [&] { return fmt::format("least-waste {:.2f}", Waste(options[alive[0]])); });
    } else if (name == "price") {
      KeepBest(options, alive, PricePerPod, true);
      step(before,
           [&] { return fmt::format("price {:.4f}/pod-hour", PricePerPod(options[alive[0]])); });
    } else if (name == "most-pods") {
      KeepBest(
          options, alive, [](const ExpanderOption& o) { return double(o.pods); }, false);
      step(before, [&] { return fmt::format("most-pods {}", options[alive[0]].pods); });
    } else if (name == "random") {
      std::sort(alive.begin(), alive.end(),
                [&](size_t a, size_t b) { return options[a].pool->name < options[b].pool->name; });
      size_t pick = Mix(seed ^ Mix(round)) % alive.size();
      alive = {alive[pick]};
      if (words) out.steps.push_back("random");
    }
  }
  out.winner = *std::min_element(alive.begin(), alive.end(), [&](size_t a, size_t b) {
    return options[a].pool->name < options[b].pool->name;
  });
  if (words && alive.size() > 1) out.steps.push_back("name (tie)");
  return out;
}

}  // namespace

size_t ChooseIndex(const std::vector<std::string>& chain,
                   const std::vector<ExpanderOption>& options, uint64_t seed, uint64_t round) {
  return Narrow(chain, options, seed, round, false).winner;
}

ExpanderChoice ChooseOption(const std::vector<std::string>& chain,
                            const std::vector<ExpanderOption>& options, uint64_t seed,
                            uint64_t round, const std::vector<std::string>& outranked) {
  Narrowed n = Narrow(chain, options, seed, round, true);
  size_t winner = n.winner;
  std::vector<std::string>& steps = n.steps;
  std::string others;
  for (size_t i = 0; i < options.size(); ++i) {
    if (i == winner) continue;
    others += others.empty() ? "" : ", ";
    others += options[i].pool->name;
  }
  const ExpanderOption& w = options[winner];
  if (!outranked.empty()) {
    others += fmt::format("{}{}", others.empty() ? "" : ", ", fmt::join(outranked, ", "));
    std::string by_priority = fmt::format("priority {}", w.pool->priority);
    if (steps.empty() || steps.front() != by_priority) steps.insert(steps.begin(), by_priority);
  }
  std::string reason = fmt::format("{} pod(s) need {} new node(s)", w.pods, w.nodes);
  if (!others.empty()) {
    reason += fmt::format(
        "; chosen over {} by {}", others,
        steps.empty() ? std::string("name") : fmt::format("{}", fmt::join(steps, ", ")));
  }
  return {winner, reason};
}

}  // namespace tidepool::planner
