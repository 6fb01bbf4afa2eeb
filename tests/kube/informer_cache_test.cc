// InformerCache: the objects by key and as one shared list in key order; a list handed out never
// changes, and a change while no reader holds the list is made in place.
#include "kube/client/informer_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/shared_list.h"

namespace tidepool::kube {
namespace {

using Item = InformerCache::Item;

Item Value(int v, std::string rv = "") { return {std::make_shared<const int>(v), std::move(rv)}; }

std::vector<int> Values(const SharedList<int>& list) {
  return std::vector<int>(list.begin(), list.end());
}

std::vector<int> Values(const std::map<std::string, int>& m) {
  std::vector<int> out;
  for (const auto& [_, v] : m) out.push_back(v);
  return out;
}

TEST(InformerCache, ListsInKeyOrder) {
  InformerCache c;
  EXPECT_TRUE(c.Set("b", Value(2)));
  EXPECT_TRUE(c.Set("a", Value(1)));
  EXPECT_TRUE(c.Set("c", Value(3)));
  EXPECT_FALSE(c.Set("b", Value(20, "7")));
  EXPECT_EQ(Values(SharedList<int>(c.List())), (std::vector<int>{1, 20, 3}));
  EXPECT_EQ(c.Find("b")->resource_version, "7");
  EXPECT_TRUE(c.Erase("a"));
  EXPECT_FALSE(c.Erase("a"));
  EXPECT_EQ(c.Find("a"), nullptr);
  EXPECT_EQ(Values(SharedList<int>(c.List())), (std::vector<int>{20, 3}));
}

TEST(InformerCache, AListHandedOutNeverChanges) {
  InformerCache c;
  c.Set("a", Value(1));
  c.Set("b", Value(2));
  SharedList<int> held(c.List());
  c.Set("a", Value(10));
  c.Erase("b");
  c.Set("c", Value(3));
  EXPECT_EQ(Values(held), (std::vector<int>{1, 2}));
  EXPECT_EQ(Values(SharedList<int>(c.List())), (std::vector<int>{10, 3}));
}

TEST(InformerCache, ChangesWithNoReaderAreMadeInPlace) {
  InformerCache c;
  c.Set("a", Value(1));
  const void* list = c.List().get();  // taken and dropped at once
  c.Set("b", Value(2));
  c.Set("a", Value(3));
  c.Erase("b");
  EXPECT_EQ(c.List().get(), list) << "no copy while nobody holds the list";
  auto held = c.List();
  c.Set("a", Value(4));
  EXPECT_NE(c.List().get(), held.get()) << "a copy while a reader holds it";
}

// Random sets, erases and relists against a std::map, with lists taken and kept at random: the
// cache's list is the map's values at every step, and every kept list is what it was.
// The count of changes moves with every change to the list and with nothing else: a relist
// (Replace) that brings the same objects back leaves it, so a reader's version stays.
TEST(InformerCache, CountsEveryChangeOfTheListAndNothingElse) {
  InformerCache c;
  EXPECT_EQ(c.changes(), 0u);
  c.Set("a", Value(1, "1"));
  c.Set("b", Value(2, "2"));
  EXPECT_EQ(c.changes(), 2u);
  c.Set("a", Value(3, "3"));
  EXPECT_EQ(c.changes(), 3u);
  EXPECT_FALSE(c.Erase("missing"));
  EXPECT_EQ(c.changes(), 3u);
  EXPECT_TRUE(c.Erase("b"));
  EXPECT_EQ(c.changes(), 4u);
  // A relist that found nothing new hands back the objects it holds.
  std::map<std::string, Item> same{{"a", *c.Find("a")}};
  c.Replace(same);
  EXPECT_EQ(c.changes(), 4u);
  // The same key with another object, another key, one key fewer: each a change.
  c.Replace({{"a", Value(3, "3")}});
  EXPECT_EQ(c.changes(), 5u);
  c.Replace({{"a", *c.Find("a")}, {"c", Value(4, "4")}});
  EXPECT_EQ(c.changes(), 6u);
  c.Replace({{"c", *c.Find("c")}});
  EXPECT_EQ(c.changes(), 7u);
  c.Replace({});
  EXPECT_EQ(c.changes(), 8u);
  c.Replace({});
  EXPECT_EQ(c.changes(), 8u);
}

// A write that left the object as it was (Informer<T> hands the cached value back) only moves the
// item's resourceVersion: the count, the value and a held list stay.
TEST(InformerCache, RestampIsNoChange) {
  InformerCache c;
  c.Set("a", Value(1, "1"));
  c.Set("b", Value(2, "2"));
  const uint64_t count = c.changes();
  const InformerCache::Decoded value = c.Find("a")->value;
  SharedList<int> held(c.List());
  c.Restamp("a", "7");
  EXPECT_EQ(c.changes(), count);
  EXPECT_EQ(c.Find("a")->resource_version, "7");
  EXPECT_EQ(c.Find("a")->value, value);
  EXPECT_EQ(Values(SharedList<int>(c.List())), (std::vector<int>{1, 2}));
  EXPECT_EQ(Values(held), (std::vector<int>{1, 2}));
  // A relist that brings the value back under the new resourceVersion is no change either.
  c.Replace({{"a", *c.Find("a")}, {"b", *c.Find("b")}});
  EXPECT_EQ(c.changes(), count);
}

TEST(InformerCache, RandomChangesKeepTheListAndEveryHeldOne) {
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
    InformerCache c;
    std::map<std::string, int> expected;
    std::vector<std::pair<SharedList<int>, std::vector<int>>> held;
    for (int step = 0; step < 200; ++step) {
      std::string key = "k" + std::to_string(pick(30));
      int v = pick(1000);
      switch (pick(8)) {
        case 0:
        case 1:
        case 2:
          EXPECT_EQ(c.Set(key, Value(v)), !expected.contains(key));
          expected[key] = v;
          break;
        case 3:
        case 4:
          EXPECT_EQ(c.Erase(key), expected.erase(key) > 0);
          break;
        case 5: {
          std::map<std::string, Item> fresh;
          expected.clear();
          for (int k = pick(10); k > 0; --k) {
            std::string fresh_key = "k" + std::to_string(pick(30));
            fresh[fresh_key] = Value(v + k);
            expected[fresh_key] = v + k;
          }
          c.Replace(std::move(fresh));
          break;
        }
        case 6:
          held.emplace_back(SharedList<int>(c.List()), Values(expected));
          break;
        default:
          if (!held.empty()) held.erase(held.begin() + pick(static_cast<int>(held.size())));
      }
      ASSERT_EQ(Values(SharedList<int>(c.List())), Values(expected)) << "step " << step;
      ASSERT_EQ(c.size(), expected.size());
      for (const auto& [list, values] : held) ASSERT_EQ(Values(list), values) << "step " << step;
    }
  }
}

// A reader thread takes and drops lists while the writer changes the cache (under the lock an
// informer holds for both): every list it takes is sorted and complete at the instant it was
// taken, however the writer goes on.
TEST(InformerCache, ReadersOnAnotherThreadSeeWholeLists) {
  InformerCache c;
  std::mutex mu;
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done.load()) {
      SharedList<int> list;
      size_t size = 0;
      {
        std::lock_guard lock(mu);
        list = SharedList<int>(c.List());
        size = c.size();
      }
      ASSERT_EQ(list.size(), size);
      std::vector<int> values = Values(list);
      ASSERT_TRUE(std::is_sorted(values.begin(), values.end()));
    }
  });
  std::mt19937 rng(3);
  for (int i = 0; i < 20000; ++i) {
    int k = static_cast<int>(rng() % 500);
    std::lock_guard lock(mu);
    // Values equal to their key's number, so that key order is value order.
    char key[8];
    snprintf(key, sizeof key, "k%03d", k);
    if (rng() % 3 == 0) {
      c.Erase(key);
    } else {
      c.Set(key, Value(k));
    }
  }
  done = true;
  reader.join();
}

}  // namespace
}  // namespace tidepool::kube
