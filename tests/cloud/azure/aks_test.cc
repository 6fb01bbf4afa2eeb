// aks: agent pool count through PUT with If-Match, deleteMachines with machine names from nodes,
// stockouts from failed scale operations, templates from agent pool profiles.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "cloud/azure/node_template.h"
#include "tests/cloud/azure/azure_fixture.h"

namespace tidepool::testing::azure {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

class AzureAksTest : public AzureTestBase {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(AzureTestBase::SetUp());
    fake_->AddManagedCluster("cluster1");
    fake_->AddAgentPool("cluster1", {.name = "gpu", .vm_size = "Standard_NC6s_v3", .count = 2});
    fake_->AddAgentPool(
        "cluster1", {.name = "gpuspot", .vm_size = "Standard_NC6s_v3", .count = 0, .spot = true});
    fake_->AddAgentPool("cluster1", {.name = "system", .count = 1, .enable_autoscaling = true});
    provider_ = Make(AksConfig(
        {MakePool("gpu-heavy", 6), MakePool("gpu-heavy-spot", 6, true), MakePool("system", 3)},
        {{"agentPools.gpu-heavy", "gpu"}, {"agentPools.gpu-heavy-spot", "gpuspot"}}));
    ASSERT_NE(provider_, nullptr);
  }
  std::unique_ptr<cloud::azure::AzureProvider> provider_;
};

TEST_F(AzureAksTest, CountIsTheSizeAndIncreaseIsAPutWithIfMatch) {
  auto size = RefreshOne(*provider_, "gpu-heavy");
  EXPECT_EQ(size.target, 2);
  EXPECT_EQ(size.instances, 2);
  ASSERT_TRUE(provider_->IncreaseSize("gpu-heavy", 2, clock_.Now()).has_value());
  EXPECT_EQ(fake_->AgentPoolCount("cluster1", "gpu"), 4);
  RecordedRequest put;
  for (const auto& r : fake_->requests())
    if (r.method == "PUT") put = r;
  EXPECT_THAT(put.path, HasSubstr("/managedClusters/cluster1/agentPools/gpu"));
  EXPECT_THAT(put.headers["If-Match"], HasSubstr("etag-"));
  auto body = nlohmann::json::parse(put.body);
  EXPECT_EQ(body["properties"]["count"], 4);
  EXPECT_EQ(body["properties"]["vmSize"], "Standard_NC6s_v3");
  EXPECT_FALSE(body["properties"].contains("provisioningState"));
  EXPECT_FALSE(body["properties"].contains("eTag"));
  // The PUT's operation is followed (Azure-AsyncOperation) and ends.
  EXPECT_EQ(provider_->pending_operations("gpu-heavy"), 1u);
  clock_.Advance(std::chrono::seconds(2));
  EXPECT_EQ(RefreshOne(*provider_, "gpu-heavy").target, 4);
  EXPECT_EQ(provider_->pending_operations("gpu-heavy"), 0u);
}

TEST_F(AzureAksTest, OneOperationAtATimePerAgentPool) {
  fake_->SetOperationPolls(3);
  ASSERT_TRUE(provider_->IncreaseSize("gpu-heavy", 1, clock_.Now()).has_value());
  auto busy = provider_->IncreaseSize("gpu-heavy", 1, clock_.Now());
  ASSERT_FALSE(busy.has_value());
  EXPECT_EQ(busy.error().code(), Error::Code::kUnavailable);
  EXPECT_THAT(busy.error().message(), HasSubstr("still running"));
  EXPECT_EQ(fake_->CountRequests("PUT", ""), 1);
}

TEST_F(AzureAksTest, EtagMismatchIsRetriedOnce) {
  fake_->EtagMismatchNextWrite();
  ASSERT_TRUE(provider_->IncreaseSize("gpu-heavy", 1, clock_.Now()).has_value());
  EXPECT_EQ(fake_->CountRequests("PUT", ""), 2);
  EXPECT_EQ(fake_->AgentPoolCount("cluster1", "gpu"), 3);
}

TEST_F(AzureAksTest, AgentPoolsScaledByAksItselfAreRefused) {
  auto r = provider_->IncreaseSize("system", 1, clock_.Now());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Error::Code::kInvalidArgument);
  EXPECT_THAT(r.error().message(), HasSubstr("enableAutoScaling"));
  EXPECT_EQ(fake_->CountRequests("PUT", ""), 0);
}

TEST_F(AzureAksTest, DeleteNodeUsesDeleteMachinesWithTheMachineName) {
  RefreshOne(*provider_, "gpu-heavy");
  auto names = fake_->MachineNames("cluster1", "gpu");
  ASSERT_THAT(names, ElementsAre("aks-gpu-12345678-vmss000000", "aks-gpu-12345678-vmss000001"));
  // By providerID (as listed by the machines API).
  model::Node n1;
  n1.meta.name = "renamed-node";
  n1.provider_id = "azure:///subscriptions/" + fake_->options().subscription +
                   "/resourcegroups/rg1/providers/Microsoft.Compute/virtualMachineScaleSets/"
                   "aks-gpu-12345678-vmss/virtualMachines/1";
  EXPECT_EQ(provider_->PoolOf(n1), "gpu-heavy");
  ASSERT_TRUE(provider_->DeleteNode("gpu-heavy", n1, clock_.Now()).has_value());
  RecordedRequest post;
  for (const auto& r : fake_->requests())
    if (r.method == "POST") post = r;
  EXPECT_THAT(post.path, HasSubstr("/agentPools/gpu/deleteMachines"));
  EXPECT_EQ(nlohmann::json::parse(post.body),
            nlohmann::json::parse(R"({"machineNames":["aks-gpu-12345678-vmss000001"]})"));
  EXPECT_EQ(fake_->AgentPoolCount("cluster1", "gpu"), 1);
  // deleteMachines answers 202 + location without Retry-After: polled after the default 10s.
  clock_.Advance(std::chrono::seconds(10));
  EXPECT_EQ(RefreshOne(*provider_, "gpu-heavy").target, 1);

  // By node name alone (no providerID yet).
  model::Node n0;
  n0.meta.name = "aks-gpu-12345678-vmss000000";
  ASSERT_TRUE(provider_->DeleteNode("gpu-heavy", n0, clock_.Now()).has_value());
  EXPECT_EQ(fake_->AgentPoolCount("cluster1", "gpu"), 0);
  // A node of another agent pool is refused.
  model::Node other;
  other.meta.name = "aks-gpuspot-12345678-vmss000000";
  clock_.Advance(std::chrono::seconds(10));
  RefreshOne(*provider_, "gpu-heavy");
  auto r = provider_->DeleteNode("gpu-heavy", other, clock_.Now());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Error::Code::kInvalidArgument);
}

TEST_F(AzureAksTest, DecreaseTargetSizeDeletesUnjoinedMachinesNewestFirst) {
  std::string joined = "virtualMachines/0";
  node_joined_ = [&](std::string_view pid) { return pid.ends_with(joined); };
  provider_ = Make(AksConfig({MakePool("gpu-heavy", 6)}, {{"agentPools.gpu-heavy", "gpu"}}));
  ASSERT_NE(provider_, nullptr);
  ASSERT_TRUE(provider_->IncreaseSize("gpu-heavy", 1, clock_.Now()).has_value());  // 3 machines
  clock_.Advance(std::chrono::seconds(2));
  RefreshOne(*provider_, "gpu-heavy");
  ASSERT_TRUE(provider_->DecreaseTargetSize("gpu-heavy", 2, clock_.Now()).has_value());
  RecordedRequest post;
  for (const auto& r : fake_->requests())
    if (r.method == "POST") post = r;
  EXPECT_EQ(nlohmann::json::parse(post.body)["machineNames"],
            nlohmann::json({"aks-gpu-12345678-vmss000002", "aks-gpu-12345678-vmss000001"}));
  EXPECT_THAT(fake_->MachineNames("cluster1", "gpu"), ElementsAre("aks-gpu-12345678-vmss000000"));
  clock_.Advance(std::chrono::seconds(10));
  RefreshOne(*provider_, "gpu-heavy");
  auto r = provider_->DecreaseTargetSize("gpu-heavy", 1, clock_.Now());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Error::Code::kConflict);
}

TEST_F(AzureAksTest, FailedScaleOperationIsAStockout) {
  fake_->FailNextScaleUp("OverconstrainedAllocationRequest",
                         "Allocation failed. VM(s) with the following constraints cannot be "
                         "allocated, because the condition is too restrictive.");
  ASSERT_TRUE(provider_->IncreaseSize("gpu-heavy-spot", 2, clock_.Now()).has_value());
  clock_.Advance(std::chrono::seconds(2));
  auto size = RefreshOne(*provider_, "gpu-heavy-spot");
  EXPECT_TRUE(size.stockout);
  EXPECT_THAT(size.stockout_reason, HasSubstr("OverconstrainedAllocationRequest"));
  EXPECT_EQ(size.instances, 0);                                // the machines failed
  EXPECT_FALSE(RefreshOne(*provider_, "gpu-heavy").stockout);  // other pools unaffected
}

TEST(AzureAksTemplateTest, AgentPoolProfileFromTheOfficialSpotExample) {
  std::ifstream in(std::string(TIDEPOOL_SHARED_DIR) +
                   "/azure-arm-examples/aks/AgentPoolsCreate_Update.json");
  ASSERT_TRUE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  auto file = nlohmann::json::parse(ss.str());
  nlohmann::json ap = file["responses"]["200"]["body"];
  ap["properties"]["vmSize"] = "Standard_NC24ads_A100_v4";
  ap["properties"]["maxCount"] = 4;
  ap["properties"]["spotMaxPrice"] = 1.25;
  auto pool = cloud::azure::PoolFromAgentPool("a100-spot", ap);
  ASSERT_TRUE(pool.has_value()) << pool.error().message();
  EXPECT_EQ(pool->max, 4);
  EXPECT_EQ(pool->capacity_type, model::CapacityType::kSpot);
  EXPECT_DOUBLE_EQ(pool->price_per_hour, 1.25);
  const model::Node& t = pool->template_node;
  EXPECT_EQ(t.capacity,
            Res({{"cpu", "24"}, {"memory", "220Gi"}, {"nvidia.com/gpu", "1"}, {"pods", "110"}}));
  EXPECT_EQ(t.meta.labels.at("key1"), "val1");  // nodeLabels of the example
  EXPECT_EQ(t.meta.labels.at("kubernetes.azure.com/agentpool"), "agentpool1");
  EXPECT_EQ(t.meta.labels.at("gpu-model"), "A100-80GB");
  ASSERT_EQ(t.taints.size(), 2u);
  EXPECT_EQ(t.taints[0].key, "Key1");  // "Key1=Value1:NoSchedule"
  EXPECT_EQ(t.taints[0].value, "Value1");
  EXPECT_EQ(t.taints[1].key, "kubernetes.azure.com/scalesetpriority");

  ap["properties"]["vmSize"] = "Standard_Unknown_v9";
  auto unknown = cloud::azure::PoolFromAgentPool("x", ap);
  ASSERT_FALSE(unknown.has_value());
  EXPECT_THAT(unknown.error().message(), HasSubstr("Standard_Unknown_v9"));
  ap["properties"].erase("maxCount");
  ap["properties"]["vmSize"] = "Standard_D2_v2";
  auto no_max = cloud::azure::PoolFromAgentPool("x", ap);
  ASSERT_FALSE(no_max.has_value());
  EXPECT_THAT(no_max.error().message(), HasSubstr("max"));
}

}  // namespace
}  // namespace tidepool::testing::azure
