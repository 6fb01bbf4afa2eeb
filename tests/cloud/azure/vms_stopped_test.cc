// azure-vms pools with scaleDown.mode deallocate: stopping VMs, starting them before creating,
// the max, deleting stopped ones through the removal path, what happens when a start is refused
// or fails, and that neither cancelling nor the sweep touches a stopped VM or what it keeps.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cloud/azure/vms_provider.h"
#include "tests/cloud/azure/vms_fixture.h"

namespace tidepool::testing::azure {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

class AzureVmsStoppedTest : public AzureVmsTestBase {
 protected:
  // A pool "gpu" (agent pool gpu, max `max`) of `vms` running VMs k8s-gpu-12345678-<i>, each
  // with userData (so copies need no customDataFile); mode deallocate unless `deallocate` is
  // false.
  void Setup(int vms, int max = 10, bool deallocate = true) {
    for (int i = 0; i < vms; ++i) {
      fake_->AddVm({.name = Vm(i),
                    .tags = AcsTags("gpu"),
                    .availability_set = "gpu-availabilitySet-12345678",
                    .user_data = "IyEvYmluL3NoCg=="});
    }
    model::Pool pool = MakePool("gpu", max);
    if (deallocate) {
      pool.scale_down.mode = model::ScaleDownMode::kDeallocate;
      pool.scale_down.max_stopped = max;
    }
    provider_ = Make(VmsConfig({pool}));
    ASSERT_NE(provider_, nullptr);
    stopper_ = dynamic_cast<cloud::MachineStopper*>(provider_.get());
    ASSERT_NE(stopper_, nullptr);
  }

  static std::string Vm(int i) { return "k8s-gpu-12345678-" + std::to_string(i); }

  void Stop(int i) {
    auto r = stopper_->StopNode("gpu", NodeOf(Vm(i)), clock_.Now());
    ASSERT_TRUE(r.has_value()) << r.error().message();
  }

  // Requests with this method whose path ends with `suffix`.
  int Count(std::string_view method, std::string_view suffix) const {
    int n = 0;
    for (const auto& r : fake_->requests())
      if (r.method == method && r.path.ends_with(suffix)) ++n;
    return n;
  }

  std::unique_ptr<cloud::azure::AzureProvider> provider_;
  cloud::MachineStopper* stopper_ = nullptr;
};

TEST_F(AzureVmsStoppedTest, StopDeallocatesAndRefreshCountsItOutsideTheTarget) {
  Setup(3);
  EXPECT_EQ(RefreshOne(*provider_, "gpu").target, 3);
  Stop(1);
  const auto post = fake_->requests().back();
  EXPECT_EQ(post.method, "POST");
  EXPECT_THAT(post.path, ::testing::EndsWith("/virtualMachines/" + Vm(1) + "/deallocate"));
  EXPECT_THAT(post.query, HasSubstr("api-version=2025-04-01"));
  EXPECT_EQ(fake_->VmPower(Vm(1)), "deallocated");
  EXPECT_EQ(fake_->VmState(Vm(1)), "Succeeded");
  auto size = RefreshOne(*provider_, "gpu");
  EXPECT_EQ(size.target, 2);
  EXPECT_EQ(size.instances, 2);
  EXPECT_EQ(size.stopped, 1);
  Stop(1);  // already stopped: success
  EXPECT_EQ(RefreshOne(*provider_, "gpu").stopped, 1);
}

TEST_F(AzureVmsStoppedTest, IncreaseStartsStoppedVmsBeforeCreating) {
  Setup(3);
  Stop(1);
  Stop(2);
  ASSERT_TRUE(provider_->IncreaseSize("gpu", 1, clock_.Now()).has_value());
  EXPECT_EQ(fake_->CountRequests("PUT", ""), 0) << "no NIC or VM PUT while a stopped VM covers it";
  EXPECT_EQ(Count("POST", "/" + Vm(2) + "/start"), 1) << "the highest index first";
  EXPECT_EQ(Count("POST", "/start"), 1);
  EXPECT_EQ(fake_->VmPower(Vm(2)), "running");
  EXPECT_EQ(fake_->VmPower(Vm(1)), "deallocated");
  auto size = RefreshOne(*provider_, "gpu");
  EXPECT_EQ(size.target, 2);
  EXPECT_EQ(size.stopped, 1);

  // Partial: one stopped VM to start, two to create (in indexes no VM uses).
  ASSERT_TRUE(provider_->IncreaseSize("gpu", 3, clock_.Now()).has_value());
  EXPECT_EQ(fake_->VmPower(Vm(1)), "running");
  EXPECT_EQ(Count("POST", "/start"), 2);
  EXPECT_EQ(Count("PUT", "/virtualMachines/" + Vm(3)), 1);
  EXPECT_EQ(Count("PUT", "/virtualMachines/" + Vm(4)), 1);
  EXPECT_EQ(fake_->CountRequests("PUT", "/virtualMachines/"), 2);
  Settle(*provider_, "gpu", 2);
  size = RefreshOne(*provider_, "gpu");
  EXPECT_EQ(size.target, 5);
  EXPECT_EQ(size.instances, 5);
  EXPECT_EQ(size.stopped, 0);
}

TEST_F(AzureVmsStoppedTest, TheMaxCountsRunningAndRequestedVmsOnly) {
  Setup(3, /*max=*/3);
  Stop(0);
  Stop(1);
  auto over = provider_->IncreaseSize("gpu", 3, clock_.Now());
  ASSERT_FALSE(over.has_value());
  EXPECT_EQ(over.error().code(), Error::Code::kInvalidArgument);
  EXPECT_THAT(over.error().message(), HasSubstr("1 + 3 would pass the pool's max 3"));
  EXPECT_EQ(Count("POST", "/start"), 0);
  ASSERT_TRUE(provider_->IncreaseSize("gpu", 2, clock_.Now()).has_value());
  EXPECT_EQ(Count("POST", "/start"), 2);
  EXPECT_EQ(fake_->CountRequests("PUT", ""), 0);
  EXPECT_EQ(RefreshOne(*provider_, "gpu").target, 3);
}

TEST_F(AzureVmsStoppedTest, AStartArmRefusesIsCreatedInstead) {
  Setup(2);
  Stop(1);
  fake_->ConflictNextWrite("OperationNotAllowed", "The operation is not allowed now.");
  ASSERT_TRUE(provider_->IncreaseSize("gpu", 1, clock_.Now()).has_value());
  EXPECT_EQ(Count("POST", "/" + Vm(1) + "/start"), 1);
  EXPECT_EQ(Count("PUT", "/virtualMachines/" + Vm(2)), 1) << "created in the next free index";
  EXPECT_EQ(fake_->VmPower(Vm(1)), "deallocated");
  Settle(*provider_, "gpu", 2);
  auto size = RefreshOne(*provider_, "gpu");
  EXPECT_EQ(size.target, 2);
  EXPECT_EQ(size.instances, 2);
  EXPECT_EQ(size.stopped, 1);
}

TEST_F(AzureVmsStoppedTest, AStartThatFailsLeavesAFailedVmThatIsRemovedThenCreated) {
  node_joined_ = [](std::string_view) { return false; };
  Setup(2);
  Stop(1);
  fake_->FailNextStart("VMStartTimedOut", "The VM did not start in time.");
  ASSERT_TRUE(provider_->IncreaseSize("gpu", 1, clock_.Now()).has_value());
  EXPECT_EQ(fake_->VmState(Vm(1)), "Failed");
  auto size = RefreshOne(*provider_, "gpu");  // removes the failed VM
  EXPECT_EQ(size.stopped, 0);
  EXPECT_EQ(size.target, 1);
  EXPECT_EQ(Count("DELETE", "/virtualMachines/" + Vm(1)), 1);
  Settle(*provider_, "gpu");
  EXPECT_THAT(fake_->VmNames(), ElementsAre(Vm(0)));
  EXPECT_THAT(fake_->NicNames(), Not(Contains("k8s-gpu-12345678-nic-1")));
  EXPECT_EQ(fake_->DiskNames().size(), 1u) << "VM 1's OS disk went with it";
  // The pods are planned again: nothing stopped is left, so this increase creates.
  ASSERT_TRUE(provider_->IncreaseSize("gpu", 1, clock_.Now()).has_value());
  EXPECT_EQ(Count("POST", "/start"), 1);
  EXPECT_EQ(fake_->CountRequests("PUT", "/virtualMachines/"), 1);
}

TEST_F(AzureVmsStoppedTest, DeleteStoppedRemovesTheLowestIndexesWithTheirNicAndDisk) {
  Setup(4);
  Stop(3);
  Stop(1);
  ASSERT_TRUE(stopper_->DeleteStopped("gpu", 1, clock_.Now()).has_value());
  EXPECT_EQ(Count("DELETE", "/virtualMachines/" + Vm(1)), 1);
  EXPECT_EQ(fake_->CountRequests("DELETE", "/virtualMachines/"), 1);
  EXPECT_EQ(RefreshOne(*provider_, "gpu").stopped, 1) << "a stopped VM being removed is not kept";
  Settle(*provider_, "gpu");
  EXPECT_THAT(fake_->VmNames(), ElementsAre(Vm(0), Vm(2), Vm(3)));
  EXPECT_THAT(fake_->NicNames(), Not(Contains("k8s-gpu-12345678-nic-1")));
  for (const std::string& disk : fake_->DiskNames()) {
    EXPECT_THAT(disk, Not(HasSubstr(Vm(1) + "_OsDisk")));
  }
  ASSERT_TRUE(stopper_->DeleteStopped("gpu", 5, clock_.Now()).has_value());
  Settle(*provider_, "gpu");
  EXPECT_THAT(fake_->VmNames(), ElementsAre(Vm(0), Vm(2)));
  auto size = RefreshOne(*provider_, "gpu");
  EXPECT_EQ(size.stopped, 0);
  EXPECT_EQ(size.target, 2);
  EXPECT_FALSE(stopper_->DeleteStopped("gpu", 0, clock_.Now()).has_value());
}

TEST_F(AzureVmsStoppedTest, CancellingNeverTakesAStoppedVm) {
  node_joined_ = [](std::string_view pid) { return !pid.ends_with("-1"); };
  Setup(2);
  Stop(1);
  auto r = provider_->DecreaseTargetSize("gpu", 1, clock_.Now());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Error::Code::kConflict);
  EXPECT_EQ(fake_->CountRequests("DELETE", ""), 0);
  EXPECT_EQ(fake_->VmPower(Vm(1)), "deallocated");
}

TEST_F(AzureVmsStoppedTest, TheSweepLeavesAStoppedVmsNicAndDiskAlone) {
  Setup(2);
  RefreshOne(*provider_, "gpu");  // the first sweep
  Stop(1);
  const auto nics = fake_->NicNames();
  const auto disks = fake_->DiskNames();
  clock_.Advance(std::chrono::minutes(6));  // past sweepInterval (5m)
  const int lists = Count("GET", "/networkInterfaces");
  RefreshOne(*provider_, "gpu");
  EXPECT_EQ(Count("GET", "/networkInterfaces"), lists + 1) << "the sweep ran";
  EXPECT_EQ(fake_->CountRequests("DELETE", ""), 0);
  EXPECT_EQ(fake_->NicNames(), nics);
  EXPECT_EQ(fake_->DiskNames(), disks);
  EXPECT_THAT(nics, Contains("k8s-gpu-12345678-nic-1"));
}

TEST_F(AzureVmsStoppedTest, StopNodeChecksThePoolAndTheProviderId) {
  Setup(1);
  model::Node other = NodeOf("k8s-cpu-12345678-0");
  auto r = stopper_->StopNode("gpu", other, clock_.Now());
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message(), HasSubstr("is not of pool gpu"));
  model::Node foreign = NodeOf(Vm(0));
  foreign.provider_id = "azure:///subscriptions/" + fake_->options().subscription +
                        "/resourceGroups/other-rg/providers/Microsoft.Compute/virtualMachines/" +
                        Vm(0);
  EXPECT_FALSE(stopper_->StopNode("gpu", foreign, clock_.Now()).has_value());
  EXPECT_EQ(Count("POST", "/deallocate"), 0);
  // A VM that is gone: nothing to stop, success.
  EXPECT_TRUE(stopper_->StopNode("gpu", NodeOf(Vm(7)), clock_.Now()).has_value());
}

TEST_F(AzureVmsStoppedTest, ADeletePoolRefusesToStop) {
  Setup(2, 10, /*deallocate=*/false);
  auto r = stopper_->StopNode("gpu", NodeOf(Vm(0)), clock_.Now());
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message(), HasSubstr("scaleDown.mode is delete"));
  EXPECT_EQ(Count("POST", "/deallocate"), 0);
}

}  // namespace
}  // namespace tidepool::testing::azure
