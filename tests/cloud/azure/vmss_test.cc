// azure-vmss: sizes, providerID mapping, deleting nodes, cancelling unjoined instances, spot
// eviction, discovery by tags, and the fake's instance hooks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "cloud/azure/provider_id.h"
#include "cloud/azure/vmss_provider.h"
#include "tests/cloud/azure/azure_fixture.h"

namespace tidepool::testing::azure {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

class AzureVmssTest : public AzureTestBase {};

TEST_F(AzureVmssTest, RefreshReportsCapacityAndInstancesAcrossPages) {
  FakeArmOptions o;
  o.page_size = 2;  // 5 instances: three pages, two nextLinks
  ASSERT_NO_FATAL_FAILURE(StartFake(o));
  fake_->AddScaleSet({.name = "k8s-agentpool1-12345678-vmss", .capacity = 5});
  auto p = Make(VmssConfig({MakePool("cpupool", 10, false, "Standard_D2_v2")},
                           {{"scaleSets.cpupool", "k8s-agentpool1-12345678-vmss"}}));
  ASSERT_NE(p, nullptr);
  auto size = RefreshOne(*p, "cpupool");
  EXPECT_EQ(size.target, 5);
  EXPECT_EQ(size.instances, 5);
  EXPECT_FALSE(size.stockout);
  EXPECT_EQ(fake_->CountRequests("GET", "/virtualMachines"), 3);
  // The instance view was asked for.
  bool expanded = false;
  for (const auto& r : fake_->requests())
    if (r.path.ends_with("/virtualMachines") && r.query.find("$expand=instanceView") == 0) {
      expanded = true;
    }
  EXPECT_TRUE(expanded);
}

TEST_F(AzureVmssTest, ProviderIdMapsToPoolAndInstance) {
  fake_->AddScaleSet({.name = "k8s-gpu-12345678-vmss", .capacity = 2});
  auto p = Make(VmssConfig({MakePool("gpu", 4)}, {{"scaleSets.gpu", "k8s-gpu-12345678-vmss"}}));
  ASSERT_NE(p, nullptr);
  model::Node n;
  n.meta.name = "k8s-gpu-12345678-vmss000001";
  // The kubelet often lower-cases the resource group; segment names vary in case too.
  n.provider_id = "azure:///subscriptions/" + fake_->options().subscription +
                  "/resourcegroups/RG1/providers/Microsoft.Compute/virtualMachineScaleSets/"
                  "K8S-GPU-12345678-VMSS/virtualMachines/1";
  EXPECT_EQ(p->PoolOf(n), "gpu");
  model::Node other = n;
  other.provider_id = "azure:///subscriptions/" + fake_->options().subscription +
                      "/resourceGroups/rg1/providers/Microsoft.Compute/virtualMachineScaleSets/"
                      "other-vmss/virtualMachines/1";
  EXPECT_EQ(p->PoolOf(other), "");
  model::Node kwok = n;
  kwok.provider_id = "kwok://node-1";
  EXPECT_EQ(p->PoolOf(kwok), "");

  ASSERT_TRUE(p->DeleteNode("gpu", n, clock_.Now()).has_value());
  auto reqs = fake_->requests();
  ASSERT_FALSE(reqs.empty());
  const auto& del = reqs.back();
  EXPECT_EQ(del.method, "POST");
  EXPECT_THAT(del.path, HasSubstr("/virtualMachineScaleSets/k8s-gpu-12345678-vmss/delete"));
  EXPECT_EQ(nlohmann::json::parse(del.body), nlohmann::json::parse(R"({"instanceIds":["1"]})"));
  EXPECT_THAT(fake_->InstanceIds("k8s-gpu-12345678-vmss"), ElementsAre("0"));
  EXPECT_EQ(fake_->Capacity("k8s-gpu-12345678-vmss"), 1);
  // Already gone: success.
  EXPECT_TRUE(p->DeleteNode("gpu", n, clock_.Now()).has_value());
  // Another scale set's node is refused without a request.
  int posts = fake_->CountRequests("POST", "");
  auto wrong = p->DeleteNode("gpu", other, clock_.Now());
  ASSERT_FALSE(wrong.has_value());
  EXPECT_EQ(wrong.error().code(), Error::Code::kInvalidArgument);
  EXPECT_THAT(wrong.error().message(), HasSubstr("other-vmss"));
  EXPECT_EQ(fake_->CountRequests("POST", ""), posts);
  auto no_id = p->DeleteNode("gpu", kwok, clock_.Now());
  ASSERT_FALSE(no_id.has_value());
  EXPECT_THAT(no_id.error().message(), HasSubstr("kwok://node-1"));
}

TEST(AzureProviderIdTest, ParsesAndFormats) {
  auto ref = cloud::azure::ParseVmssInstanceId(
      "azure:///subscriptions/sub/resourceGroups/aks-canadacentral/providers/"
      "Microsoft.Compute/virtualMachineScaleSets/k8s-gencanada-10448498-vmss/virtualMachines/0");
  ASSERT_TRUE(ref.has_value());
  EXPECT_EQ(ref->subscription, "sub");
  EXPECT_EQ(ref->resource_group, "aks-canadacentral");
  EXPECT_EQ(ref->scale_set, "k8s-gencanada-10448498-vmss");
  EXPECT_EQ(ref->instance_id, "0");
  EXPECT_EQ(cloud::azure::VmssProviderId(*ref),
            "azure:///subscriptions/sub/resourceGroups/aks-canadacentral/providers/"
            "Microsoft.Compute/virtualMachineScaleSets/k8s-gencanada-10448498-vmss/"
            "virtualMachines/0");
  EXPECT_FALSE(
      cloud::azure::ParseVmssInstanceId("azure:///subscriptions/sub/resourceGroups/rg/providers/"
                                        "Microsoft.Compute/virtualMachines/vm1"));
  EXPECT_FALSE(cloud::azure::ParseVmssInstanceId(""));
  EXPECT_EQ(cloud::azure::AksMachineName("aks-nodepool1-42263519-vmss", "10"),
            "aks-nodepool1-42263519-vmss00000a");
  EXPECT_EQ(cloud::azure::AksMachineName("aks-nodepool1-42263519-vmss", "36"),
            "aks-nodepool1-42263519-vmss000010");
  EXPECT_EQ(cloud::azure::AksAgentPoolOfMachineName("aks-nodepool1-42263519-vmss00000b"),
            "nodepool1");
  EXPECT_EQ(cloud::azure::AksAgentPoolOfScaleSet("aks-gpu-25481572-vmss"), "gpu");
  EXPECT_FALSE(cloud::azure::AksAgentPoolOfScaleSet("k8s-agentpool1-12345678-vmss"));
  EXPECT_FALSE(cloud::azure::AksAgentPoolOfMachineName("k8s-agentpool1-12345678-0"));
}

TEST_F(AzureVmssTest, DecreaseTargetSizeCancelsOnlyInstancesThatHaveNotJoined) {
  fake_->AddScaleSet({.name = "vmss-cpu", .capacity = 3});
  std::set<std::string> joined;
  node_joined_ = [&](std::string_view provider_id) {
    auto ref = cloud::azure::ParseVmssInstanceId(provider_id);
    return ref && joined.contains(ref->instance_id);
  };
  joined = {"0", "1"};
  auto p = Make(VmssConfig({MakePool("cpu", 10)}, {{"scaleSets.cpu", "vmss-cpu"}}));
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(p->DecreaseTargetSize("cpu", 1, clock_.Now()).has_value());
  EXPECT_THAT(fake_->InstanceIds("vmss-cpu"), ElementsAre("0", "1"));
  EXPECT_EQ(fake_->Capacity("vmss-cpu"), 2);
  // Nothing left that has not joined: refused, nothing deleted.
  auto r = p->DecreaseTargetSize("cpu", 1, clock_.Now());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Error::Code::kConflict);
  EXPECT_THAT(r.error().message(), HasSubstr("cancelled 0 of 1"));
  EXPECT_THAT(fake_->InstanceIds("vmss-cpu"), ElementsAre("0", "1"));
  EXPECT_EQ(fake_->CountRequests("POST", "/delete"), 1);
}

TEST_F(AzureVmssTest, CancellingInstancesAStockoutRemovedAlreadyIsNoConflict) {
  // The autoscaler's flow on a stockout: Refresh deletes the failed instance (target 0), then
  // the autoscaler cancels the node it asked for. It is gone: success, and no more writes.
  fake_->AddScaleSet({.name = "vmss-gpu-spot", .sku = "Standard_NC6", .spot = true});
  node_joined_ = [](std::string_view) { return false; };
  auto p =
      Make(VmssConfig({MakePool("gpu-spot", 5, true)}, {{"scaleSets.gpu-spot", "vmss-gpu-spot"}}));
  ASSERT_NE(p, nullptr);
  fake_->FailNextScaleUp("AllocationFailed", "Allocation failed.");
  ASSERT_TRUE(p->IncreaseSize("gpu-spot", 1, clock_.Now()).has_value());
  auto size = RefreshOne(*p, "gpu-spot");
  EXPECT_TRUE(size.stockout);
  EXPECT_EQ(size.target, 0);
  int writes = fake_->CountRequests("PATCH", "") + fake_->CountRequests("POST", "");
  auto r = p->DecreaseTargetSize("gpu-spot", 1, clock_.Now());
  EXPECT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(fake_->CountRequests("PATCH", "") + fake_->CountRequests("POST", ""), writes);
  EXPECT_EQ(fake_->Capacity("vmss-gpu-spot"), 0);
}

TEST_F(AzureVmssTest, WithoutNodeInformationOnlyUnfinishedInstancesAreCancelled) {
  fake_->AddScaleSet({.name = "vmss-cpu", .capacity = 1});
  auto p = Make(VmssConfig({MakePool("cpu", 10)}, {{"scaleSets.cpu", "vmss-cpu"}}));
  ASSERT_NE(p, nullptr);
  fake_->SetOperationPolls(5);  // the new instances stay Creating
  ASSERT_TRUE(p->IncreaseSize("cpu", 2, clock_.Now()).has_value());
  ASSERT_TRUE(p->DecreaseTargetSize("cpu", 2, clock_.Now()).has_value());
  EXPECT_EQ(fake_->Capacity("vmss-cpu"), 1);
  // Instance 0 is Succeeded (may have joined): never taken.
  auto r = p->DecreaseTargetSize("cpu", 1, clock_.Now());
  EXPECT_FALSE(r.has_value());
  EXPECT_EQ(fake_->InstanceState("vmss-cpu", "0"), "Succeeded");
  // The cancelled ones were the newest.
  auto reqs = fake_->requests();
  for (const auto& req : reqs) {
    if (req.method == "POST" && req.path.ends_with("/delete")) {
      EXPECT_EQ(nlohmann::json::parse(req.body)["instanceIds"], nlohmann::json({"2", "1"}));
    }
  }
}

TEST_F(AzureVmssTest, SpotEvictionIsReconciledNotFought) {
  fake_->AddScaleSet(
      {.name = "vmss-gpu-spot", .sku = "Standard_NC6s_v3", .capacity = 3, .spot = true});
  auto p =
      Make(VmssConfig({MakePool("gpu-spot", 5, true)}, {{"scaleSets.gpu-spot", "vmss-gpu-spot"}}));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(RefreshOne(*p, "gpu-spot").target, 3);
  fake_->EvictSpotInstance("vmss-gpu-spot", "1");
  auto size = RefreshOne(*p, "gpu-spot");
  EXPECT_EQ(size.target, 2);
  EXPECT_EQ(size.instances, 2);
  EXPECT_FALSE(size.stockout);  // an eviction is not a failed scale-up
  EXPECT_EQ(fake_->CountRequests("PATCH", ""), 0);
  EXPECT_EQ(fake_->Capacity("vmss-gpu-spot"), 2);
}

TEST_F(AzureVmssTest, InstanceHooksDescribeTheNodesToRegister) {
  fake_->AddScaleSet({.name = "k8s-gpupool-12345678-vmss",
                      .sku = "Standard_NC6",
                      .capacity = 0,
                      .tags = {{"poolName", "gpupool"}}});
  std::vector<InstanceEvent> created, deleted;
  fake_->OnInstanceCreated([&](const InstanceEvent& e) { created.push_back(e); });
  fake_->OnInstanceDeleted([&](const InstanceEvent& e) { deleted.push_back(e); });
  auto p = Make(
      VmssConfig({MakePool("gpupool", 4)}, {{"scaleSets.gpupool", "k8s-gpupool-12345678-vmss"}}));
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(p->IncreaseSize("gpupool", 2, clock_.Now()).has_value());
  ASSERT_EQ(created.size(), 2u);
  EXPECT_EQ(created[0].node_name, "k8s-gpupool-12345678-vmss000000");
  EXPECT_EQ(created[1].node_name, "k8s-gpupool-12345678-vmss000001");
  EXPECT_EQ(created[1].vm_size, "Standard_NC6");
  EXPECT_EQ(created[1].labels.at("poolName"), "gpupool");
  EXPECT_EQ(p->PoolOf(NodeFor(created[1])), "gpupool");
  ASSERT_TRUE(p->DeleteNode("gpupool", NodeFor(created[0]), clock_.Now()).has_value());
  ASSERT_EQ(deleted.size(), 1u);
  EXPECT_EQ(deleted[0].provider_id, created[0].provider_id);
  EXPECT_EQ(RefreshOne(*p, "gpupool").target, 1);
}

TEST_F(AzureVmssTest, DiscoversScaleSetsByClusterAutoscalerTags) {
  fake_->AddScaleSet(
      {.name = "k8s-gpuheavy-12345678-vmss",
       .sku = "Standard_NC6s_v3",
       .capacity = 0,
       .spot = true,
       .tags = {{"k8s.io_cluster-autoscaler_enabled", "true"},
                {"k8s.io_cluster-autoscaler_training", "owned"},
                {"poolName", "gpuheavy"},
                {"min", "0"},
                {"max", "8"},
                {"k8s.io_cluster-autoscaler_node-template_label_gpu-size", "heavy"},
                {"k8s.io_cluster-autoscaler_node-template_label_example.com_team", "ml"},
                {"k8s.io_cluster-autoscaler_node-template_taint_"
                 "kubernetes.azure.com_scalesetpriority",
                 "spot:NoSchedule"},
                {"k8s.io_cluster-autoscaler_node-template_resources_"
                 "ephemeral-storage",
                 "100Gi"}}});
  fake_->AddScaleSet({.name = "k8s-cpupool-12345678-vmss",
                      .capacity = 2,
                      .tags = {{"k8s.io_cluster-autoscaler_enabled", "true"},
                               {"k8s.io_cluster-autoscaler_training", "owned"},
                               {"poolName", "cpupool"},
                               {"max", "10"}}});
  fake_->AddScaleSet({.name = "other-cluster-vmss",
                      .capacity = 1,
                      .tags = {{"k8s.io_cluster-autoscaler_enabled", "true"},
                               {"k8s.io_cluster-autoscaler_other", "owned"},
                               {"max", "3"}}});
  auto p = Make(VmssConfig({MakePool("cpupool", 10)}, {{"discovery.clusterName", "training"}}));
  ASSERT_NE(p, nullptr);
  // The configured pool is bound through its poolName tag.
  EXPECT_EQ(RefreshOne(*p, "cpupool").target, 2);

  auto found = p->DiscoverPools(clock_.Now());
  ASSERT_TRUE(found.has_value()) << found.error().message();
  ASSERT_EQ(found->size(), 1u);
  const model::Pool& heavy = (*found)[0];
  EXPECT_EQ(heavy.name, "gpuheavy");
  EXPECT_EQ(heavy.min, 0);
  EXPECT_EQ(heavy.max, 8);
  EXPECT_EQ(heavy.capacity_type, model::CapacityType::kSpot);
  EXPECT_EQ(heavy.instance_type, "Standard_NC6s_v3");
  const model::Node& t = heavy.template_node;
  EXPECT_EQ(t.capacity, Res({{"cpu", "6"},
                             {"memory", "112Gi"},
                             {"nvidia.com/gpu", "1"},
                             {"pods", "110"},
                             {"ephemeral-storage", "100Gi"}}));
  EXPECT_EQ(t.meta.labels.at("gpu-size"), "heavy");
  EXPECT_EQ(t.meta.labels.at("example.com/team"), "ml");
  EXPECT_EQ(t.meta.labels.at("agentpool"), "gpuheavy");
  EXPECT_EQ(t.meta.labels.at("kubernetes.azure.com/scalesetpriority"), "spot");
  EXPECT_EQ(t.meta.labels.at("gpu-model"), "V100");
  EXPECT_EQ(t.meta.labels.at(std::string(model::kLabelPool)), "gpuheavy");
  ASSERT_EQ(t.taints.size(), 1u);
  EXPECT_EQ(t.taints[0].key, "kubernetes.azure.com/scalesetpriority");
  EXPECT_EQ(t.taints[0].value, "spot");

  // Discovered pools are this provider's pools from now on.
  auto sizes = p->Refresh(clock_.Now());
  ASSERT_TRUE(sizes.has_value());
  ASSERT_EQ(sizes->size(), 2u);
  EXPECT_EQ((*sizes)[1].pool, "gpuheavy");
  ASSERT_TRUE(p->IncreaseSize("gpuheavy", 1, clock_.Now()).has_value());
  EXPECT_EQ(fake_->Capacity("k8s-gpuheavy-12345678-vmss"), 1);
  EXPECT_EQ(fake_->Capacity("other-cluster-vmss"), 1);
}

TEST_F(AzureVmssTest, DiscoversAksEngineScaleSetsByPoolNameTag) {
  fake_->AddScaleSet({.name = "k8s-agentpool1-29744472-vmss",
                      .capacity = 1,
                      .tags = {{"poolName", "agentpool1"}, {"orchestrator", "Kubernetes:1.12.7"}}});
  fake_->AddScaleSet({.name = "unrelated-vmss", .capacity = 4});
  auto p = Make(VmssConfig({MakePool("agentpool1", 10), MakePool("ghost", 3)},
                           {{"discovery.poolNameTag", "true"}}));
  ASSERT_NE(p, nullptr);
  auto size = RefreshOne(*p, "agentpool1");
  EXPECT_EQ(size.target, 1);
  // A pool no scale set is found for is left out, and cannot be scaled.
  auto sizes = p->Refresh(clock_.Now());
  ASSERT_TRUE(sizes.has_value());
  EXPECT_EQ(sizes->size(), 1u);
  auto ghost = p->IncreaseSize("ghost", 1, clock_.Now());
  ASSERT_FALSE(ghost.has_value());
  EXPECT_EQ(ghost.error().code(), Error::Code::kNotFound);
  EXPECT_EQ(static_cast<cloud::azure::VmssProvider&>(*p).ScaleSetOf("agentpool1"),
            "k8s-agentpool1-29744472-vmss");
  auto found = p->DiscoverPools(clock_.Now());
  ASSERT_TRUE(found.has_value());
  EXPECT_TRUE(found->empty());  // unrelated-vmss has no poolName tag
}

TEST_F(AzureVmssTest, FailedInstancesOfJoinedNodesAreKept) {
  // A non-capacity failure (an extension) on a VM whose node joined: reported, not deleted.
  fake_->AddScaleSet({.name = "vmss-cpu", .capacity = 1});
  node_joined_ = [](std::string_view) { return true; };
  auto p = Make(VmssConfig({MakePool("cpu", 10)}, {{"scaleSets.cpu", "vmss-cpu"}}));
  ASSERT_NE(p, nullptr);
  fake_->FailNextScaleUp("VMExtensionProvisioningError", "the CSE extension failed");
  ASSERT_TRUE(p->IncreaseSize("cpu", 1, clock_.Now()).has_value());
  auto size = RefreshOne(*p, "cpu");
  EXPECT_FALSE(size.stockout);
  EXPECT_EQ(size.instances, 1);
  EXPECT_EQ(size.target, 2);
  EXPECT_EQ(fake_->CountRequests("POST", "/delete"), 0);
}

}  // namespace
}  // namespace tidepool::testing::azure
