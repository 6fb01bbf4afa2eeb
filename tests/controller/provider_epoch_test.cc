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
    auto it = pool_of.find(node.name());
    return it == pool_of.end() ? "" : it->second;
  }

  std::vector<cloud::PoolSize> sizes{{"cpu", 2, 2, false, ""}, {"gpu", 1, 1, false, ""}};
  std::map<std::string, std::string> pool_of{{"a", "cpu"}, {"b", "cpu"}, {"c", "gpu"}};
};

ClusterView ViewOf(std::vector<std::string> names, uint64_t version) {
  std::vector<std::shared_ptr<const model::Node>> nodes;
  for (const std::string& name : names) {
    auto n = std::make_shared<model::Node>();
    n->meta.name = name;
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

  MapProvider provider_;
  ProviderEpoch epoch_;
  ClusterView view_ = ViewOf({"a", "b", "c"}, 7);
};

TEST_F(ProviderEpochTest, TheSameAnswersOnTheSameViewKeepIt) {
  EXPECT_EQ(epoch_.value(), 0u);
  uint64_t first = Refresh(view_);
  EXPECT_GT(first, 0u);
  EXPECT_EQ(Refresh(view_), first);
  EXPECT_EQ(Refresh(view_), first);
}

TEST_F(ProviderEpochTest, OtherSizesMoveIt) {
  uint64_t first = Refresh(view_);
  provider_.sizes[1].target = 2;
  uint64_t second = Refresh(view_);
  EXPECT_GT(second, first);
  EXPECT_EQ(Refresh(view_), second);
  provider_.sizes[0].stockout = true;
  EXPECT_GT(Refresh(view_), second);
}

TEST_F(ProviderEpochTest, ANodeMappedElsewhereMovesIt) {
  uint64_t first = Refresh(view_);
  provider_.pool_of["b"] = "gpu";
  EXPECT_GT(Refresh(view_), first);
  provider_.pool_of.erase("c");  // no longer the provider's
  uint64_t third = Refresh(view_);
  EXPECT_GT(third, first + 1);
}

// Answers about other nodes are not compared: the epoch moves, as the view's version does.
TEST_F(ProviderEpochTest, AnotherOrUnknownViewMovesIt) {
  uint64_t first = Refresh(view_);
  uint64_t second = Refresh(ViewOf({"a", "b", "c", "d"}, 8));
  EXPECT_GT(second, first);
  uint64_t third = Refresh(ViewOf({"a", "b", "c", "d"}, 0));
  EXPECT_GT(third, second);
  EXPECT_GT(Refresh(ViewOf({"a", "b", "c", "d"}, 0)), third) << "an unknown view is never the same";
}

}  // namespace
}  // namespace tidepool::controller
