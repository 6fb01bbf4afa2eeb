// Which pool a node belongs to: the label rules, and the per-pass name index (PoolNames) giving
// the same answers as the config's own lookup.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "planner/cluster.h"

namespace tidepool::planner {
namespace {

model::AutoscalerConfig Config(std::initializer_list<std::string> names) {
  model::AutoscalerConfig config;
  for (const std::string& name : names) {
    model::Pool p;
    p.name = name;
    config.pools.push_back(std::move(p));
  }
  return config;
}

model::Node Labelled(std::initializer_list<std::pair<std::string_view, std::string>> labels) {
  model::Node n;
  n.meta.name = "n";
  for (const auto& [k, v] : labels) n.meta.labels[std::string(k)] = v;
  return n;
}

TEST(PoolOf, LabelsInOrderThenProvider) {
  model::AutoscalerConfig config = Config({"cpu", "gpu", "aks"});
  PlannerInput in;
  in.config = &config;
  in.provider_pool_of = [](const model::Node& n) {
    return n.meta.name == "from-provider" ? std::string("gpu") : std::string();
  };
  const PoolNames pools(config);
  auto both = [&](const model::Node& n) {
    const model::Pool* indexed = PoolOf(n, in, pools);
    EXPECT_EQ(indexed, PoolOf(n, in)) << n.meta.name;
    return indexed == nullptr ? std::string("-") : indexed->name;
  };
  EXPECT_EQ(both(Labelled({{model::kLabelPool, "cpu"}, {kAgentPoolLabel, "gpu"}})), "cpu");
  // tidepool.dev/pool naming no pool is an unmanaged node: the other labels are not asked.
  EXPECT_EQ(both(Labelled({{model::kLabelPool, "gone"}, {kAgentPoolLabel, "gpu"}})), "-");
  EXPECT_EQ(both(Labelled({{kAksAgentPoolLabel, "aks"}, {kAgentPoolLabel, "gpu"}})), "aks");
  EXPECT_EQ(both(Labelled({{kAksAgentPoolLabel, "system"}, {kAgentPoolLabel, "gpu"}})), "gpu");
  model::Node bare = Labelled({});
  EXPECT_EQ(both(bare), "-");
  bare.meta.name = "from-provider";
  EXPECT_EQ(both(bare), "gpu");
}

TEST(PoolOf, DuplicateNamesFindTheFirstPool) {
  model::AutoscalerConfig config = Config({"a", "b", "a"});
  const PoolNames pools(config);
  EXPECT_EQ(pools.Find("a"), &config.pools[0]);
  EXPECT_EQ(pools.Find("a"), config.FindPool("a"));
  EXPECT_EQ(pools.Find("b"), &config.pools[1]);
  EXPECT_EQ(pools.Find(""), nullptr);
  EXPECT_EQ(pools.Find("ab"), nullptr);
}

// Random configs and nodes: the index and the config's lookup agree on every node.
TEST(PoolOf, IndexAgreesWithConfigLookup) {
  std::mt19937 rng(11);
  for (int round = 0; round < 200; ++round) {
    model::AutoscalerConfig config;
    int pools = static_cast<int>(rng() % 12);
    for (int i = 0; i < pools; ++i) {
      model::Pool p;
      p.name = fmt::format("p{}", rng() % 8);  // duplicates on purpose
      config.pools.push_back(std::move(p));
    }
    PlannerInput in;
    in.config = &config;
    if (round % 2 == 1) {
      in.provider_pool_of = [](const model::Node& n) { return n.meta.name.substr(0, 2); };
    }
    const PoolNames names(config);
    for (int k = 0; k < 30; ++k) {
      model::Node n;
      n.meta.name = fmt::format("p{}-{}", rng() % 10, k);
      for (std::string_view label : {model::kLabelPool, kAksAgentPoolLabel, kAgentPoolLabel}) {
        if (rng() % 3 == 0) n.meta.labels[std::string(label)] = fmt::format("p{}", rng() % 10);
      }
      ASSERT_EQ(PoolOf(n, in, names), PoolOf(n, in)) << "round " << round << " node " << k;
    }
  }
}

}  // namespace
}  // namespace tidepool::planner
