// SlotPools: a slot's pool is kept while the slot holds the same node object in the same model
// (the same id and generation) under the same config; the provider's answers are asked again.
#include "planner/slot_pools.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "sched/cluster_model.h"

namespace tidepool::planner {
namespace {

model::Node NodeNamed(const std::string& name, const std::string& pool_label) {
  model::Node n;
  n.meta.name = name;
  if (!pool_label.empty()) n.meta.labels[std::string(model::kLabelPool)] = pool_label;
  return n;
}

TEST(SlotPools, KeepsWhatTheLabelsSayAndAsksTheProviderAgain) {
  model::AutoscalerConfig config;
  config.pools.emplace_back().name = "a";
  config.pools.emplace_back().name = "b";
  model::Node labelled = NodeNamed("n0", "a");
  model::Node mapped = NodeNamed("n1", "");
  sched::ClusterModel model;
  ASSERT_TRUE(model.SetNode(sched::ClusterModel::Borrow(&labelled)).has_value());
  ASSERT_TRUE(model.SetNode(sched::ClusterModel::Borrow(&mapped)).has_value());
  const sched::NodeIndex n0 = model.snapshot().FindNode("n0");
  const sched::NodeIndex n1 = model.snapshot().FindNode("n1");
  std::string provider_says = "a";
  int asked = 0;
  PlannerInput input;
  input.config = &config;
  input.provider_pool_of = [&](const model::Node&) {
    ++asked;
    return provider_says;
  };
  const PoolNames names(config);
  SlotPools pools;
  pools.Begin(model, config);
  EXPECT_EQ(pools.Of(n0, labelled, input, names), &config.pools[0]);
  EXPECT_EQ(pools.Of(n1, mapped, input, names), &config.pools[0]);
  EXPECT_EQ(asked, 1);

  // The provider now maps n1 elsewhere: asked again, not kept. The label's answer is kept: the
  // same object in the same slot gets it without the labels being read (a label changed in place
  // would not be seen; the model's objects never change).
  provider_says = "b";
  labelled.meta.labels[std::string(model::kLabelPool)] = "b";
  pools.Begin(model, config);
  EXPECT_EQ(pools.Of(n1, mapped, input, names), &config.pools[1]);
  EXPECT_EQ(asked, 2);
  EXPECT_EQ(pools.Of(n0, labelled, input, names), &config.pools[0]);

  // Another object in the slot, or a slot the model did not hand out at Begin: read afresh.
  model::Node other = NodeNamed("n0", "b");
  EXPECT_EQ(pools.Of(n0, other, input, names), &config.pools[1]);
  EXPECT_EQ(pools.Of(sched::NodeIndex{7}, other, input, names), &config.pools[1]);

  // Another config forgets everything.
  model::AutoscalerConfig copy = config;
  const PoolNames copy_names(copy);
  pools.Begin(model, copy);
  EXPECT_EQ(pools.Of(n0, labelled, input, copy_names), &copy.pools[1]);
}

TEST(SlotPools, AModelMadeWhereAnotherWasIsAnotherModel) {
  model::AutoscalerConfig config;
  config.pools.emplace_back().name = "a";
  config.pools.emplace_back().name = "b";
  model::Node node = NodeNamed("n0", "a");
  PlannerInput input;
  input.config = &config;
  const PoolNames names(config);
  std::optional<sched::ClusterModel> model;  // emplace() reuses the storage: the same address
  model.emplace();
  ASSERT_TRUE(model->SetNode(sched::ClusterModel::Borrow(&node)).has_value());
  SlotPools pools;
  pools.Begin(*model, config);
  EXPECT_EQ(pools.Of(0, node, input, names), &config.pools[0]);
  node.meta.labels[std::string(model::kLabelPool)] = "b";
  model.reset();
  model.emplace();
  ASSERT_TRUE(model->SetNode(sched::ClusterModel::Borrow(&node)).has_value());
  pools.Begin(*model, config);
  EXPECT_EQ(pools.Of(0, node, input, names), &config.pools[1]);
}

}  // namespace
}  // namespace tidepool::planner
