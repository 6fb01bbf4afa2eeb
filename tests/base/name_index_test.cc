#include "base/name_index.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <deque>
#include <random>
#include <string>
#include <unordered_map>

namespace tidepool {
namespace {

TEST(NameIndex, FindsAddsAndErases) {
  NameIndex index;
  EXPECT_EQ(index.find("a"), NameIndex::kNone);
  EXPECT_FALSE(index.erase("a"));
  EXPECT_TRUE(index.try_emplace("a", 1));
  EXPECT_TRUE(index.try_emplace("b", 2));
  EXPECT_FALSE(index.try_emplace("a", 3));  // the first value of a name stays
  EXPECT_EQ(index.find("a"), 1u);
  EXPECT_EQ(index.find("b"), 2u);
  EXPECT_EQ(index.find("c"), NameIndex::kNone);
  EXPECT_EQ(index.size(), 2u);
  EXPECT_TRUE(index.erase("a"));
  EXPECT_EQ(index.find("a"), NameIndex::kNone);
  EXPECT_EQ(index.find("b"), 2u);
  EXPECT_EQ(index.size(), 1u);
  EXPECT_TRUE(index.erase("b"));
  EXPECT_TRUE(index.empty());
  EXPECT_EQ(index.find("b"), NameIndex::kNone);
}

// Names that share long prefixes, as node names do ("node-123", "new-pool-7-12"), added and
// erased at random against std::unordered_map: every lookup answers the same, through growth,
// long probe runs and the backward shifts of erases.
TEST(NameIndex, AgreesWithAnUnorderedMapUnderRandomChanges) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    std::deque<std::string> names;  // the views point here
    const int universe = 50 + static_cast<int>(rng() % 2000);
    for (int i = 0; i < universe; ++i)
      names.push_back(fmt::format("aks-gpu-{:08}-vmss{}", i % 97, i));
    NameIndex index;
    if (seed % 2 == 0) index.reserve(universe / 4);
    std::unordered_map<std::string_view, uint32_t> want;
    for (int step = 0; step < 20000; ++step) {
      std::string_view name = names[rng() % names.size()];
      const uint32_t op = rng() % 10;
      if (op < 5) {
        const auto value = static_cast<uint32_t>(step);
        ASSERT_EQ(index.try_emplace(name, value), want.try_emplace(name, value).second)
            << "seed " << seed << " step " << step << " add " << name;
      } else if (op < 8) {
        ASSERT_EQ(index.erase(name), want.erase(name) == 1)
            << "seed " << seed << " step " << step << " erase " << name;
      } else {
        auto it = want.find(name);
        ASSERT_EQ(index.find(name), it == want.end() ? NameIndex::kNone : it->second)
            << "seed " << seed << " step " << step << " find " << name;
      }
      ASSERT_EQ(index.size(), want.size());
    }
    for (const std::string& name : names) {
      auto it = want.find(name);
      ASSERT_EQ(index.find(name), it == want.end() ? NameIndex::kNone : it->second) << name;
    }
  }
}

}  // namespace
}  // namespace tidepool
