// ARM client behaviour through the providers: long-running operations, throttling without a tight
// loop, ARM error codes in messages, If-Match / 412 retry.
#include "cloud/azure/arm.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/cloud/azure/azure_fixture.h"

namespace tidepool::testing::azure {
namespace {

using ::testing::HasSubstr;

class AzureArmTest : public AzureTestBase {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(AzureTestBase::SetUp());
    fake_->AddScaleSet({.name = "vmss-cpu", .sku = "Standard_D2_v2", .capacity = 2});
    fake_->AddScaleSet(
        {.name = "vmss-gpu-spot", .sku = "Standard_NC6s_v3", .capacity = 0, .spot = true});
    provider_ =
        Make(VmssConfig({MakePool("cpu", 10), MakePool("gpu-spot", 4, true)},
                        {{"scaleSets.cpu", "vmss-cpu"}, {"scaleSets.gpu-spot", "vmss-gpu-spot"}}));
    ASSERT_NE(provider_, nullptr);
  }
  std::unique_ptr<cloud::azure::AzureProvider> provider_;
};

TEST_F(AzureArmTest, LongRunningOperationIsPolledOnlyWhenRetryAfterAllows) {
  fake_->SetOperationPolls(3);
  ASSERT_TRUE(provider_->IncreaseSize("cpu", 1, clock_.Now()).has_value());
  EXPECT_EQ(provider_->pending_operations("cpu"), 1u);
  // Retry-After is 2s: refreshing sooner must not poll.
  for (int i = 0; i < 5; ++i) RefreshOne(*provider_, "cpu");
  EXPECT_EQ(fake_->CountRequests("GET", "/operations/"), 0);
  for (int i = 0; i < 3; ++i) {
    clock_.Advance(std::chrono::seconds(2));
    RefreshOne(*provider_, "cpu");
  }
  EXPECT_EQ(fake_->CountRequests("GET", "/operations/"), 3);
  EXPECT_EQ(provider_->pending_operations("cpu"), 1u);  // third answer still InProgress
  clock_.Advance(std::chrono::seconds(2));
  auto size = RefreshOne(*provider_, "cpu");
  EXPECT_EQ(provider_->pending_operations("cpu"), 0u);
  EXPECT_EQ(size.target, 3);
  EXPECT_EQ(size.instances, 3);
  EXPECT_FALSE(size.stockout);
}

TEST_F(AzureArmTest, WaitFollowsAzureAsyncOperationAndSleepsRetryAfter) {
  fake_->SetOperationPolls(2);
  net::HttpClient http;
  auto tokens = cloud::azure::MakeTokenSource(FakeAuth(), &http, &clock_, ProviderOptions().env);
  ASSERT_TRUE(tokens.has_value());
  cloud::azure::ArmClient arm(&http, tokens->get(), &clock_, ProviderOptions().sleep,
                              {.endpoint = fake_->endpoint()});
  nlohmann::json body = {{"sku", {{"capacity", 4}}}};
  auto r = arm.Send("PATCH",
                    "/subscriptions/" + fake_->options().subscription + "/resourceGroups/" +
                        fake_->options().resource_group +
                        "/providers/Microsoft.Compute/virtualMachineScaleSets/vmss-cpu",
                    "2025-04-01", &body);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  ASSERT_TRUE(r->operation.has_value());
  EXPECT_THAT(r->operation->status_url, HasSubstr("/operations/"));
  auto done = arm.Wait(*r->operation);
  ASSERT_TRUE(done.has_value()) << done.error().message();
  EXPECT_EQ(done->state, cloud::azure::OperationResult::State::kSucceeded);
  EXPECT_EQ(fake_->CountRequests("GET", "/operations/"), 3);  // 2x InProgress, then Succeeded
  ASSERT_EQ(sleeps_.size(), 3u);
  for (Duration d : sleeps_) EXPECT_EQ(d, std::chrono::seconds(2));
  EXPECT_EQ(fake_->Capacity("vmss-cpu"), 4);
}

TEST_F(AzureArmTest, AsyncAllocationFailureBecomesStockoutAndFailedInstancesAreDeleted) {
  fake_->SetOperationPolls(1);
  fake_->FailNextScaleUp("AllocationFailed",
                         "Allocation failed. We do not have sufficient capacity for the requested "
                         "VM size in this region.");
  ASSERT_TRUE(provider_->IncreaseSize("gpu-spot", 2, clock_.Now()).has_value());
  clock_.Advance(std::chrono::seconds(2));
  auto size = RefreshOne(*provider_, "gpu-spot");
  EXPECT_TRUE(size.stockout);
  EXPECT_THAT(size.stockout_reason, HasSubstr("AllocationFailed"));
  EXPECT_EQ(size.instances, 0);
  EXPECT_EQ(size.target, 0);  // the two failed instances are being deleted
  EXPECT_EQ(fake_->CountRequests("POST", "vmss-gpu-spot/delete"), 1);
  for (const auto& id : fake_->InstanceIds("vmss-gpu-spot")) {
    EXPECT_NE(fake_->InstanceState("vmss-gpu-spot", id), "Failed") << id;
  }

  // Known stockout: the next increase is refused at once, without a write.
  int patches = fake_->CountRequests("PATCH", "");
  auto again = provider_->IncreaseSize("gpu-spot", 1, clock_.Now());
  ASSERT_FALSE(again.has_value());
  EXPECT_EQ(again.error().code(), Error::Code::kUnavailable);
  EXPECT_THAT(again.error().message(), HasSubstr("stockout"));
  EXPECT_EQ(fake_->CountRequests("PATCH", ""), patches);

  // The operation's own failure arrives at the next poll and keeps the stockout.
  clock_.Advance(std::chrono::seconds(2));
  EXPECT_TRUE(RefreshOne(*provider_, "gpu-spot").stockout);

  // The hold runs out; capacity is requested again.
  clock_.Advance(std::chrono::minutes(4));
  EXPECT_FALSE(RefreshOne(*provider_, "gpu-spot").stockout);
  EXPECT_TRUE(provider_->IncreaseSize("gpu-spot", 1, clock_.Now()).has_value());
}

TEST_F(AzureArmTest, ThrottlingServesCachedReadsAndSendsNothingUntilRetryAfter) {
  auto before = RefreshOne(*provider_, "cpu");
  fake_->ThrottleNext(1, 30);
  int sent = fake_->CountRequests("", "/subscriptions/");
  // The first throttled answer; reads come from cache for both pools.
  auto sizes = provider_->Refresh(clock_.Now());
  ASSERT_TRUE(sizes.has_value()) << sizes.error().message();
  EXPECT_EQ((*sizes)[0].target, before.target);
  EXPECT_EQ(fake_->CountRequests("", "/subscriptions/"), sent + 1);
  for (int i = 0; i < 20; ++i) {
    clock_.Advance(std::chrono::seconds(1));
    ASSERT_TRUE(provider_->Refresh(clock_.Now()).has_value());
  }
  EXPECT_EQ(fake_->CountRequests("", "/subscriptions/"), sent + 1);  // no tight loop
  auto inc = provider_->IncreaseSize("cpu", 1, clock_.Now());
  ASSERT_FALSE(inc.has_value());
  EXPECT_EQ(inc.error().code(), Error::Code::kThrottled);
  EXPECT_EQ(fake_->CountRequests("", "/subscriptions/"), sent + 1);
  ASSERT_TRUE(provider_->arm().throttled_until().has_value());

  clock_.Advance(std::chrono::seconds(10));  // past Retry-After
  EXPECT_FALSE(provider_->arm().throttled_until().has_value());
  RefreshOne(*provider_, "cpu");
  EXPECT_GT(fake_->CountRequests("", "/subscriptions/"), sent + 1);
  EXPECT_TRUE(provider_->IncreaseSize("cpu", 1, clock_.Now()).has_value());
}

TEST_F(AzureArmTest, ThrottledWithoutCacheIsAnError) {
  fake_->ThrottleNext(1, 60);
  auto r = provider_->Refresh(clock_.Now());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Error::Code::kThrottled);
  EXPECT_THAT(r.error().message(), HasSubstr("429"));
  EXPECT_THAT(r.error().message(), HasSubstr("TooManyRequests"));
}

TEST_F(AzureArmTest, ObserverSeesEveryArmRequestWithItsOperationAndStatus) {
  std::vector<std::pair<std::string, int>> seen;
  auto options = ProviderOptions();
  options.arm_observer = [&seen](const cloud::azure::ArmRequestRecord& r) {
    EXPECT_GE(r.seconds, 0);
    seen.emplace_back(std::string(r.operation), r.status);
  };
  auto p = cloud::azure::NewAzureProvider(
      VmssConfig({MakePool("cpu", 10)}, {{"scaleSets.cpu", "vmss-cpu"}}), options);
  ASSERT_TRUE(p.has_value()) << p.error().message();
  RefreshOne(**p, "cpu");
  ASSERT_TRUE((*p)->IncreaseSize("cpu", 1, clock_.Now()).has_value());
  fake_->ThrottleNext(1, 60);
  clock_.Advance(std::chrono::seconds(2));
  (void)(*p)->Refresh(clock_.Now());
  auto count = [&](std::string_view op, int status) {
    return std::count(seen.begin(), seen.end(), std::pair<std::string, int>(op, status));
  };
  EXPECT_GE(count("GET virtualMachineScaleSets", 200), 1);
  EXPECT_GE(count("GET virtualMachineScaleSets/virtualMachines", 200), 1);
  EXPECT_EQ(count("PATCH virtualMachineScaleSets", 200), 1);
  EXPECT_GE(count("GET locations/operations", 429), 1);  // the throttled poll
  int throttled = 0;
  for (const auto& [op, status] : seen) throttled += status == 429;
  EXPECT_EQ(throttled, 1);
  // Token requests are not ARM requests.
  EXPECT_EQ(static_cast<int>(seen.size()), (*p)->arm().requests_sent());
}

// ARM that accepts connections and never answers (a hung endpoint): every call fails within the
// request timeout with kUnavailable naming the request, and nothing blocks longer.
TEST_F(AzureArmTest, AHungArmEndpointTimesOutAsUnavailable) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 16), 0);  // connections queue up; nobody accepts or answers them
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  std::string hung = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  auto p = cloud::azure::NewAzureProvider(
      VmssConfig({MakePool("cpu", 10)},
                 {{"scaleSets.cpu", "vmss-cpu"}, {"armEndpoint", hung}, {"requestTimeout", "1s"}}),
      ProviderOptions());
  ASSERT_TRUE(p.has_value()) << p.error().message();
  auto started = std::chrono::steady_clock::now();
  auto sizes = (*p)->Refresh(clock_.Now());
  ASSERT_FALSE(sizes.has_value());
  EXPECT_EQ(sizes.error().code(), Error::Code::kUnavailable);
  EXPECT_THAT(sizes.error().message(), HasSubstr("virtualMachineScaleSets/vmss-cpu"));
  auto up = (*p)->IncreaseSize("cpu", 1, clock_.Now());
  ASSERT_FALSE(up.has_value());
  EXPECT_EQ(up.error().code(), Error::Code::kUnavailable);
  // Two calls, one request each at most: well under what a retry loop would take.
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
  ::close(fd);
}

TEST(AzureArmOperationNameTest, KeepsTheResourceTypesAndDropsTheNames) {
  using cloud::azure::ArmOperationName;
  const std::string rg = "/subscriptions/s/resourceGroups/rg/providers/";
  EXPECT_EQ(ArmOperationName("GET", rg + "Microsoft.Compute/virtualMachineScaleSets/ss"),
            "GET virtualMachineScaleSets");
  EXPECT_EQ(ArmOperationName("GET", rg + "Microsoft.Compute/virtualMachineScaleSets/ss/"
                                         "virtualMachines?$expand=instanceView"),
            "GET virtualMachineScaleSets/virtualMachines");
  EXPECT_EQ(ArmOperationName("POST", rg + "Microsoft.Compute/virtualMachineScaleSets/ss/delete"),
            "POST virtualMachineScaleSets/delete");
  EXPECT_EQ(ArmOperationName("GET",
                             "https://management.azure.com/subscriptions/s/providers/"
                             "Microsoft.Compute/locations/westus/operations/abc?x=1"),
            "GET locations/operations");
  EXPECT_EQ(ArmOperationName("GET", rg + "Microsoft.ContainerService/managedClusters/c/"
                                         "agentPools/gpu/machines"),
            "GET managedClusters/agentPools/machines");
  EXPECT_EQ(ArmOperationName("GET", "/subscriptions/s/resourceGroups/rg"), "GET other");
}

TEST_F(AzureArmTest, ConflictCarriesTheArmCodeAndMessage) {
  fake_->ConflictNextWrite("OperationNotAllowed",
                           "Operation 'write' is not allowed: another operation is in progress.");
  auto r = provider_->IncreaseSize("cpu", 1, clock_.Now());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Error::Code::kConflict);
  EXPECT_THAT(r.error().message(), HasSubstr("HTTP 409 OperationNotAllowed"));
  EXPECT_THAT(r.error().message(), HasSubstr("another operation is in progress"));
  EXPECT_FALSE(RefreshOne(*provider_, "cpu").stockout);  // not a capacity problem
}

TEST_F(AzureArmTest, QuotaExceededIsAStockout) {
  fake_->ConflictNextWrite("OperationNotAllowed",
                           "Operation could not be completed as it results in exceeding approved "
                           "standardNCSv3Family Cores quota.");
  auto r = provider_->IncreaseSize("gpu-spot", 1, clock_.Now());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Error::Code::kUnavailable);
  auto size = RefreshOne(*provider_, "gpu-spot");
  EXPECT_TRUE(size.stockout);
  EXPECT_THAT(size.stockout_reason, HasSubstr("quota"));
}

TEST_F(AzureArmTest, EtagMismatchIsReReadAndRetriedOnce) {
  fake_->EtagMismatchNextWrite();
  ASSERT_TRUE(provider_->IncreaseSize("cpu", 2, clock_.Now()).has_value());
  EXPECT_EQ(fake_->CountRequests("PATCH", "vmss-cpu"), 2);
  auto reqs = fake_->requests();
  int if_match = 0;
  for (const auto& r : reqs)
    if (r.method == "PATCH" && r.headers.contains("If-Match")) ++if_match;
  EXPECT_EQ(if_match, 2);
  EXPECT_EQ(fake_->Capacity("vmss-cpu"), 4);
}

TEST_F(AzureArmTest, IncreaseBeyondMaxIsRefusedWithoutAWrite) {
  auto r = provider_->IncreaseSize("cpu", 9, clock_.Now());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Error::Code::kInvalidArgument);
  EXPECT_THAT(r.error().message(), HasSubstr("max 10"));
  EXPECT_EQ(fake_->CountRequests("PATCH", ""), 0);
  auto unknown = provider_->IncreaseSize("nope", 1, clock_.Now());
  ASSERT_FALSE(unknown.has_value());
  EXPECT_EQ(unknown.error().code(), Error::Code::kNotFound);
}

TEST(AzureStockoutTest, ClassifiesArmCodes) {
  using cloud::azure::IsStockoutError;
  EXPECT_TRUE(IsStockoutError("SkuNotAvailable", "The requested size is not available"));
  EXPECT_TRUE(IsStockoutError("AllocationFailed", ""));
  EXPECT_TRUE(IsStockoutError("ZonalAllocationFailed", ""));
  EXPECT_TRUE(IsStockoutError("OverconstrainedAllocationRequest", ""));
  EXPECT_TRUE(IsStockoutError("OperationNotAllowed", "exceeding approved LowPriorityCores quota"));
  EXPECT_TRUE(IsStockoutError("ReconcileVMSSAgentPoolFailed",
                              "Code=\"AllocationFailed\" Message=\"Allocation failed\""));
  EXPECT_FALSE(IsStockoutError("OperationNotAllowed", "another operation is in progress"));
  EXPECT_FALSE(IsStockoutError("VMExtensionProvisioningError", "extension failed"));
  EXPECT_FALSE(IsStockoutError("InvalidParameter", ""));
}

}  // namespace
}  // namespace tidepool::testing::azure
