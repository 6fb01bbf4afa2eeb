// GPUs of Azure VM sizes as DRA devices (cloud/azure/sku_devices.h), and discovered pools that
// carry them with the tidepool-dra-driver tag: real claim selectors pick the right size.
#include "cloud/azure/sku_devices.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <deque>
#include <string>

#include "cloud/azure/node_template.h"
#include "kube/codec/objects.h"
#include "sched/dra/dra_state.h"
#include "sched/fit.h"
#include "sched/snapshot.h"

namespace tidepool::cloud::azure {
namespace {

using ::testing::HasSubstr;

TEST(AzureSkuDevicesTest, EveryGpuSizeHasItsModelDescribed) {
  for (const VmSize& s : AllVmSizes()) {
    const GpuSpec* spec = GpuSpecOf(s);
    EXPECT_EQ(spec != nullptr, s.gpus > 0) << s.name;
    if (spec == nullptr) continue;
    EXPECT_FALSE(spec->product_name.empty()) << s.name;
    EXPECT_GT(spec->memory_gib, 0) << s.name;
  }
  // One model, two variants: the ND size has SXM GPUs, the NC size PCIe ones.
  EXPECT_EQ(GpuSpecOf(*FindVmSize("Standard_ND96amsr_A100_v4"))->product_name,
            "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(GpuSpecOf(*FindVmSize("Standard_NC24ads_A100_v4"))->product_name,
            "NVIDIA A100 80GB PCIe");
  EXPECT_EQ(GpuSpecOf(*FindVmSize("Standard_NC4as_T4_v3"))->architecture, "Turing");
}

TEST(AzureSkuDevicesTest, DevicesAreTheSizesGpusWithQualifiedNames) {
  model::TemplateDevices d =
      GpuDevicesOf(*FindVmSize("Standard_ND96isr_H100_v5"), "gpu.nvidia.com");
  EXPECT_EQ(d.driver, "gpu.nvidia.com");
  EXPECT_EQ(d.count, 8);
  EXPECT_EQ(d.attributes.at("gpu.nvidia.com/productName").text, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(d.attributes.at("gpu.nvidia.com/cudaComputeCapability").kind,
            model::DeviceAttribute::Kind::kVersion);
  EXPECT_EQ(d.capacity.at("gpu.nvidia.com/memory"), *model::Quantity::Parse("80Gi"));
}

nlohmann::json ScaleSet(std::string sku, nlohmann::json extra_tags = nlohmann::json::object()) {
  nlohmann::json tags = {{"max", "4"}};
  tags.update(extra_tags);
  return {{"name", "vmss-gpu"},
          {"sku", {{"name", sku}}},
          {"tags", tags},
          {"properties", nlohmann::json::object()}};
}

TEST(AzureSkuDevicesTest, TheTagTurnsTheGpusIntoDevices) {
  auto pool = PoolFromScaleSet(
      "a100", ScaleSet("Standard_ND96amsr_A100_v4", {{"tidepool-dra-driver", "gpu.nvidia.com"}}));
  ASSERT_TRUE(pool.has_value()) << pool.error().message();
  EXPECT_EQ(pool->template_node.allocatable.Get(model::InternResource(model::kNvidiaGpu)), 0);
  ASSERT_EQ(pool->devices.size(), 1u);
  ASSERT_EQ(pool->device_slices.size(), 1u);
  EXPECT_EQ(pool->device_slices[0].node_name, pool->template_node.meta.name);
  EXPECT_EQ(pool->device_slices[0].devices.size(), 8u);

  // Without the tag the GPUs stay an extended resource.
  auto plain = PoolFromScaleSet("a100", ScaleSet("Standard_ND96amsr_A100_v4"));
  ASSERT_TRUE(plain.has_value());
  EXPECT_TRUE(plain->devices.empty());
  EXPECT_EQ(plain->template_node.allocatable.Get(model::InternResource(model::kNvidiaGpu)), 8);
}

TEST(AzureSkuDevicesTest, TagErrorsSayWhatWasExpected) {
  auto cpu = PoolFromScaleSet(
      "d", ScaleSet("Standard_D4s_v3", {{"tidepool-dra-driver", "gpu.nvidia.com"}}));
  ASSERT_FALSE(cpu.has_value());
  EXPECT_THAT(cpu.error().message(), HasSubstr("scale set vmss-gpu"));
  EXPECT_THAT(cpu.error().message(), HasSubstr("VM size \"Standard_D4s_v3\" has no GPUs"));
  auto bad =
      PoolFromScaleSet("a", ScaleSet("Standard_NC6s_v3", {{"tidepool-dra-driver", "nvidia"}}));
  ASSERT_FALSE(bad.has_value());
  EXPECT_THAT(bad.error().message(),
              HasSubstr("tag tidepool-dra-driver: expected a DRA driver name such as "
                        "gpu.nvidia.com, got \"nvidia\""));

  nlohmann::json ap = {{"name", "gpu"},
                       {"properties",
                        {{"vmSize", "Standard_NC24ads_A100_v4"},
                         {"maxCount", 2},
                         {"tags", {{"tidepool-dra-driver", "gpu.nvidia.com"}}}}}};
  auto aks = PoolFromAgentPool("gpu", ap);
  ASSERT_TRUE(aks.has_value()) << aks.error().message();
  EXPECT_EQ(aks->devices.at(0).count, 1);
}

// A claim written the way NVIDIA's examples write them: an 80 GB Ampere-or-newer SXM A100.
constexpr std::string_view kClaims = R"yaml(
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.nvidia.com}
spec:
  selectors: [{cel: {expression: device.driver == 'gpu.nvidia.com'}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: a100-sxm, namespace: ml}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.nvidia.com
          count: 2
          selectors:
          - cel: {expression: 'device.attributes["gpu.nvidia.com"].productName == "NVIDIA A100-SXM4-80GB"'}
          - cel: {expression: 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80Gi")) >= 0'}
          - cel: {expression: 'device.attributes["gpu.nvidia.com"].cudaComputeCapability.compareTo(semver("8.0.0")) >= 0'}
)yaml";

TEST(AzureSkuDevicesTest, ClaimSelectorsPickTheMatchingSize) {
  auto state = kube::codec::DecodeState(std::string(kClaims), "claims.yaml");
  ASSERT_TRUE(state.has_value()) << state.error().message();
  sched::DraState dra(state->dra);
  sched::ClusterSnapshot snap;
  snap.AttachDra(&dra);
  const nlohmann::json tag = {{"tidepool-dra-driver", "gpu.nvidia.com"}};
  std::deque<model::Pool> pools;
  for (const char* sku :
       {"Standard_ND96amsr_A100_v4", "Standard_NC96ads_A100_v4", "Standard_ND96asr_v4"}) {
    auto p = PoolFromScaleSet(sku, ScaleSet(sku, tag));
    ASSERT_TRUE(p.has_value()) << p.error().message();
    pools.push_back(std::move(*p));
    dra.AddTemplateNode(&pools.back().template_node, &pools.back().device_slices);
  }
  model::Pod pod;
  pod.meta.name = "train";
  pod.meta.namespace_ = "ml";
  pod.mutable_resource_claims().push_back({.name = "gpu", .template_name = "a100-sxm"});
  pod.Finalize();
  sched::FitChecker checker(pod, snap);
  EXPECT_TRUE(checker.CheckTemplate(pools[0].template_node, {}, 0).fits());
  sched::FitResult pcie = checker.CheckTemplate(pools[1].template_node, {}, 0);  // PCIe
  EXPECT_FALSE(pcie.fits());
  EXPECT_THAT(pcie.reason, HasSubstr("productName"));
  EXPECT_FALSE(checker.CheckTemplate(pools[2].template_node, {}, 0).fits());  // 40 GB
}

}  // namespace
}  // namespace tidepool::cloud::azure
