// The VM size table, and the shipped Azure example configs: they load with the config loader and
// their provider settings pass the Azure providers' validation.
#include "cloud/azure/sku.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cloud/azure/azure_provider.h"
#include "kube/config/autoscaler_config.h"
#include "tests/testing/values.h"

namespace tidepool::testing {
namespace {

using ::testing::HasSubstr;

TEST(AzureSkuTest, SizesOfTheSourceDocumentsCluster) {
  const auto* d2 = cloud::azure::FindVmSize("Standard_D2_v2");
  ASSERT_NE(d2, nullptr);
  EXPECT_EQ(cloud::azure::CapacityOf(*d2), Res({{"cpu", "2"}, {"memory", "7Gi"}, {"pods", "110"}}));
  const auto* nc6 = cloud::azure::FindVmSize("standard_nc6");  // any case
  ASSERT_NE(nc6, nullptr);
  EXPECT_EQ(cloud::azure::CapacityOf(*nc6),
            Res({{"cpu", "6"}, {"memory", "56Gi"}, {"nvidia.com/gpu", "1"}, {"pods", "110"}}));
  EXPECT_EQ(nc6->gpu_model, "K80");
  const auto* v100 = cloud::azure::FindVmSize("Standard_NC24s_v3");
  ASSERT_NE(v100, nullptr);
  EXPECT_EQ(v100->gpus, 4);
  EXPECT_EQ(v100->memory_gib, 448);
  const auto* nd = cloud::azure::FindVmSize("Standard_ND96amsr_A100_v4");
  ASSERT_NE(nd, nullptr);
  EXPECT_EQ(nd->gpus, 8);
  EXPECT_EQ(nd->vcpus, 96);
  const auto* ds1 = cloud::azure::FindVmSize("Standard_DS1_v2");  // 3.5 GiB
  ASSERT_NE(ds1, nullptr);
  EXPECT_EQ(cloud::azure::CapacityOf(*ds1).memory(), int64_t{3584} * 1024 * 1024);
  EXPECT_EQ(cloud::azure::FindVmSize("Standard_Nope_v1"), nullptr);
}

TEST(AzureSkuTest, TableIsConsistent) {
  for (const auto& s : cloud::azure::AllVmSizes()) {
    EXPECT_TRUE(s.name.starts_with("Standard_")) << s.name;
    EXPECT_GT(s.vcpus, 0) << s.name;
    EXPECT_GT(s.memory_gib, 0) << s.name;
    EXPECT_EQ(s.gpus > 0, !s.gpu_model.empty()) << s.name;
    // N-series have GPUs, the others have none.
    EXPECT_EQ(s.name.starts_with("Standard_N"), s.gpus > 0) << s.name;
    EXPECT_EQ(cloud::azure::FindVmSize(s.name), &s) << "duplicate " << s.name;
  }
  for (const char* required : {"Standard_D2_v2",
                               "Standard_D4s_v3",
                               "Standard_D8s_v3",
                               "Standard_D16s_v3",
                               "Standard_NC6",
                               "Standard_NC12",
                               "Standard_NC24",
                               "Standard_NC6s_v3",
                               "Standard_NC12s_v3",
                               "Standard_NC24s_v3",
                               "Standard_NC4as_T4_v3",
                               "Standard_NC8as_T4_v3",
                               "Standard_NC16as_T4_v3",
                               "Standard_NC64as_T4_v3",
                               "Standard_NC24ads_A100_v4",
                               "Standard_NC48ads_A100_v4",
                               "Standard_NC96ads_A100_v4",
                               "Standard_ND40rs_v2",
                               "Standard_ND96asr_v4",
                               "Standard_ND96amsr_A100_v4",
                               "Standard_ND96isr_H100_v5",
                               "Standard_NV6",
                               "Standard_NV12s_v3"}) {
    EXPECT_NE(cloud::azure::FindVmSize(required), nullptr) << required;
  }
}

// The examples name a secret file or variable that does not exist here; building the provider
// only validates settings and sends nothing, so that is fine.
void ExpectExampleLoads(const std::string& relative, const std::string& type) {
  auto config =
      kube::config::LoadAutoscalerConfig(std::string(TIDEPOOL_SOURCE_DIR) + "/" + relative);
  ASSERT_TRUE(config.has_value()) << config.error().message();
  EXPECT_EQ(config->provider.type, type);
  auto env = [](std::string_view) -> std::optional<std::string> { return std::nullopt; };
  auto p = cloud::azure::MakeAzureProvider(*config, {.env = env});
  ASSERT_TRUE(p.has_value()) << p.error().message();
  EXPECT_EQ((*p)->Name(), type);
}

TEST(AzureExamplesTest, VmssExampleConfigLoads) {
  ExpectExampleLoads("examples/azure-vmss/config.yaml", "azure-vmss");
}

TEST(AzureExamplesTest, AksExampleConfigLoads) {
  ExpectExampleLoads("examples/aks/config.yaml", "aks");
}

TEST(AzureExamplesTest, UnknownProviderTypeIsRefused) {
  model::AutoscalerConfig c;
  c.provider.type = "azure-vms";
  auto p = cloud::azure::MakeAzureProvider(c, {});
  ASSERT_FALSE(p.has_value());
  EXPECT_THAT(p.error().message(), HasSubstr("azure-vms"));
}

}  // namespace
}  // namespace tidepool::testing
