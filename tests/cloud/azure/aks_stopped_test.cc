// aks pools with scaleDown.mode deallocate: stopping the drained node's own instance, the count
// kept equal to the running machines, starting through the count before creating, the max,
// deleting stopped machines, an agent pool whose scaleDownMode is not Deallocate, and a stop or
// start that fails.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cloud/azure/aks_provider.h"
#include "tests/cloud/azure/azure_fixture.h"

namespace tidepool::testing::azure {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kScaleSet[] = "aks-gpu-12345678-vmss";

class AzureAksStoppedTest : public AzureStoppedTestBase {
 protected:
  // A deallocate pool "gpu" (max `max`) on agent pool gpu with `count` running machines.
  void Setup(int count, int max = 10, std::string mode = "Deallocate") {
    fake_->AddManagedCluster("cluster1");
    fake_->AddAgentPool("cluster1", {.name = "gpu",
                                     .vm_size = "Standard_NC6s_v3",
                                     .count = count,
                                     .scale_down_mode = std::move(mode)});
    Use(AksConfig({DeallocatePool(max)}));
  }

  model::Node Instance(const std::string& id, const std::string& scale_set = kScaleSet) const {
    return ScaleSetNode(scale_set, id);
  }
  void Stop(const std::string& id) { StopOk(Instance(id)); }

  // A Refresh once the operations of the last calls are due to be polled (Retry-After, or ARM's
  // default poll interval).
  cloud::PoolSize Settle() {
    clock_.Advance(std::chrono::seconds(10));
    return RefreshOne(*provider_, "gpu");
  }

  // The body of the last `method` request to a path containing `path_part`.
  nlohmann::json LastBody(std::string_view method, std::string_view path_part = "/agentPools/") {
    nlohmann::json body;
    for (const auto& r : fake_->requests())
      if (r.method == method && r.path.find(path_part) != std::string::npos) {
        body = nlohmann::json::parse(r.body);
      }
    return body;
  }
};

TEST_F(AzureAksStoppedTest, StopDeallocatesTheNodesInstanceThenCountFollows) {
  Setup(3);
  Stop("1");
  const auto post = fake_->requests().back();
  EXPECT_EQ(post.method, "POST");
  EXPECT_THAT(post.path,
              HasSubstr(std::string("/virtualMachineScaleSets/") + kScaleSet + "/deallocate"));
  EXPECT_EQ(nlohmann::json::parse(post.body), nlohmann::json::parse(R"({"instanceIds":["1"]})"));
  EXPECT_EQ(fake_->InstancePower(kScaleSet, "1"), "deallocated");
  EXPECT_EQ(fake_->AgentPoolCount("cluster1", "gpu"), 3) << "the Compute API leaves count";
  EXPECT_EQ(fake_->CountRequests("PUT", ""), 0) << "nothing written to AKS while deallocating";

  auto size = Settle();  // the deallocation finished: count follows
  EXPECT_EQ(size.target, 2);
  EXPECT_EQ(size.instances, 2);
  EXPECT_EQ(size.stopped, 1);
  EXPECT_EQ(LastBody("PUT")["properties"]["count"], 2);
  EXPECT_EQ(LastBody("PUT")["properties"]["scaleDownMode"], "Deallocate") << "mode kept";
  EXPECT_EQ(fake_->AgentPoolCount("cluster1", "gpu"), 2);
  EXPECT_EQ(fake_->InstancePower(kScaleSet, "1"), "deallocated") << "AKS did not undo the stop";
  EXPECT_EQ(fake_->InstancePower(kScaleSet, "2"), "running") << "nor picked another node";

  size = Settle();
  EXPECT_EQ(size.target, 2);
  EXPECT_EQ(fake_->CountRequests("PUT", ""), 1) << "count agrees: nothing more to write";
  Stop("1");  // already stopped: success
}

TEST_F(AzureAksStoppedTest, IncreaseRaisesCountFromTheRunningMachinesSoAksStartsStoppedFirst) {
  Setup(3);
  Stop("1");
  Stop("2");
  EXPECT_EQ(Settle().target, 1);
  Settle();  // the count PUT's operation ends

  ASSERT_TRUE(provider_->IncreaseSize("gpu", 1, clock_.Now()).has_value());
  EXPECT_EQ(LastBody("PUT")["properties"]["count"], 2);
  EXPECT_EQ(fake_->InstancePower(kScaleSet, "2"), "running") << "the newest stopped first";
  EXPECT_EQ(fake_->InstancePower(kScaleSet, "1"), "deallocated");
  EXPECT_THAT(fake_->InstanceIds(kScaleSet), ElementsAre("0", "1", "2")) << "nothing created";
  EXPECT_EQ(fake_->CountRequests("POST", "/start"), 0) << "AKS starts them, not tidepool";
  auto size = Settle();
  EXPECT_EQ(size.target, 2);
  EXPECT_EQ(size.stopped, 1);

  ASSERT_TRUE(provider_->IncreaseSize("gpu", 2, clock_.Now()).has_value());
  EXPECT_EQ(fake_->InstancePower(kScaleSet, "1"), "running");
  EXPECT_THAT(fake_->InstanceIds(kScaleSet), ElementsAre("0", "1", "2", "3")) << "1 created";
  size = Settle();
  EXPECT_EQ(size.target, 4);
  EXPECT_EQ(size.instances, 4);
  EXPECT_EQ(size.stopped, 0);
}

TEST_F(AzureAksStoppedTest, ACountStillCountingAStopDoesNotInflateTheIncrease) {
  Setup(3);
  Stop("1");
  fake_->ConflictNextWrite("OperationNotAllowed", "Another operation is in progress.");
  auto size = Settle();  // lowering count fails: logged, tried again at the next Refresh
  EXPECT_EQ(size.target, 2);
  EXPECT_EQ(size.stopped, 1);
  ASSERT_EQ(fake_->AgentPoolCount("cluster1", "gpu"), 3);
  ASSERT_TRUE(provider_->IncreaseSize("gpu", 1, clock_.Now()).has_value());
  EXPECT_EQ(LastBody("PUT")["properties"]["count"], 3) << "2 running + 1, not 3 + 1";
  EXPECT_EQ(fake_->InstancePower(kScaleSet, "1"), "running");
  EXPECT_EQ(fake_->InstanceIds(kScaleSet).size(), 3u) << "started, nothing created";
}

TEST_F(AzureAksStoppedTest, TheMaxCountsRunningMachinesOnly) {
  Setup(3, /*max=*/3);
  Stop("0");
  Stop("1");
  EXPECT_EQ(Settle().target, 1);
  Settle();
  auto over = provider_->IncreaseSize("gpu", 3, clock_.Now());
  ASSERT_FALSE(over.has_value());
  EXPECT_EQ(over.error().code(), Error::Code::kInvalidArgument);
  EXPECT_THAT(over.error().message(), HasSubstr("1 + 3 would pass the pool's max 3"));
  ASSERT_TRUE(provider_->IncreaseSize("gpu", 2, clock_.Now()).has_value());
  EXPECT_EQ(fake_->AgentPoolCount("cluster1", "gpu"), 3);
  EXPECT_EQ(fake_->InstanceIds(kScaleSet).size(), 3u) << "both started, none created";
}

TEST_F(AzureAksStoppedTest, DeleteStoppedDeletesTheOldestStoppedMachinesByName) {
  Setup(4);
  Stop("3");
  Stop("1");
  Settle();
  Settle();
  ASSERT_TRUE(stopper_->DeleteStopped("gpu", 1, clock_.Now()).has_value());
  EXPECT_EQ(LastBody("POST", "/deleteMachines"),
            nlohmann::json::parse(R"({"machineNames":["aks-gpu-12345678-vmss000001"]})"));
  EXPECT_THAT(fake_->InstanceIds(kScaleSet), ElementsAre("0", "2", "3"));
  EXPECT_EQ(Settle().stopped, 1);
  ASSERT_TRUE(stopper_->DeleteStopped("gpu", 5, clock_.Now()).has_value());
  EXPECT_THAT(fake_->InstanceIds(kScaleSet), ElementsAre("0", "2"));
  auto size = Settle();
  EXPECT_EQ(size.stopped, 0);
  EXPECT_EQ(size.target, 2);
  EXPECT_EQ(fake_->AgentPoolCount("cluster1", "gpu"), 2) << "running machines untouched";
}

TEST_F(AzureAksStoppedTest, AnAgentPoolNotInDeallocateModeIsAClearErrorAndNothingIsSent) {
  Setup(2, 10, /*mode=*/"");
  auto r = stopper_->StopNode("gpu", Instance("1"), clock_.Now());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Error::Code::kInvalidArgument);
  EXPECT_THAT(r.error().message(), HasSubstr("agent pool gpu of managed cluster cluster1 has "
                                             "scaleDownMode unset (Delete)"));
  EXPECT_THAT(r.error().message(),
              HasSubstr("az aks nodepool update --resource-group rg1 --cluster-name cluster1 "
                        "--name gpu --scale-down-mode Deallocate"));
  EXPECT_EQ(fake_->CountRequests("POST", "/deallocate"), 0);
  EXPECT_EQ(fake_->InstancePower(kScaleSet, "1"), "running");
  // Refresh still reports the pool (nothing stopped) and changes nothing, the mode included.
  auto size = RefreshOne(*provider_, "gpu");
  EXPECT_EQ(size.target, 2);
  EXPECT_EQ(size.stopped, 0);
  EXPECT_EQ(fake_->CountRequests("PUT", ""), 0);
  // Raising count creates in any mode, and the PUT carries no scaleDownMode of tidepool's.
  ASSERT_TRUE(provider_->IncreaseSize("gpu", 1, clock_.Now()).has_value());
  EXPECT_FALSE(LastBody("PUT")["properties"].contains("scaleDownMode"));
  EXPECT_EQ(fake_->AgentPoolCount("cluster1", "gpu"), 3);
}

TEST_F(AzureAksStoppedTest, ANodeOfAnotherAgentPoolIsRefused) {
  Setup(2);
  auto r = stopper_->StopNode("gpu", Instance("1", "aks-cpu-12345678-vmss"), clock_.Now());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Error::Code::kInvalidArgument);
  EXPECT_THAT(r.error().message(), HasSubstr("not agent pool gpu"));
  model::Node bare;
  bare.meta.name = "n1";
  auto none = stopper_->StopNode("gpu", bare, clock_.Now());
  ASSERT_FALSE(none.has_value());
  EXPECT_THAT(none.error().message(), HasSubstr("is not a scale set instance"));
  EXPECT_EQ(fake_->CountRequests("POST", "/deallocate"), 0);
}

TEST_F(AzureAksStoppedTest, AStopArmRefusesFailsAndChangesNothing) {
  Setup(2);
  fake_->ConflictNextWrite("OperationNotAllowed", "The operation is not allowed now.");
  auto r = stopper_->StopNode("gpu", Instance("1"), clock_.Now());
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message(), HasSubstr("OperationNotAllowed"));
  EXPECT_EQ(fake_->InstancePower(kScaleSet, "1"), "running");
  auto size = RefreshOne(*provider_, "gpu");
  EXPECT_EQ(size.stopped, 0);
  EXPECT_EQ(size.target, 2);
  EXPECT_EQ(fake_->CountRequests("PUT", ""), 0);
}

TEST_F(AzureAksStoppedTest, AStartThatFailsLeavesAFailedMachineThatIsCancelledThenCreated) {
  node_joined_ = [](std::string_view pid) { return !pid.ends_with("/1"); };
  Setup(2);
  Stop("1");
  Settle();
  Settle();
  fake_->FailNextStart("VMStartTimedOut", "The VM did not start in time.");
  ASSERT_TRUE(provider_->IncreaseSize("gpu", 1, clock_.Now()).has_value());
  EXPECT_EQ(fake_->InstanceState(kScaleSet, "1"), "Failed");
  auto size = Settle();
  EXPECT_EQ(size.stopped, 0) << "a failed machine is not kept as stopped";
  EXPECT_EQ(size.instances, 1);
  EXPECT_EQ(size.target, 2);
  // The provision timeout gives it back: the Failed machine goes.
  ASSERT_TRUE(provider_->DecreaseTargetSize("gpu", 1, clock_.Now()).has_value());
  EXPECT_EQ(LastBody("POST", "/deleteMachines"),
            nlohmann::json::parse(R"({"machineNames":["aks-gpu-12345678-vmss000001"]})"));
  EXPECT_THAT(fake_->InstanceIds(kScaleSet), ElementsAre("0"));
  Settle();
  // Nothing stopped is left, so the next increase creates.
  ASSERT_TRUE(provider_->IncreaseSize("gpu", 1, clock_.Now()).has_value());
  EXPECT_THAT(fake_->InstanceIds(kScaleSet), ElementsAre("0", "2"));
}

TEST_F(AzureAksStoppedTest, CancellingNeverTakesAStoppedMachine) {
  node_joined_ = [](std::string_view pid) { return !pid.ends_with("/1"); };
  Setup(2);
  Stop("1");
  auto busy = provider_->DecreaseTargetSize("gpu", 1, clock_.Now());
  ASSERT_FALSE(busy.has_value());
  EXPECT_EQ(busy.error().code(), Error::Code::kUnavailable) << "count waits for the deallocation";
  EXPECT_EQ(fake_->CountRequests("PUT", ""), 0);
  Settle();
  Settle();
  auto r = provider_->DecreaseTargetSize("gpu", 1, clock_.Now());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Error::Code::kConflict);
  EXPECT_EQ(fake_->CountRequests("POST", "/deleteMachines"), 0);
  EXPECT_EQ(fake_->InstancePower(kScaleSet, "1"), "deallocated");
}

TEST_F(AzureAksStoppedTest, ADeletePoolRefusesToStop) {
  fake_->AddManagedCluster("cluster1");
  fake_->AddAgentPool("cluster1", {.name = "gpu", .count = 1, .scale_down_mode = "Deallocate"});
  auto p = Make(AksConfig({MakePool("gpu", 4)}));
  ASSERT_NE(p, nullptr);
  auto r = dynamic_cast<cloud::MachineStopper&>(*p).StopNode("gpu", Instance("0"), clock_.Now());
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message(), HasSubstr("scaleDown.mode is delete"));
}

}  // namespace
}  // namespace tidepool::testing::azure
