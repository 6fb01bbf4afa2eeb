// azure-vmss pools with scaleDown.mode deallocate: stopping instances, starting them before
// creating, the max, deleting stopped ones, and what happens when a start fails.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cloud/azure/vmss_provider.h"
#include "tests/cloud/azure/azure_fixture.h"

namespace tidepool::testing::azure {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kScaleSet[] = "k8s-gpu-12345678-vmss";

class AzureVmssStoppedTest : public AzureStoppedTestBase {
 protected:
  // A deallocate pool "gpu" (max `max`) on a scale set of `capacity` running instances.
  void Setup(int capacity, int max = 10) {
    fake_->AddScaleSet({.name = kScaleSet, .capacity = capacity});
    Use(VmssConfig({DeallocatePool(max)}, {{"scaleSets.gpu", kScaleSet}}));
  }

  model::Node Instance(const std::string& id) const { return ScaleSetNode(kScaleSet, id); }
  void Stop(const std::string& id) { StopOk(Instance(id)); }
};

TEST_F(AzureVmssStoppedTest, StopDeallocatesAndRefreshCountsItOutsideTheTarget) {
  Setup(3);
  Stop("1");
  auto reqs = fake_->requests();
  const auto& post = reqs.back();
  EXPECT_EQ(post.method, "POST");
  EXPECT_THAT(post.path,
              HasSubstr(std::string("/virtualMachineScaleSets/") + kScaleSet + "/deallocate"));
  EXPECT_EQ(nlohmann::json::parse(post.body), nlohmann::json::parse(R"({"instanceIds":["1"]})"));
  EXPECT_EQ(fake_->InstancePower(kScaleSet, "1"), "deallocated");
  EXPECT_EQ(fake_->Capacity(kScaleSet), 3) << "a deallocated instance stays in the capacity";
  auto size = RefreshOne(*provider_, "gpu");
  EXPECT_EQ(size.target, 2);
  EXPECT_EQ(size.instances, 2);
  EXPECT_EQ(size.stopped, 1);
  Stop("1");  // already stopped: success
}

TEST_F(AzureVmssStoppedTest, IncreaseStartsStoppedInstancesBeforeCreating) {
  Setup(3);
  Stop("1");
  Stop("2");
  ASSERT_TRUE(provider_->IncreaseSize("gpu", 1, clock_.Now()).has_value());
  EXPECT_EQ(fake_->CountRequests("PATCH", ""), 0) << "no create while a stopped one is there";
  EXPECT_EQ(nlohmann::json::parse(fake_->requests().back().body),
            nlohmann::json::parse(R"({"instanceIds":["2"]})"))
      << "the most recently created stopped instance first";
  EXPECT_EQ(fake_->InstancePower(kScaleSet, "2"), "running");
  EXPECT_EQ(fake_->CountRequests("POST", "/start"), 1);

  ASSERT_TRUE(provider_->IncreaseSize("gpu", 3, clock_.Now()).has_value());
  EXPECT_EQ(fake_->InstancePower(kScaleSet, "1"), "running");
  EXPECT_EQ(fake_->CountRequests("PATCH", ""), 1);
  EXPECT_EQ(fake_->Capacity(kScaleSet), 5) << "1 started, 2 created";
  auto size = RefreshOne(*provider_, "gpu");
  EXPECT_EQ(size.target, 5);
  EXPECT_EQ(size.stopped, 0);
}

TEST_F(AzureVmssStoppedTest, TheMaxCountsRunningMachinesOnly) {
  Setup(3, /*max=*/3);
  Stop("0");
  Stop("1");
  auto over = provider_->IncreaseSize("gpu", 3, clock_.Now());
  ASSERT_FALSE(over.has_value());
  EXPECT_EQ(over.error().code(), Error::Code::kInvalidArgument);
  EXPECT_THAT(over.error().message(), HasSubstr("1 + 3 would pass the pool's max 3"));
  EXPECT_EQ(fake_->CountRequests("POST", "/start"), 0);
  ASSERT_TRUE(provider_->IncreaseSize("gpu", 2, clock_.Now()).has_value());
  EXPECT_EQ(fake_->Capacity(kScaleSet), 3);
}

TEST_F(AzureVmssStoppedTest, AStartArmRefusesIsCreatedInstead) {
  Setup(2);
  Stop("1");
  fake_->ConflictNextWrite("OperationNotAllowed", "The operation is not allowed now.");
  ASSERT_TRUE(provider_->IncreaseSize("gpu", 1, clock_.Now()).has_value());
  EXPECT_EQ(fake_->CountRequests("POST", "/start"), 1);
  EXPECT_EQ(fake_->Capacity(kScaleSet), 3);
  EXPECT_EQ(fake_->InstancePower(kScaleSet, "1"), "deallocated");
  auto size = RefreshOne(*provider_, "gpu");
  EXPECT_EQ(size.target, 2);
  EXPECT_EQ(size.stopped, 1);
}

TEST_F(AzureVmssStoppedTest, AStartThatFailsLeavesAFailedInstanceThatIsDeletedThenCreated) {
  node_joined_ = [](std::string_view) { return false; };
  Setup(2);
  Stop("1");
  fake_->FailNextStart("VMStartTimedOut", "The VM did not start in time.");
  ASSERT_TRUE(provider_->IncreaseSize("gpu", 1, clock_.Now()).has_value());
  EXPECT_EQ(fake_->InstanceState(kScaleSet, "1"), "Failed");
  auto size = RefreshOne(*provider_, "gpu");  // deletes the failed instance
  EXPECT_EQ(size.stopped, 0);
  EXPECT_EQ(fake_->CountRequests("POST", "/delete"), 1);
  EXPECT_THAT(fake_->InstanceIds(kScaleSet), ElementsAre("0"));
  // The pods are planned again: nothing stopped is left, so this increase creates.
  ASSERT_TRUE(provider_->IncreaseSize("gpu", 1, clock_.Now()).has_value());
  EXPECT_EQ(fake_->CountRequests("POST", "/start"), 1);
  EXPECT_EQ(fake_->CountRequests("PATCH", ""), 1);
  EXPECT_EQ(fake_->Capacity(kScaleSet), 2);
}

TEST_F(AzureVmssStoppedTest, DeleteStoppedTakesTheOldestStoppedOnly) {
  Setup(4);
  Stop("3");
  Stop("1");
  ASSERT_TRUE(stopper_->DeleteStopped("gpu", 1, clock_.Now()).has_value());
  EXPECT_EQ(nlohmann::json::parse(fake_->requests().back().body),
            nlohmann::json::parse(R"({"instanceIds":["1"]})"));
  EXPECT_THAT(fake_->InstanceIds(kScaleSet), ElementsAre("0", "2", "3"));
  ASSERT_TRUE(stopper_->DeleteStopped("gpu", 5, clock_.Now()).has_value());
  EXPECT_THAT(fake_->InstanceIds(kScaleSet), ElementsAre("0", "2"));
  EXPECT_EQ(RefreshOne(*provider_, "gpu").stopped, 0);
}

TEST_F(AzureVmssStoppedTest, CancellingNeverTakesAStoppedInstance) {
  node_joined_ = [](std::string_view pid) { return !pid.ends_with("/1"); };
  Setup(2);
  Stop("1");
  auto r = provider_->DecreaseTargetSize("gpu", 1, clock_.Now());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Error::Code::kConflict);
  EXPECT_EQ(fake_->CountRequests("POST", "/delete"), 0);
  EXPECT_EQ(fake_->InstancePower(kScaleSet, "1"), "deallocated");
}

TEST_F(AzureVmssStoppedTest, ADeletePoolRefusesToStop) {
  fake_->AddScaleSet({.name = kScaleSet, .capacity = 1});
  auto p = Make(VmssConfig({MakePool("gpu", 4)}, {{"scaleSets.gpu", kScaleSet}}));
  ASSERT_NE(p, nullptr);
  auto r = dynamic_cast<cloud::MachineStopper&>(*p).StopNode("gpu", Instance("0"), clock_.Now());
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message(), HasSubstr("scaleDown.mode is delete"));
}

}  // namespace
}  // namespace tidepool::testing::azure
