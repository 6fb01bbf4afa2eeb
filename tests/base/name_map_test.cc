#include "base/name_map.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace tidepool {
namespace {

std::vector<std::pair<std::string_view, int>> Entries(const NameMap<int>& m) {
  return {m.begin(), m.end()};
}

TEST(NameMap, FindsWhatWasAddedInNameOrder) {
  NameMap<int> m;
  m.Add("a", 1);
  m.Add("b", 2);
  m.Add("c", 3);
  EXPECT_EQ(m.size(), 3u);
  EXPECT_EQ(m.at("b"), 2);
  EXPECT_TRUE(m.contains("c"));
  EXPECT_FALSE(m.contains("bb"));
  EXPECT_EQ(m.find("0"), m.end());
  EXPECT_EQ(m.find("d"), m.end());
}

// Out of order and with repeated names it is a std::map's emplace: sorted, first value wins.
TEST(NameMap, MatchesAMapForAnyOrderOfNames) {
  std::mt19937 rng(5);
  std::vector<std::string> names;
  for (int i = 0; i < 40; ++i) names.push_back("node-" + std::to_string(i % 29));
  for (int round = 0; round < 200; ++round) {
    std::shuffle(names.begin(), names.end(), rng);
    if (round % 4 == 0) std::sort(names.begin(), names.end());
    NameMap<int> m;
    std::map<std::string_view, int> want;
    for (size_t k = 0; k < names.size(); ++k) {
      m.Add(names[k], static_cast<int>(k));
      want.emplace(names[k], static_cast<int>(k));
    }
    const std::vector<std::pair<std::string_view, int>> sorted(want.begin(), want.end());
    ASSERT_EQ(Entries(m), sorted);
    for (const auto& [name, value] : want) {
      ASSERT_NE(m.find(name), m.end());
      EXPECT_EQ(m.at(name), value);
    }
    EXPECT_FALSE(m.contains("node-"));
    EXPECT_FALSE(m.contains("node-99"));
  }
}

// A walker answers as find() does, whatever the order of the names asked: in name order (the
// use it is for), out of order, repeated, absent, and as views of the map's own bytes or copies.
TEST(NameMap, AWalkerFindsWhatFindFinds) {
  std::mt19937 rng(9);
  std::vector<std::string> names;
  for (int i = 0; i < 60; ++i) names.push_back("node-" + std::to_string(i));
  for (int round = 0; round < 300; ++round) {
    NameMap<int> m;
    for (size_t k = 0; k < names.size(); ++k)
      if (rng() % 3 != 0) m.Add(names[k], static_cast<int>(k));
    std::vector<std::string> copies = names;  // the same names in other bytes
    copies.push_back("node-");
    copies.push_back("zzz");
    std::vector<std::string_view> asked;
    for (size_t k = 0; k < copies.size(); ++k)
      asked.push_back(k < names.size() && rng() % 2 == 0 ? std::string_view(names[k])
                                                         : std::string_view(copies[k]));
    std::sort(asked.begin(), asked.end());
    if (round % 3 == 1) std::shuffle(asked.begin(), asked.end(), rng);
    if (round % 3 == 2) {  // mostly in order, a few asked again or out of place
      for (int swaps = 0; swaps < 5; ++swaps)
        std::swap(asked[rng() % asked.size()], asked[rng() % asked.size()]);
      asked.insert(asked.begin() + static_cast<long>(rng() % asked.size()), asked[rng() % 10]);
    }
    NameMap<int>::Walker walker(m);
    for (std::string_view name : asked) ASSERT_EQ(walker.find(name), m.find(name)) << name;
  }
}

// SeekName pairs two lists in name order: it stops at the first entry not before the name and
// says whether that entry is the name, across maps whose keys are strings or views.
TEST(SeekName, StopsAtTheFirstEntryNotBeforeTheName) {
  const std::map<std::string, int> m = {{"node-1", 1}, {"node-10", 10}, {"node-3", 3}};
  auto it = m.begin();
  EXPECT_FALSE(SeekName(it, m.end(), "node-0"));  // before all: stays
  EXPECT_EQ(it, m.begin());
  EXPECT_TRUE(SeekName(it, m.end(), "node-10"));
  EXPECT_EQ(it->second, 10);
  EXPECT_FALSE(SeekName(it, m.end(), "node-2"));  // between: stops at the next
  EXPECT_EQ(it->second, 3);
  EXPECT_FALSE(SeekName(it, m.end(), "node-4"));
  EXPECT_EQ(it, m.end());
  NameMap<int> views;
  views.Add("a", 1);
  views.Add("c", 3);
  auto v = views.begin();
  EXPECT_TRUE(SeekName(v, views.end(), "c"));
  EXPECT_EQ(v->second, 3);
}

TEST(NameMap, AtAnAbsentNameStops) {
  NameMap<int> m;
  m.Add("a", 1);
  EXPECT_DEATH((void)m.at("b"), "no such name");
}

}  // namespace
}  // namespace tidepool
