// azure-vms names (vms_naming.h): formatting and parsing the k8s-<agentPool>-<clusterId>-<index>
// pattern of VMs, NICs and OS disks, and the lowest free index. Expectations worked by hand.
#include "cloud/azure/vms_naming.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tidepool::cloud::azure {
namespace {

using ::testing::HasSubstr;

const VmsNaming kPool{.agent_pool = "agentpool1", .cluster_id = "12345678"};

TEST(VmsNamingTest, FormatsVmNicAndDiskNames) {
  EXPECT_EQ(kPool.Vm(0), "k8s-agentpool1-12345678-0");
  EXPECT_EQ(kPool.Vm(12), "k8s-agentpool1-12345678-12");
  EXPECT_EQ(kPool.Nic(3), "k8s-agentpool1-12345678-nic-3");
  EXPECT_EQ(kPool.OsDisk(3), "k8s-agentpool1-12345678-3-osdisk");
}

TEST(VmsNamingTest, ParsesTheIndexOfItsOwnNamesIgnoringCase) {
  EXPECT_EQ(kPool.VmIndex("k8s-agentpool1-12345678-7"), 7);
  EXPECT_EQ(kPool.VmIndex("K8S-AgentPool1-12345678-007"), 7);
  EXPECT_EQ(kPool.NicIndex("k8s-agentpool1-12345678-nic-4"), 4);
  EXPECT_EQ(kPool.DiskIndex("k8s-agentpool1-12345678-5-osdisk"), 5);
  // The name Azure gives an OS disk created without one.
  EXPECT_EQ(kPool.DiskIndex("k8s-agentpool1-12345678-6_OsDisk_1_0123abcd"), 6);
}

TEST(VmsNamingTest, NamesOfOtherPoolsClustersOrKindsAreNotParsed) {
  EXPECT_EQ(kPool.VmIndex("k8s-agentpool2-12345678-0"), std::nullopt);      // another pool
  EXPECT_EQ(kPool.VmIndex("k8s-agentpool1-87654321-0"), std::nullopt);      // another cluster
  EXPECT_EQ(kPool.VmIndex("k8s-agentpool1-12345678-nic-0"), std::nullopt);  // a NIC
  EXPECT_EQ(kPool.NicIndex("k8s-agentpool1-12345678-0"), std::nullopt);     // a VM
  EXPECT_EQ(kPool.DiskIndex("k8s-agentpool1-12345678-0"), std::nullopt);    // no disk suffix
  EXPECT_EQ(kPool.DiskIndex("k8s-agentpool1-12345678-0-data"), std::nullopt);
}

TEST(VmsNamingTest, MalformedIndexesAreRejected) {
  EXPECT_EQ(kPool.VmIndex("k8s-agentpool1-12345678-"), std::nullopt);         // empty
  EXPECT_EQ(kPool.VmIndex("k8s-agentpool1-12345678--1"), std::nullopt);       // negative
  EXPECT_EQ(kPool.VmIndex("k8s-agentpool1-12345678-1a"), std::nullopt);       // not decimal
  EXPECT_EQ(kPool.VmIndex("k8s-agentpool1-12345678-1234567"), std::nullopt);  // 7 digits
  EXPECT_EQ(kPool.VmIndex("k8s-agentpool1-12345678-999999"), 999999);
  EXPECT_EQ(kPool.DiskIndex("k8s-agentpool1-12345678--osdisk"), std::nullopt);
  EXPECT_EQ(ParseVmIndex(""), std::nullopt);
  EXPECT_EQ(ParseVmIndex("+1"), std::nullopt);
  EXPECT_EQ(ParseVmIndex("0"), 0);
}

TEST(VmsNamingTest, ParseVmNameFindsTheAgentPoolBeforeTheClusterId) {
  auto parsed = ParseVmName("k8s-GPU-pool-12345678-3", "12345678");
  ASSERT_TRUE(parsed.has_value()) << parsed.error().message();
  EXPECT_EQ(parsed->agent_pool, "gpu-pool");  // lower case, '-' kept
  EXPECT_EQ(parsed->index, 3);
}

TEST(VmsNamingTest, ParseVmNameSaysWhatPatternItExpected) {
  for (const char* name : {"aks-agentpool1-12345678-vmss000000",  // not k8s-
                           "k8s-agentpool1-87654321-0",           // another cluster
                           "k8s-12345678-0",                      // no agent pool
                           "k8s-agentpool1-12345678-x"}) {        // no index
    auto parsed = ParseVmName(name, "12345678");
    ASSERT_FALSE(parsed.has_value()) << name;
    EXPECT_EQ(parsed.error().code(), Error::Code::kInvalidArgument);
    EXPECT_THAT(parsed.error().message(), HasSubstr(name));
    EXPECT_THAT(parsed.error().message(), HasSubstr("expected k8s-<agentPool>-12345678-<index>"));
  }
}

TEST(VmsNamingTest, LowestFreeIndexFillsGapsFirst) {
  EXPECT_EQ(LowestFreeIndex({}), 0);
  EXPECT_EQ(LowestFreeIndex({0, 1, 2}), 3);
  EXPECT_EQ(LowestFreeIndex({0, 2, 3}), 1);
  EXPECT_EQ(LowestFreeIndex({1, 2}), 0);
}

}  // namespace
}  // namespace tidepool::cloud::azure
