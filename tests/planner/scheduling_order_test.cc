// SortForScheduling: the order kube-scheduler's queue takes pending pods (higher priority first,
// then older, then by "namespace/name" bytewise), whatever order they come in. Input already in
// key order (as the cluster model lists pods) takes a path that builds no key; both paths are
// compared here with the order written out from the definition.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "model/pod.h"
#include "planner/cluster.h"

namespace tidepool::planner {
namespace {

std::vector<const model::Pod*> ByDefinition(std::vector<const model::Pod*> pods) {
  std::stable_sort(pods.begin(), pods.end(), [](const model::Pod* a, const model::Pod* b) {
    return std::tuple(-a->PriorityOrZero(), a->meta.creation_timestamp.value_or(Time{}), a->Key()) <
           std::tuple(-b->PriorityOrZero(), b->meta.creation_timestamp.value_or(Time{}), b->Key());
  });
  return pods;
}

std::string Names(const std::vector<const model::Pod*>& pods) {
  std::vector<std::string> keys;
  for (const model::Pod* p : pods) keys.push_back(p->Key());
  return fmt::format("{}", fmt::join(keys, " "));
}

// Namespaces where key order and (namespace, name) order differ ("a/x" after "a-b/x": '/' sorts
// after '-'), the empty namespace, names that are prefixes of others, priorities and ages that
// tie often.
TEST(SchedulingOrder, AnyInputOrderGivesTheQueueOrder) {
  std::mt19937 rng(5);
  auto pick = [&](int n) { return static_cast<int>(rng() % n); };
  const std::vector<std::string> namespaces = {"a", "a-b", "a.b", "ab", "", "b", "a0"};
  const std::vector<std::string> names = {"x", "x-1", "x1", "x/", "y", "x-10", "x-2"};
  for (int round = 0; round < 500; ++round) {
    std::deque<model::Pod> pods;
    std::vector<std::string> used;
    const int n = 1 + pick(30);
    for (int i = 0; i < n; ++i) {
      model::Pod p;
      p.meta.namespace_ = namespaces[pick(static_cast<int>(namespaces.size()))];
      p.meta.name = names[pick(static_cast<int>(names.size()))] + std::to_string(pick(3));
      if (std::find(used.begin(), used.end(), p.Key()) != used.end()) continue;  // keys unique
      used.push_back(p.Key());
      if (pick(3) > 0) p.priority = pick(3) * 100 - 100;
      if (pick(3) > 0) p.meta.creation_timestamp = Time{} + std::chrono::seconds(pick(4));
      pods.push_back(std::move(p));
    }
    std::vector<const model::Pod*> input;
    for (const model::Pod& p : pods) input.push_back(&p);
    std::shuffle(input.begin(), input.end(), rng);
    const std::vector<const model::Pod*> want = ByDefinition(input);
    std::vector<const model::Pod*> shuffled = input;
    SortForScheduling(shuffled);
    ASSERT_EQ(Names(shuffled), Names(want)) << "round " << round << ", input in random order";
    std::vector<const model::Pod*> by_key = input;
    std::sort(by_key.begin(), by_key.end(),
              [](const model::Pod* a, const model::Pod* b) { return a->Key() < b->Key(); });
    SortForScheduling(by_key);
    ASSERT_EQ(Names(by_key), Names(want)) << "round " << round << ", input in key order";
    // Namespace, then name: not key order when one namespace is a prefix of another.
    std::vector<const model::Pod*> by_parts = input;
    std::sort(by_parts.begin(), by_parts.end(), [](const model::Pod* a, const model::Pod* b) {
      return std::tie(a->meta.namespace_, a->meta.name) <
             std::tie(b->meta.namespace_, b->meta.name);
    });
    SortForScheduling(by_parts);
    ASSERT_EQ(Names(by_parts), Names(want)) << "round " << round << ", input by namespace and name";
  }
}

}  // namespace
}  // namespace tidepool::planner
