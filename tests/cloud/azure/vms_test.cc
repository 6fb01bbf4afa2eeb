// azure-vms: availability-set VM pools (acs-engine / aks-engine agent pools of standalone VMs):
// scale up from the config's model and by copying a VM, scale down as VM -> NIC -> disk (a
// managed disk, or a VHD blob deleted with a storage token), the sweep of leftovers after an
// interruption, stockouts, providerID mapping and settings errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "cloud/azure/blob.h"
#include "cloud/azure/provider_id.h"
#include "cloud/azure/vms_provider.h"
#include "tests/cloud/azure/vms_fixture.h"

namespace tidepool::testing::azure {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class AzureVmsTest : public AzureVmsTestBase {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(AzureVmsTestBase::SetUp());
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("tidepool-vms-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::create_directories(dir_);
    custom_data_ = (dir_ / "custom-data.yaml").string();
    std::ofstream(custom_data_) << "#cloud-config\nruncmd: [join-cluster]\n";
    ssh_key_ = (dir_ / "id_rsa.pub").string();
    std::ofstream(ssh_key_) << "ssh-rsa AAAAB3NzaC1yc2E tidepool@test\n";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // The position of the first request with this method whose path ends with `suffix`.
  int Position(std::string_view method, std::string_view suffix) const {
    auto reqs = fake_->requests();
    for (size_t i = 0; i < reqs.size(); ++i) {
      if (reqs[i].method == method && reqs[i].path.ends_with(suffix)) return static_cast<int>(i);
    }
    return -1;
  }

  std::filesystem::path dir_;
  std::string custom_data_;
  std::string ssh_key_;
};

TEST_F(AzureVmsTest, ScaleFromZeroCreatesNicThenVmFromTheConfigModel) {
  fake_->AddAvailabilitySet("agentpool2-availabilitySet-12345678");
  const std::string as_id = fake_->AvailabilitySetId("agentpool2-availabilitySet-12345678");
  const std::string subnet = fake_->SubnetId("k8s-subnet");
  auto p = Make(VmsConfig({MakePool("gpu", 4, false, "Standard_NC6s_v3")},
                          {{"vmPools.gpu", "agentpool2"},
                           {"models.gpu.imageReference.publisher", "Canonical"},
                           {"models.gpu.imageReference.offer", "UbuntuServer"},
                           {"models.gpu.imageReference.sku", "16.04-LTS"},
                           {"models.gpu.subnetId", subnet},
                           {"models.gpu.availabilitySetId", as_id},
                           {"models.gpu.adminUsername", "azureuser"},
                           {"models.gpu.sshPublicKeyFile", ssh_key_},
                           {"models.gpu.customDataFile", custom_data_},
                           {"models.gpu.enableIpForwarding", "true"}}));
  ASSERT_NE(p, nullptr);
  auto before = RefreshOne(*p, "gpu");
  EXPECT_EQ(before.target, 0);
  EXPECT_EQ(before.instances, 0);

  auto up = p->IncreaseSize("gpu", 1, clock_.Now());
  ASSERT_TRUE(up.has_value()) << up.error().message();
  const std::string vm = "k8s-agentpool2-12345678-0";
  const std::string nic = "k8s-agentpool2-12345678-nic-0";
  int nic_put = Position("PUT", "/networkInterfaces/" + nic);
  int vm_put = Position("PUT", "/virtualMachines/" + vm);
  ASSERT_GE(nic_put, 0);
  ASSERT_GE(vm_put, 0);
  EXPECT_LT(nic_put, vm_put);
  // The location came from the availability set.
  EXPECT_GE(Position("GET", "/availabilitySets/agentpool2-availabilitySet-12345678"), 0);
  for (const auto& r : fake_->requests()) {
    if (r.path.find("/networkInterfaces/") != std::string::npos) {
      EXPECT_THAT(r.query, HasSubstr("api-version=2024-05-01"));
    }
    if (r.path.find("/virtualMachines/") != std::string::npos) {
      EXPECT_THAT(r.query, HasSubstr("api-version=2025-04-01"));
    }
  }

  json nic_body = fake_->NicPutBody(nic);
  EXPECT_EQ(nic_body["location"], "westus");
  EXPECT_EQ(nic_body["properties"]["ipConfigurations"][0]["properties"]["subnet"]["id"], subnet);
  EXPECT_EQ(nic_body["properties"]["enableIPForwarding"], true);
  EXPECT_EQ(nic_body["tags"]["tidepool.dev/pool"], "gpu");

  json body = fake_->VmPutBody(vm);
  ASSERT_TRUE(body.is_object());
  const json& props = body["properties"];
  EXPECT_EQ(body["location"], "westus");
  EXPECT_EQ(props["hardwareProfile"]["vmSize"], "Standard_NC6s_v3");
  EXPECT_EQ(props["availabilitySet"]["id"], as_id);
  EXPECT_EQ(props["storageProfile"]["imageReference"]["offer"], "UbuntuServer");
  EXPECT_EQ(props["storageProfile"]["imageReference"]["version"], "latest");
  EXPECT_EQ(props["storageProfile"]["osDisk"]["name"], vm + "-osdisk");
  EXPECT_EQ(props["osProfile"]["computerName"], vm);
  EXPECT_EQ(props["osProfile"]["customData"],
            "I2Nsb3VkLWNvbmZpZwpydW5jbWQ6IFtqb2luLWNsdXN0ZXJdCg==");
  EXPECT_EQ(props["osProfile"]["linuxConfiguration"]["ssh"]["publicKeys"][0]["keyData"],
            "ssh-rsa AAAAB3NzaC1yc2E tidepool@test");
  EXPECT_THAT(props["networkProfile"]["networkInterfaces"][0]["id"].get<std::string>(),
              ::testing::EndsWith("/networkInterfaces/" + nic));
  EXPECT_EQ(body["tags"]["tidepool.dev/pool"], "gpu");
  EXPECT_EQ(body["tags"]["poolName"], "agentpool2");
  EXPECT_EQ(body["tags"]["resourceNameSuffix"], kCluster);

  auto after = RefreshOne(*p, "gpu");
  EXPECT_EQ(after.target, 1);
  EXPECT_EQ(after.instances, 1);
  Settle(*p, "gpu", 2);
  EXPECT_EQ(fake_->VmState(vm), "Succeeded");
  auto* vms = dynamic_cast<cloud::azure::VmsProvider*>(p.get());
  ASSERT_NE(vms, nullptr);
  EXPECT_EQ(vms->pending_creations("gpu"), 0u);
}

TEST_F(AzureVmsTest, ScaleUpByTwoCopiesAnExistingVmIntoTheFreeIndexes) {
  const std::string subnet = fake_->SubnetId("agent-subnet");
  for (const char* name : {"k8s-agentpool1-12345678-0", "k8s-agentpool1-12345678-2"}) {
    fake_->AddVm({.name = name,
                  .vm_size = "Standard_NC6",
                  .tags = AcsTags("agentpool1"),
                  .availability_set = "agentpool1-availabilitySet-12345678",
                  .user_data = "IyEvYmluL3NoCg=="});
  }
  auto p = Make(
      VmsConfig({MakePool("agentpool1", 5)}, {{"models.agentpool1.customDataFile", custom_data_}}));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(RefreshOne(*p, "agentpool1").target, 2);
  auto up = p->IncreaseSize("agentpool1", 2, clock_.Now());
  ASSERT_TRUE(up.has_value()) << up.error().message();
  EXPECT_THAT(fake_->VmNames(),
              ElementsAre("k8s-agentpool1-12345678-0", "k8s-agentpool1-12345678-1",
                          "k8s-agentpool1-12345678-2", "k8s-agentpool1-12345678-3"));
  // The newest VM (index 2) was the model, read with its userData.
  bool read_user_data = false;
  for (const auto& r : fake_->requests()) {
    if (r.method == "GET" && r.path.ends_with("/virtualMachines/k8s-agentpool1-12345678-2") &&
        r.query.find("$expand=userData") != std::string::npos) {
      read_user_data = true;
    }
  }
  EXPECT_TRUE(read_user_data);
  for (const char* name : {"k8s-agentpool1-12345678-1", "k8s-agentpool1-12345678-3"}) {
    SCOPED_TRACE(name);
    json body = fake_->VmPutBody(name);
    ASSERT_TRUE(body.is_object());
    const json& props = body["properties"];
    EXPECT_EQ(props["hardwareProfile"]["vmSize"], "Standard_NC6");
    EXPECT_EQ(props["storageProfile"]["imageReference"],
              json::parse(R"({"publisher": "Canonical", "offer": "UbuntuServer",
                              "sku": "16.04-LTS", "version": "16.04.201706191"})"));
    EXPECT_EQ(props["storageProfile"]["osDisk"]["managedDisk"]["storageAccountType"],
              "Premium_LRS");
    EXPECT_FALSE(props["storageProfile"]["osDisk"]["managedDisk"].contains("id"));
    EXPECT_EQ(props["availabilitySet"]["id"],
              fake_->AvailabilitySetId("agentpool1-availabilitySet-12345678"));
    EXPECT_EQ(props["osProfile"]["adminUsername"], "azureuser");
    EXPECT_EQ(props["osProfile"]["customData"],
              "I2Nsb3VkLWNvbmZpZwpydW5jbWQ6IFtqb2luLWNsdXN0ZXJdCg==");
    EXPECT_TRUE(props["osProfile"]["linuxConfiguration"]["ssh"].contains("publicKeys"));
    EXPECT_EQ(props["userData"], "IyEvYmluL3NoCg==");
    EXPECT_EQ(body["tags"]["orchestrator"], "Kubernetes:1.6.6");
    EXPECT_EQ(body["tags"]["tidepool.dev/pool"], "agentpool1");
  }
  json nic = fake_->NicPutBody("k8s-agentpool1-12345678-nic-3");
  EXPECT_EQ(nic["properties"]["ipConfigurations"][0]["properties"]["subnet"]["id"], subnet);
  EXPECT_EQ(nic["properties"]["enableIPForwarding"], true);
  EXPECT_FALSE(nic["properties"]["ipConfigurations"][0]["properties"].contains("privateIPAddress"));
  auto size = RefreshOne(*p, "agentpool1");
  EXPECT_EQ(size.target, 4);
  EXPECT_EQ(size.instances, 4);
  // Past max: refused before any write.
  int puts = fake_->CountRequests("PUT", "");
  auto over = p->IncreaseSize("agentpool1", 2, clock_.Now());
  ASSERT_FALSE(over.has_value());
  EXPECT_EQ(over.error().code(), Error::Code::kInvalidArgument);
  EXPECT_THAT(over.error().message(), HasSubstr("max 5"));
  EXPECT_EQ(fake_->CountRequests("PUT", ""), puts);
}

TEST_F(AzureVmsTest, CopyingAVmWithoutBootstrapDataNeedsCustomDataFile) {
  fake_->AddVm({.name = "k8s-agentpool1-12345678-0", .tags = AcsTags("agentpool1")});
  auto p = Make(VmsConfig({MakePool("agentpool1", 5)}));
  ASSERT_NE(p, nullptr);
  auto up = p->IncreaseSize("agentpool1", 1, clock_.Now());
  ASSERT_FALSE(up.has_value());
  EXPECT_THAT(up.error().message(), HasSubstr("provider.models.agentpool1.customDataFile"));
  EXPECT_EQ(fake_->CountRequests("PUT", ""), 0);
}

TEST_F(AzureVmsTest, ScaleDownDeletesTheVmThenItsNicThenItsDisk) {
  fake_->AddVm({.name = "k8s-agentpool1-12345678-0", .tags = AcsTags("agentpool1")});
  fake_->AddVm({.name = "k8s-agentpool1-12345678-1",
                .tags = AcsTags("agentpool1"),
                .os_disk = "k8s-agentpool1-12345678-1_OsDisk_1_abc"});
  auto p = Make(VmsConfig({MakePool("agentpool1", 5)}));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(RefreshOne(*p, "agentpool1").target, 2);
  auto down = p->DeleteNode("agentpool1", NodeOf("k8s-agentpool1-12345678-1"), clock_.Now());
  ASSERT_TRUE(down.has_value()) << down.error().message();
  EXPECT_EQ(RefreshOne(*p, "agentpool1").target, 1);
  Settle(*p, "agentpool1");
  std::vector<std::string> deletes;
  for (const auto& r : fake_->requests()) {
    if (r.method == "DELETE") deletes.push_back(r.path.substr(r.path.rfind("/providers/")));
  }
  EXPECT_THAT(deletes,
              ElementsAre("/providers/Microsoft.Compute/virtualMachines/k8s-agentpool1-12345678-1",
                          "/providers/Microsoft.Network/networkInterfaces/"
                          "k8s-agentpool1-12345678-nic-1",
                          "/providers/Microsoft.Compute/disks/"
                          "k8s-agentpool1-12345678-1_OsDisk_1_abc"));
  EXPECT_THAT(fake_->VmNames(), ElementsAre("k8s-agentpool1-12345678-0"));
  EXPECT_THAT(fake_->NicNames(), ElementsAre("k8s-agentpool1-12345678-nic-0"));
  EXPECT_EQ(fake_->DiskNames().size(), 1u);
  auto* vms = dynamic_cast<cloud::azure::VmsProvider*>(p.get());
  ASSERT_NE(vms, nullptr);
  EXPECT_EQ(vms->pending_removals("agentpool1"), 0u);
  auto size = RefreshOne(*p, "agentpool1");
  EXPECT_EQ(size.target, 1);
  EXPECT_EQ(size.instances, 1);
}

TEST_F(AzureVmsTest, DeletesAreIdempotentAndAFailedStepIsRetried) {
  fake_->AddVm({.name = "k8s-agentpool1-12345678-0", .tags = AcsTags("agentpool1")});
  fake_->AddVm({.name = "k8s-agentpool1-12345678-1", .tags = AcsTags("agentpool1")});
  auto p = Make(VmsConfig({MakePool("agentpool1", 5)}));
  ASSERT_NE(p, nullptr);
  RefreshOne(*p, "agentpool1");
  fake_->FailNextDelete("/networkInterfaces/", 500);
  model::Node node = NodeOf("k8s-agentpool1-12345678-1");
  ASSERT_TRUE(p->DeleteNode("agentpool1", node, clock_.Now()).has_value());
  // Asked again while the removal runs: nothing new is sent.
  int deletes = fake_->CountRequests("DELETE", "");
  ASSERT_TRUE(p->DeleteNode("agentpool1", node, clock_.Now()).has_value());
  EXPECT_EQ(fake_->CountRequests("DELETE", ""), deletes);
  Settle(*p, "agentpool1");
  EXPECT_EQ(fake_->CountRequests("DELETE", "/networkInterfaces/k8s-agentpool1-12345678-nic-1"), 2);
  EXPECT_THAT(fake_->VmNames(), ElementsAre("k8s-agentpool1-12345678-0"));
  EXPECT_THAT(fake_->NicNames(), ElementsAre("k8s-agentpool1-12345678-nic-0"));
  EXPECT_EQ(fake_->DiskNames().size(), 1u);
  // Gone already: the GET answers 404, which is success, and nothing is deleted.
  deletes = fake_->CountRequests("DELETE", "");
  auto again = p->DeleteNode("agentpool1", node, clock_.Now());
  EXPECT_TRUE(again.has_value()) << again.error().message();
  EXPECT_EQ(fake_->CountRequests("DELETE", ""), deletes);
  // A removal whose NIC and disk were removed by someone else meanwhile finishes on 404s.
  fake_->AddVm({.name = "k8s-agentpool1-12345678-4",
                .tags = AcsTags("agentpool1"),
                .os_disk = "k8s-agentpool1-12345678-4-osdisk"});
  RefreshOne(*p, "agentpool1");
  fake_->SetOperationPolls(2);  // the VM delete stays in progress for two polls
  ASSERT_TRUE(
      p->DeleteNode("agentpool1", NodeOf("k8s-agentpool1-12345678-4"), clock_.Now()).has_value());
  fake_->SetOperationPolls(0);
  fake_->ForgetNicOrDisk("k8s-agentpool1-12345678-nic-4");
  fake_->ForgetNicOrDisk("k8s-agentpool1-12345678-4-osdisk");
  Settle(*p, "agentpool1");
  EXPECT_EQ(fake_->CountRequests("DELETE", "/networkInterfaces/k8s-agentpool1-12345678-nic-4"), 1);
  EXPECT_EQ(fake_->CountRequests("DELETE", "/disks/k8s-agentpool1-12345678-4-osdisk"), 1);
  auto* vms = dynamic_cast<cloud::azure::VmsProvider*>(p.get());
  ASSERT_NE(vms, nullptr);
  EXPECT_EQ(vms->pending_removals("agentpool1"), 0u);
  EXPECT_THAT(fake_->VmNames(), ElementsAre("k8s-agentpool1-12345678-0"));
  // A 500 on the VM's own DELETE is the caller's error, and nothing is left half-done.
  fake_->FailNextDelete("/virtualMachines/", 500);
  auto failed = p->DeleteNode("agentpool1", NodeOf("k8s-agentpool1-12345678-0"), clock_.Now());
  ASSERT_FALSE(failed.has_value());
  EXPECT_THAT(failed.error().message(), HasSubstr("HTTP 500"));
  EXPECT_EQ(vms->pending_removals("agentpool1"), 0u);
  EXPECT_EQ(fake_->VmState("k8s-agentpool1-12345678-0"), "Succeeded");
}

TEST_F(AzureVmsTest, ASweepFinishesAScaleDownARestartInterrupted) {
  fake_->AddVm({.name = "k8s-agentpool1-12345678-0", .tags = AcsTags("agentpool1")});
  fake_->AddVm({.name = "k8s-agentpool1-12345678-1", .tags = AcsTags("agentpool1")});
  // Not the pool's: another NIC and disk, unattached; a NIC with the pool's name but no tags.
  fake_->AddNic({.name = "jumpbox-nic"});
  fake_->AddDisk({.name = "scratch-disk"});
  fake_->AddNic({.name = "k8s-agentpool1-12345678-nic-7"});
  fake_->AddDisk({.name = "k8s-agentpool9-12345678-3-osdisk"});
  {
    auto first = Make(VmsConfig({MakePool("agentpool1", 5)}));
    ASSERT_NE(first, nullptr);
    RefreshOne(*first, "agentpool1");
    ASSERT_TRUE(first->DeleteNode("agentpool1", NodeOf("k8s-agentpool1-12345678-1"), clock_.Now())
                    .has_value());
    // The controller stops here: the VM is deleted, its NIC and disk are not.
  }
  EXPECT_THAT(fake_->VmNames(), ElementsAre("k8s-agentpool1-12345678-0"));
  EXPECT_EQ(fake_->NicNames().size(), 4u);
  int nic_deletes = fake_->CountRequests("DELETE", "/networkInterfaces/");
  EXPECT_EQ(nic_deletes, 0);

  auto second = Make(VmsConfig({MakePool("agentpool1", 5)}));
  ASSERT_NE(second, nullptr);
  auto size = RefreshOne(*second, "agentpool1");
  EXPECT_EQ(size.target, 1);
  Settle(*second, "agentpool1", 2);
  EXPECT_THAT(fake_->NicNames(), ElementsAre("jumpbox-nic", "k8s-agentpool1-12345678-nic-0",
                                             "k8s-agentpool1-12345678-nic-7"));
  EXPECT_THAT(fake_->DiskNames(),
              ElementsAre("k8s-agentpool1-12345678-0_OsDisk_1_5f0c3a2d9e8b4c1fa6d7e0b2c4f8a913",
                          "k8s-agentpool9-12345678-3-osdisk", "scratch-disk"));
  // Only the two leftovers were asked to go, NIC first.
  std::vector<std::string> deletes;
  for (const auto& r : fake_->requests()) {
    if (r.method == "DELETE") deletes.push_back(r.path.substr(r.path.rfind('/') + 1));
  }
  EXPECT_THAT(deletes,
              ElementsAre("k8s-agentpool1-12345678-1", "k8s-agentpool1-12345678-nic-1",
                          "k8s-agentpool1-12345678-1_OsDisk_1_5f0c3a2d9e8b4c1fa6d7e0b2c4f8a913"));
  // The sweep is rate-limited: once per provider start and then every sweepInterval (5m), not
  // at each of the Settle passes above.
  EXPECT_EQ(fake_->CountRequests("GET", "/networkInterfaces"), 2);
  clock_.Advance(std::chrono::minutes(5));
  RefreshOne(*second, "agentpool1");
  EXPECT_EQ(fake_->CountRequests("GET", "/networkInterfaces"), 3);
}

TEST_F(AzureVmsTest, AllocationFailureIsAStockoutAndTheFailedVmIsRemoved) {
  fake_->AddVm({.name = "k8s-gpu-12345678-0",
                .vm_size = "Standard_NC6s_v3",
                .tags = AcsTags("gpu"),
                .user_data = "IyEvYmluL3NoCg=="});
  auto p = Make(VmsConfig({MakePool("gpu", 5)}));
  ASSERT_NE(p, nullptr);
  fake_->FailNextVmCreate("AllocationFailed",
                          "Allocation failed. We do not have sufficient capacity for the "
                          "requested VM size in this region.");
  ASSERT_TRUE(p->IncreaseSize("gpu", 1, clock_.Now()).has_value());
  Settle(*p, "gpu");
  auto size = RefreshOne(*p, "gpu");
  EXPECT_TRUE(size.stockout);
  EXPECT_THAT(size.stockout_reason, HasSubstr("AllocationFailed"));
  EXPECT_EQ(size.target, 1);
  EXPECT_EQ(size.instances, 1);
  auto refused = p->IncreaseSize("gpu", 1, clock_.Now());
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code(), Error::Code::kUnavailable);
  EXPECT_THAT(refused.error().message(), HasSubstr("AllocationFailed"));
  // The failed VM, its NIC and its disk are gone.
  EXPECT_THAT(fake_->VmNames(), ElementsAre("k8s-gpu-12345678-0"));
  EXPECT_THAT(fake_->NicNames(), ElementsAre("k8s-gpu-12345678-nic-0"));
  EXPECT_EQ(fake_->DiskNames().size(), 1u);
  // After the hold, capacity may be asked for again.
  clock_.Advance(std::chrono::minutes(4));
  EXPECT_FALSE(RefreshOne(*p, "gpu").stockout);
  EXPECT_TRUE(p->IncreaseSize("gpu", 1, clock_.Now()).has_value());
}

TEST_F(AzureVmsTest, OsProvisioningTimeoutIsAProvisioningFailure) {
  fake_->AddVm({.name = "k8s-gpu-12345678-0", .tags = AcsTags("gpu"), .user_data = "eA=="});
  auto p = Make(VmsConfig({MakePool("gpu", 5)}));
  ASSERT_NE(p, nullptr);
  fake_->FailNextVmCreate("OSProvisioningTimedOut",
                          "OS Provisioning for VM 'k8s-gpu-12345678-1' did not finish in the "
                          "allotted time.");
  ASSERT_TRUE(p->IncreaseSize("gpu", 1, clock_.Now()).has_value());
  Settle(*p, "gpu");
  auto size = RefreshOne(*p, "gpu");
  EXPECT_TRUE(size.stockout);
  EXPECT_THAT(size.stockout_reason, HasSubstr("OSProvisioningTimedOut"));
  EXPECT_THAT(fake_->VmNames(), ElementsAre("k8s-gpu-12345678-0"));
}

TEST_F(AzureVmsTest, AFailedVmFoundAfterARestartIsRemovedAndCounted) {
  fake_->AddVm({.name = "k8s-gpu-12345678-0", .tags = AcsTags("gpu")});
  fake_->AddVm({.name = "k8s-gpu-12345678-1", .tags = AcsTags("gpu"), .provisioning = "Failed"});
  node_joined_ = [](std::string_view id) {
    return id.ends_with("/virtualMachines/k8s-gpu-12345678-0");
  };
  auto p = Make(VmsConfig({MakePool("gpu", 5)}));
  ASSERT_NE(p, nullptr);
  auto size = RefreshOne(*p, "gpu");
  EXPECT_EQ(size.target, 1);
  EXPECT_EQ(size.instances, 1);
  Settle(*p, "gpu");
  EXPECT_THAT(fake_->VmNames(), ElementsAre("k8s-gpu-12345678-0"));
  EXPECT_THAT(fake_->NicNames(), ElementsAre("k8s-gpu-12345678-nic-0"));
}

TEST_F(AzureVmsTest, DecreaseTargetSizeCancelsOnlyCreationsThatHaveNotJoined) {
  fake_->AddVm(
      {.name = "k8s-agentpool1-12345678-0", .tags = AcsTags("agentpool1"), .user_data = "eA=="});
  node_joined_ = [](std::string_view id) {
    return id.ends_with("/virtualMachines/k8s-agentpool1-12345678-0");
  };
  auto p = Make(VmsConfig({MakePool("agentpool1", 5)}));
  ASSERT_NE(p, nullptr);
  fake_->SetOperationPolls(3);  // the NICs stay Updating: their VMs are not asked for yet
  ASSERT_TRUE(p->IncreaseSize("agentpool1", 2, clock_.Now()).has_value());
  EXPECT_EQ(fake_->CountRequests("PUT", "/virtualMachines/"), 0);
  EXPECT_EQ(RefreshOne(*p, "agentpool1").target, 3);
  ASSERT_TRUE(p->DecreaseTargetSize("agentpool1", 1, clock_.Now()).has_value());
  EXPECT_EQ(RefreshOne(*p, "agentpool1").target, 2);
  auto r = p->DecreaseTargetSize("agentpool1", 2, clock_.Now());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Error::Code::kConflict);
  EXPECT_THAT(r.error().message(), HasSubstr("cancelled 1 of 2"));
  fake_->SetOperationPolls(0);
  Settle(*p, "agentpool1", 8);
  EXPECT_THAT(fake_->VmNames(), ElementsAre("k8s-agentpool1-12345678-0"));
  EXPECT_THAT(fake_->NicNames(), ElementsAre("k8s-agentpool1-12345678-nic-0"));
  EXPECT_EQ(fake_->CountRequests("PUT", "/virtualMachines/"), 0);
  EXPECT_EQ(RefreshOne(*p, "agentpool1").target, 1);
}

TEST_F(AzureVmsTest, PoolOfMapsVmProviderIdsByNameAndTags) {
  fake_->AddVm({.name = "k8s-agentpool1-12345678-0", .tags = AcsTags("agentpool1")});
  fake_->AddVm({.name = "renamed-node-7", .tags = AcsTags("agentpool1")});
  fake_->AddVm({.name = "k8s-agentpool1-87654321-0", .tags = {{"poolName", "agentpool1"}}});
  auto p = Make(VmsConfig({MakePool("cpu", 5), MakePool("gpu", 5)},
                          {{"vmPools.cpu", "agentpool1"}, {"vmPools.gpu", "agentpool2"}}));
  ASSERT_NE(p, nullptr);
  model::Node n = NodeOf("k8s-agentpool1-12345678-3");
  n.provider_id = "azure:///subscriptions/" + fake_->options().subscription +
                  "/resourcegroups/RG1/providers/Microsoft.Compute/virtualMachines/"
                  "K8S-AGENTPOOL1-12345678-3";
  EXPECT_EQ(p->PoolOf(n), "cpu");
  EXPECT_EQ(p->PoolOf(NodeOf("k8s-agentpool2-12345678-0")), "gpu");
  EXPECT_EQ(p->PoolOf(NodeOf("k8s-agentpool1-87654321-0")), "");  // another cluster
  model::Node vmss = n;
  vmss.provider_id = "azure:///subscriptions/" + fake_->options().subscription +
                     "/resourceGroups/rg1/providers/Microsoft.Compute/virtualMachineScaleSets/"
                     "k8s-agentpool1-12345678-vmss/virtualMachines/0";
  EXPECT_EQ(p->PoolOf(vmss), "");
  model::Node other_rg = NodeOf("k8s-agentpool1-12345678-0");
  other_rg.provider_id = "azure:///subscriptions/" + fake_->options().subscription +
                         "/resourceGroups/other/providers/Microsoft.Compute/virtualMachines/"
                         "k8s-agentpool1-12345678-0";
  EXPECT_EQ(p->PoolOf(other_rg), "");
  // By tags, once listed.
  EXPECT_EQ(p->PoolOf(NodeOf("renamed-node-7")), "");
  RefreshOne(*p, "cpu");
  EXPECT_EQ(p->PoolOf(NodeOf("renamed-node-7")), "cpu");
  EXPECT_EQ(p->PoolOf(NodeOf("k8s-agentpool1-87654321-0")), "");

  // A node of another pool is refused without a write.
  auto wrong = p->DeleteNode("gpu", NodeOf("k8s-agentpool1-12345678-0"), clock_.Now());
  ASSERT_FALSE(wrong.has_value());
  EXPECT_EQ(wrong.error().code(), Error::Code::kInvalidArgument);
  EXPECT_THAT(wrong.error().message(), HasSubstr("k8s-agentpool2-12345678-<index>"));
  EXPECT_EQ(fake_->CountRequests("DELETE", ""), 0);
  model::Node bad;
  bad.meta.name = "x";
  bad.provider_id = "kwok://x";
  auto no_vm = p->DeleteNode("cpu", bad, clock_.Now());
  ASSERT_FALSE(no_vm.has_value());
  EXPECT_THAT(no_vm.error().message(), HasSubstr("kwok://x"));

  auto ref = cloud::azure::ParseVmResourceId(
      "azure:///subscriptions/sub/resourceGroups/rg/providers/Microsoft.Compute/"
      "virtualMachines/k8s-agentpool1-12345678-0");
  ASSERT_TRUE(ref.has_value());
  EXPECT_EQ(ref->name, "k8s-agentpool1-12345678-0");
  EXPECT_EQ(cloud::azure::VmProviderId(*ref),
            "azure:///subscriptions/sub/resourceGroups/rg/providers/Microsoft.Compute/"
            "virtualMachines/k8s-agentpool1-12345678-0");
}

TEST_F(AzureVmsTest, SettingsErrorsNameTheKey) {
  auto error_of = [&](model::AutoscalerConfig c) {
    auto p = cloud::azure::NewAzureProvider(c, ProviderOptions());
    EXPECT_FALSE(p.has_value());
    return p ? std::string() : p.error().message();
  };
  auto no_cluster = VmsConfig({MakePool("agentpool1", 5)});
  no_cluster.provider.settings.erase("clusterId");
  EXPECT_THAT(error_of(no_cluster), HasSubstr("provider.clusterId: required for azure-vms"));
  EXPECT_THAT(error_of(VmsConfig({MakePool("agentpool1", 5)}, {{"scaleSets.agentpool1", "x"}})),
              HasSubstr("provider.scaleSets.agentpool1: unknown setting for azure-vms"));
  EXPECT_THAT(
      error_of(VmsConfig({MakePool("agentpool1", 5)}, {{"models.agentpool1.imageRef", "x"}})),
      HasSubstr("provider.models.agentpool1.imageRef: unknown model setting"));
  EXPECT_THAT(error_of(VmsConfig({MakePool("agentpool1", 5)}, {{"models.gpu.vmSize", "x"}})),
              HasSubstr("provider.models.gpu.vmSize: no pool named \"gpu\""));
  EXPECT_THAT(
      error_of(VmsConfig({MakePool("agentpool1", 5)}, {{"models.agentpool1.subnetId", "default"}})),
      HasSubstr("provider.models.agentpool1.subnetId: \"default\" (expected an ARM "
                "resource id"));
  EXPECT_THAT(error_of(VmsConfig({MakePool("agentpool1", 5)},
                                 {{"models.agentpool1.imageReference.publisher", "Canonical"}})),
              HasSubstr("provider.models.agentpool1.imageReference: publisher, offer and sku"));
  EXPECT_THAT(error_of(VmsConfig({MakePool("agentpool1", 5)}, {{"sweepInterval", "soon"}})),
              HasSubstr("provider.sweepInterval"));

  // Scaling from zero without a model: the error names the missing key.
  auto p = Make(VmsConfig({MakePool("agentpool1", 5)}));
  ASSERT_NE(p, nullptr);
  auto up = p->IncreaseSize("agentpool1", 1, clock_.Now());
  ASSERT_FALSE(up.has_value());
  EXPECT_THAT(up.error().message(), HasSubstr("provider.models.agentpool1"));
  auto partial = Make(VmsConfig({MakePool("agentpool1", 5)},
                                {{"models.agentpool1.subnetId", fake_->SubnetId("s")}}));
  ASSERT_NE(partial, nullptr);
  auto up2 = partial->IncreaseSize("agentpool1", 1, clock_.Now());
  ASSERT_FALSE(up2.has_value());
  EXPECT_THAT(up2.error().message(), HasSubstr("provider.models.agentpool1.vmSize: required"));
  EXPECT_EQ(fake_->CountRequests("PUT", ""), 0);
}

TEST_F(AzureVmsTest, DiscoversAgentPoolsOfTheClusterWithAMaxTag) {
  auto tags = AcsTags("gpuheavy");
  tags["max"] = "6";
  tags["k8s.io_cluster-autoscaler_node-template_label_gpu-size"] = "heavy";
  fake_->AddVm({.name = "k8s-gpuheavy-12345678-0", .vm_size = "Standard_NC6s_v3", .tags = tags});
  fake_->AddVm({.name = "k8s-agentpool1-12345678-0", .tags = AcsTags("agentpool1")});
  auto p = Make(VmsConfig({MakePool("agentpool1", 5)}));
  ASSERT_NE(p, nullptr);
  auto found = p->DiscoverPools(clock_.Now());
  ASSERT_TRUE(found.has_value()) << found.error().message();
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ((*found)[0].name, "gpuheavy");
  EXPECT_EQ((*found)[0].max, 6);
  EXPECT_EQ((*found)[0].template_node.meta.labels.at("gpu-size"), "heavy");
  EXPECT_EQ((*found)[0].template_node.capacity.Get(model::InternResource("nvidia.com/gpu")), 1);
  EXPECT_EQ(p->PoolOf(NodeOf("k8s-gpuheavy-12345678-1")), "gpuheavy");
  EXPECT_EQ(RefreshOne(*p, "gpuheavy").target, 1);
}

// --- Unmanaged OS disks (VHD blobs).

// The Authorization headers of the requests to ARM (not the token endpoints) and to blobs.
std::set<std::string> AuthHeaders(const std::vector<RecordedRequest>& reqs, bool blob) {
  std::set<std::string> out;
  for (const auto& r : reqs) {
    if (r.blob != blob || r.path.find("oauth2") != std::string::npos) continue;
    auto it = r.headers.find("Authorization");
    if (it != r.headers.end()) out.insert(it->second);
  }
  return out;
}

TEST_F(AzureVmsTest, ScaleDownDeletesTheVmThenItsNicThenItsVhdBlobWithAStorageToken) {
  fake_->AddVm({.name = "k8s-agentpool1-12345678-0", .tags = AcsTags("agentpool1")});
  std::string uri = fake_->AddBlob("vhds", "k8s-agentpool1-12345678-1-osdisk.vhd");
  fake_->AddBlob("vhds", "k8s-agentpool1-12345678-0-osdisk.vhd");  // someone else's: stays
  fake_->AddVm(
      {.name = "k8s-agentpool1-12345678-1", .tags = AcsTags("agentpool1"), .vhd_uri = uri});
  auto p = Make(VmsConfig({MakePool("agentpool1", 5)}));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(RefreshOne(*p, "agentpool1").target, 2);
  ASSERT_TRUE(
      p->DeleteNode("agentpool1", NodeOf("k8s-agentpool1-12345678-1"), clock_.Now()).has_value());
  Settle(*p, "agentpool1");
  auto reqs = fake_->requests();
  std::vector<std::string> deletes;
  for (const auto& r : reqs) {
    if (r.method != "DELETE") continue;
    deletes.push_back(r.blob ? "blob " + r.path : r.path.substr(r.path.rfind("/providers/")));
  }
  EXPECT_THAT(deletes,
              ElementsAre("/providers/Microsoft.Compute/virtualMachines/k8s-agentpool1-12345678-1",
                          "/providers/Microsoft.Network/networkInterfaces/"
                          "k8s-agentpool1-12345678-nic-1",
                          "blob /vhds/k8s-agentpool1-12345678-1-osdisk.vhd"));
  EXPECT_THAT(fake_->BlobNames(), ElementsAre("vhds/k8s-agentpool1-12345678-0-osdisk.vhd"));
  auto* vms = dynamic_cast<cloud::azure::VmsProvider*>(p.get());
  ASSERT_NE(vms, nullptr);
  EXPECT_EQ(vms->pending_removals("agentpool1"), 0u);
  // The blob request: the storage service's headers and a token for the storage audience,
  // asked for separately; the ARM token never goes to storage, nor the storage token to ARM.
  for (const auto& r : reqs) {
    if (!r.blob) continue;
    EXPECT_EQ(r.headers.at("x-ms-version"), cloud::azure::kBlobApiVersion);
    EXPECT_EQ(r.headers.at("x-ms-delete-snapshots"), "include");
    EXPECT_THAT(r.headers.at("x-ms-date"), ::testing::EndsWith(" GMT"));
  }
  int storage_scopes = 0;
  for (const auto& r : reqs) {
    if (r.path.ends_with("/oauth2/v2.0/token") &&
        r.body.find("scope=https%3A%2F%2Fstorage.azure.com%2F.default") != std::string::npos) {
      ++storage_scopes;
    }
  }
  EXPECT_EQ(storage_scopes, 1);
  auto arm_auth = AuthHeaders(reqs, false);
  auto blob_auth = AuthHeaders(reqs, true);
  ASSERT_EQ(blob_auth.size(), 1u);
  EXPECT_FALSE(arm_auth.empty());
  for (const auto& a : blob_auth) EXPECT_FALSE(arm_auth.contains(a)) << a;
}

TEST_F(AzureVmsTest, AVhdBlobAlreadyGoneCountsAsDeleted) {
  fake_->AddVm({.name = "k8s-agentpool1-12345678-2",
                .tags = AcsTags("agentpool1"),
                .vhd_uri = fake_->blob_endpoint() + "/vhds/k8s-agentpool1-12345678-2-osdisk.vhd"});
  auto p = Make(VmsConfig({MakePool("agentpool1", 5)}));
  ASSERT_NE(p, nullptr);
  RefreshOne(*p, "agentpool1");
  ASSERT_TRUE(
      p->DeleteNode("agentpool1", NodeOf("k8s-agentpool1-12345678-2"), clock_.Now()).has_value());
  Settle(*p, "agentpool1");
  EXPECT_EQ(fake_->CountRequests("DELETE", "/vhds/"), 1);
  auto* vms = dynamic_cast<cloud::azure::VmsProvider*>(p.get());
  ASSERT_NE(vms, nullptr);
  EXPECT_EQ(vms->pending_removals("agentpool1"), 0u);
  EXPECT_TRUE(fake_->VmNames().empty());
}

TEST_F(AzureVmsTest, ALeasedVhdBlobIsDeletedAgainAtTheNextRefresh) {
  std::string uri = fake_->AddBlob("vhds", "k8s-agentpool1-12345678-3-osdisk.vhd");
  fake_->AddVm(
      {.name = "k8s-agentpool1-12345678-3", .tags = AcsTags("agentpool1"), .vhd_uri = uri});
  auto p = Make(VmsConfig({MakePool("agentpool1", 5)}));
  ASSERT_NE(p, nullptr);
  RefreshOne(*p, "agentpool1");
  auto* vms = dynamic_cast<cloud::azure::VmsProvider*>(p.get());
  ASSERT_NE(vms, nullptr);
  fake_->LeaseBlobOnce("vhds", "k8s-agentpool1-12345678-3-osdisk.vhd");
  ASSERT_TRUE(
      p->DeleteNode("agentpool1", NodeOf("k8s-agentpool1-12345678-3"), clock_.Now()).has_value());
  // Each Refresh moves the removal on one operation; stop at the first blob DELETE (409).
  for (int i = 0; i < 6 && fake_->CountRequests("DELETE", "/vhds/") == 0; ++i) {
    clock_.Advance(std::chrono::seconds(3));
    RefreshOne(*p, "agentpool1");
  }
  ASSERT_EQ(fake_->CountRequests("DELETE", "/vhds/"), 1);
  EXPECT_EQ(fake_->BlobNames().size(), 1u);
  EXPECT_EQ(vms->pending_removals("agentpool1"), 1u);
  clock_.Advance(std::chrono::seconds(3));
  RefreshOne(*p, "agentpool1");
  EXPECT_EQ(fake_->CountRequests("DELETE", "/vhds/"), 2);
  EXPECT_TRUE(fake_->BlobNames().empty());
  EXPECT_EQ(vms->pending_removals("agentpool1"), 0u);
  Settle(*p, "agentpool1", 2);
  EXPECT_EQ(fake_->CountRequests("DELETE", "/vhds/"), 2);
}

TEST_F(AzureVmsTest, AVhdBlobOnAForeignHostOrOfAnotherNameIsNeverDeleted) {
  // Foreign host; the fake's blob with another VM's name; a blob not named after a VM; a blob URI
  // on the ARM endpoint's origin (a storage token must never go there).
  fake_->AddVm(
      {.name = "k8s-agentpool1-12345678-1",
       .tags = AcsTags("agentpool1"),
       .vhd_uri = "https://acct1.blob.example.com/vhds/k8s-agentpool1-12345678-1-osdisk.vhd"});
  std::string other = fake_->AddBlob("vhds", "k8s-agentpool1-12345678-20-osdisk.vhd");
  fake_->AddVm(
      {.name = "k8s-agentpool1-12345678-2", .tags = AcsTags("agentpool1"), .vhd_uri = other});
  std::string unrelated = fake_->AddBlob("vhds", "backup.vhd");
  fake_->AddVm(
      {.name = "k8s-agentpool1-12345678-3", .tags = AcsTags("agentpool1"), .vhd_uri = unrelated});
  fake_->AddVm({.name = "k8s-agentpool1-12345678-4",
                .tags = AcsTags("agentpool1"),
                .vhd_uri = fake_->endpoint() + "/vhds/k8s-agentpool1-12345678-4-osdisk.vhd"});
  auto p = Make(VmsConfig({MakePool("agentpool1", 5)}));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(RefreshOne(*p, "agentpool1").target, 4);
  for (int i = 1; i <= 4; ++i) {
    std::string vm = "k8s-agentpool1-12345678-" + std::to_string(i);
    ASSERT_TRUE(p->DeleteNode("agentpool1", NodeOf(vm), clock_.Now()).has_value()) << vm;
  }
  Settle(*p, "agentpool1");
  auto* vms = dynamic_cast<cloud::azure::VmsProvider*>(p.get());
  ASSERT_NE(vms, nullptr);
  EXPECT_EQ(vms->pending_removals("agentpool1"), 0u);
  EXPECT_TRUE(fake_->VmNames().empty());
  EXPECT_EQ(fake_->CountRequests("DELETE", "/vhds/"), 0);
  EXPECT_THAT(fake_->BlobNames(),
              ElementsAre("vhds/backup.vhd", "vhds/k8s-agentpool1-12345678-20-osdisk.vhd"));
  for (const auto& r : fake_->requests()) {
    EXPECT_EQ(r.body.find("storage.azure.com"), std::string::npos) << "no storage token needed";
  }
}

TEST_F(AzureVmsTest, AManagedIdentityGetsItsStorageTokenFromImdsForTheStorageResource) {
  std::string uri = fake_->AddBlob("vhds", "k8s-agentpool1-12345678-5-osdisk.vhd");
  fake_->AddVm(
      {.name = "k8s-agentpool1-12345678-5", .tags = AcsTags("agentpool1"), .vhd_uri = uri});
  auto config =
      VmsConfig({MakePool("agentpool1", 5)},
                {{"auth.type", "managedIdentity"}, {"auth.imdsEndpoint", fake_->imds_endpoint()}});
  config.provider.settings.erase("auth.tenantId");
  config.provider.settings.erase("auth.clientId");
  config.provider.settings.erase("authorityHost");
  auto p = Make(config);
  ASSERT_NE(p, nullptr);
  RefreshOne(*p, "agentpool1");
  ASSERT_TRUE(
      p->DeleteNode("agentpool1", NodeOf("k8s-agentpool1-12345678-5"), clock_.Now()).has_value());
  Settle(*p, "agentpool1");
  EXPECT_TRUE(fake_->BlobNames().empty());
  std::vector<std::string> resources;
  for (const auto& r : fake_->requests()) {
    if (r.path == "/metadata/identity/oauth2/token") {
      auto at = r.query.find("resource=");
      resources.push_back(r.query.substr(at, r.query.find('&', at) - at));
    }
  }
  EXPECT_THAT(resources, ElementsAre("resource=https%3A%2F%2Fmanagement.azure.com%2F",
                                     "resource=https%3A%2F%2Fstorage.azure.com%2F"));
}

TEST(AzureBlobTest, CheckVhdUriAcceptsOnlyTheVmsBlobOnAStorageHost) {
  using cloud::azure::CheckVhdUri;
  const std::string vm = "k8s-agentpool1-12345678-3";
  const std::string suffix = "blob.core.windows.net";
  const std::string arm = "https://management.azure.com";
  auto ok = [&](const std::string& uri) { return CheckVhdUri(uri, vm, suffix, arm).has_value(); };
  EXPECT_TRUE(ok("https://acct1.blob.core.windows.net/vhds/k8s-agentpool1-12345678-3-osdisk.vhd"));
  EXPECT_TRUE(ok("https://acct1.blob.core.windows.net/vhds/K8S-AGENTPOOL1-12345678-3_OsDisk.VHD"));
  EXPECT_TRUE(ok("http://127.0.0.1:10000/vhds/k8s-agentpool1-12345678-3-osdisk.vhd"));
  EXPECT_FALSE(ok("http://acct1.blob.core.windows.net/vhds/k8s-agentpool1-12345678-3-osdisk.vhd"));
  EXPECT_FALSE(
      ok("https://acct1.blob.core.windows.net.evil.example/vhds/"
         "k8s-agentpool1-12345678-3-osdisk.vhd"));
  EXPECT_FALSE(ok("https://blob.core.windows.net/vhds/k8s-agentpool1-12345678-3-osdisk.vhd"));
  EXPECT_FALSE(ok("https://a.b.blob.core.windows.net/vhds/k8s-agentpool1-12345678-3-osdisk.vhd"));
  EXPECT_FALSE(
      ok("https://acct1.blob.core.windows.net/vhds/k8s-agentpool1-12345678-30-osdisk.vhd"));
  EXPECT_FALSE(ok("https://acct1.blob.core.windows.net/vhds/k8s-agentpool1-12345678-3-osdisk"));
  EXPECT_FALSE(
      ok("https://acct1.blob.core.windows.net/vhds/k8s-agentpool1-12345678-3-osdisk.vhd"
         "?snapshot=1"));
  EXPECT_FALSE(ok("https://acct1.blob.core.windows.net/vhds/k8s-agentpool1-12345678-3/../x.vhd"));
  EXPECT_FALSE(ok("https://acct1.blob.core.windows.net/vhds/k8s-agentpool1-12345678-3-%2e.vhd"));
  EXPECT_FALSE(ok("https://acct1.blob.core.windows.net/k8s-agentpool1-12345678-3-osdisk.vhd"));
  EXPECT_FALSE(ok("https://user@acct1.blob.core.windows.net/vhds/k8s-agentpool1-12345678-3-a.vhd"));
  EXPECT_FALSE(CheckVhdUri("http://127.0.0.1:8080/vhds/k8s-agentpool1-12345678-3-osdisk.vhd", vm,
                           suffix, "http://127.0.0.1:8080")
                   .has_value());
  EXPECT_FALSE(CheckVhdUri("https://acct1.blob.core.windows.net/vhds/x-osdisk.vhd", "", suffix, arm)
                   .has_value());
  EXPECT_EQ(cloud::azure::FormatHttpDate(At("2026-11-22T10:41:56Z")),
            "Sun, 22 Nov 2026 10:41:56 GMT");
}

TEST_F(AzureVmsTest, StorageEndpointSuffixIsCheckedAndUsed) {
  auto bad = cloud::azure::NewAzureProvider(
      VmsConfig({MakePool("agentpool1", 5)}, {{"storageEndpointSuffix", "https://x.example"}}),
      ProviderOptions());
  ASSERT_FALSE(bad.has_value());
  EXPECT_THAT(bad.error().message(), HasSubstr("provider.storageEndpointSuffix"));
  auto good = Make(VmsConfig({MakePool("agentpool1", 5)},
                             {{"storageEndpointSuffix", "blob.core.usgovcloudapi.net"}}));
  ASSERT_NE(good, nullptr);
  EXPECT_EQ(good->settings().storage_endpoint_suffix, "blob.core.usgovcloudapi.net");
}

}  // namespace
}  // namespace tidepool::testing::azure
