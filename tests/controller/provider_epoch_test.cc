// ProviderEpoch: the provider's share of the live observation's version moves with what a refresh
// read (pool sizes, the pool of each node of the view) and stays when a refresh reads the same.
#include "controller/provider_epoch.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tidepool::controller {
namespace {

class MapProvider : public cloud::CloudProvider {
 public:
  std::string_view Name() const override { return "map"; }
  Result<std::vector<cloud::PoolSize>> Refresh(Time) override { return sizes; }
  Result<void> IncreaseSize(const std::string&, int, Time) override { return {}; }
  Result<void> DecreaseTargetSize(const std::string&, int, Time) override { return {}; }
  Result<void> DeleteNode(const std::string&, const model::Node&, Time) override { return {}; }
  std::string PoolOf(const model::Node& node) const override {
    ++asked;
    auto it = pool_of.find(node.name());
    return it == pool_of.end() ? "" : it->second;
  }

  std::vector<cloud::PoolSize> sizes{{"cpu", 2, 2, false, ""}, {"gpu", 1, 1, false, ""}};
  std::map<std::string, std::string> pool_of{{"a", "cpu"}, {"b", "cpu"}, {"c", "gpu"}};
  mutable int asked = 0;
};

model::AutoscalerConfig Pools() {
  model::AutoscalerConfig config;
  for (const char* name : {"cpu", "gpu"}) config.pools.push_back(model::Pool{.name = name});
  return config;
}

// Nodes without pool labels (the provider's mapping places them), but `labeled`, labeled "cpu".
ClusterView ViewOf(std::vector<std::string> names, uint64_t version, std::string labeled = "") {
  std::vector<std::shared_ptr<const model::Node>> nodes;
  for (const std::string& name : names) {
    auto n = std::make_shared<model::Node>();
    n->meta.name = name;
    if (name == labeled) n->meta.labels[std::string(model::kLabelPool)] = "cpu";
    nodes.push_back(std::move(n));
  }
  ClusterView v;
  v.nodes = SharedList<model::Node>::Of(nodes);
  v.version = version;
  return v;
}

class ProviderEpochTest : public ::testing::Test {
 protected:
  // A refresh of `provider_` with the view; the epoch after it.
  uint64_t Refresh(const ClusterView& view) {
    epoch_.Refreshed(provider_.sizes, view, provider_);
    return epoch_.value();
  }
  // Refreshes until the epoch holds the view's placements (two refreshes: one that sees the view
  // change, one that sees it again); the epoch then.
  uint64_t Settle(const ClusterView& view) {
    Refresh(view);
    return Refresh(view);
  }

  model::AutoscalerConfig config_ = Pools();
  MapProvider provider_;
  ProviderEpoch epoch_{config_};
  ClusterView view_ = ViewOf({"a", "b", "c"}, 7);
};

TEST_F(ProviderEpochTest, TheSameAnswersOnTheSameViewKeepIt) {
  EXPECT_EQ(epoch_.value(), 0u);
  uint64_t first = Refresh(view_);
  EXPECT_GT(first, 0u);
  EXPECT_EQ(provider_.asked, 0) << "a changed view is planned anyway: nothing to ask";
  // Seen again: nothing to compare the answers with yet, so it moves once more.
  uint64_t second = Refresh(view_);
  EXPECT_GT(second, first);
  EXPECT_EQ(provider_.asked, 3);
  EXPECT_EQ(Refresh(view_), second);
  EXPECT_EQ(Refresh(view_), second);
}

TEST_F(ProviderEpochTest, OtherSizesMoveIt) {
  uint64_t first = Settle(view_);
  provider_.sizes[1].target = 2;
  uint64_t second = Refresh(view_);
  EXPECT_GT(second, first);
  EXPECT_EQ(Refresh(view_), second);
  provider_.sizes[0].stockout = true;
  EXPECT_GT(Refresh(view_), second);
}

TEST_F(ProviderEpochTest, ANodeMappedElsewhereMovesIt) {
  uint64_t first = Settle(view_);
  provider_.pool_of["b"] = "gpu";
  uint64_t second = Refresh(view_);
  EXPECT_GT(second, first);
  EXPECT_EQ(Refresh(view_), second);
  provider_.pool_of.erase("c");  // no longer the provider's
  uint64_t third = Refresh(view_);
  EXPECT_GT(third, second);
  provider_.pool_of["c"] = "elsewhere";  // a pool not configured: unmanaged, as before
  EXPECT_EQ(Refresh(view_), third);
}

// A node its labels place is never asked about, as the planners never ask: the provider's answer
// for it does not matter.
TEST_F(ProviderEpochTest, ANodeItsLabelsPlaceIsNotAsked) {
  ClusterView view = ViewOf({"a", "b", "c"}, 7, /*labeled=*/"b");
  uint64_t first = Settle(view);
  EXPECT_EQ(provider_.asked, 2);
  provider_.pool_of["b"] = "gpu";
  EXPECT_EQ(Refresh(view), first);
  EXPECT_EQ(provider_.asked, 4);
}

// Answers about other nodes are not compared: the epoch moves, as the view's version does.
TEST_F(ProviderEpochTest, AnotherOrUnknownViewMovesIt) {
  uint64_t first = Settle(view_);
  uint64_t second = Refresh(ViewOf({"a", "b", "c", "d"}, 8));
  EXPECT_GT(second, first);
  uint64_t third = Refresh(ViewOf({"a", "b", "c", "d"}, 0));
  EXPECT_GT(third, second);
  EXPECT_GT(Refresh(ViewOf({"a", "b", "c", "d"}, 0)), third) << "an unknown view is never the same";
}

}  // namespace
}  // namespace tidepool::controller
