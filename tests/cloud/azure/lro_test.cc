// The long-running-operation follower (lro.h): operations from an accepted write's headers, what
// a poll's answer means (pure), and one following step against FakeArm's operation resources.
#include "cloud/azure/lro.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "cloud/azure/arm.h"
#include "tests/cloud/azure/azure_fixture.h"

namespace tidepool::testing::azure {
namespace {

using cloud::azure::AcceptedWrite;
using cloud::azure::ArmResponse;
using cloud::azure::LroStep;
using cloud::azure::Operation;
using cloud::azure::OperationResult;
using ::testing::HasSubstr;
using State = cloud::azure::OperationResult::State;

const Time kNow = At("2026-11-22T00:00:00Z");

// --- OperationOf.

TEST(OperationOfTest, AzureAsyncOperationIsFollowedWhateverTheStatus) {
  auto op = cloud::azure::OperationOf({.what = "PATCH /x",
                                       .status = 200,
                                       .async_url = "https://arm/operations/1",
                                       .location_url = "https://arm/results/1",
                                       .now = kNow,
                                       .first_poll = std::chrono::seconds(7),
                                       .timeout = std::chrono::minutes(30)});
  ASSERT_TRUE(op.has_value());
  EXPECT_EQ(op->what, "PATCH /x");
  EXPECT_EQ(op->status_url, "https://arm/operations/1");
  EXPECT_EQ(op->location_url, "https://arm/results/1");
  EXPECT_EQ(op->started, kNow);
  EXPECT_EQ(op->next_poll, At("2026-11-22T00:00:07Z"));
  EXPECT_EQ(op->deadline, At("2026-11-22T00:30:00Z"));
}

TEST(OperationOfTest, LocationCountsOnlyOn201And202) {
  AcceptedWrite w{
      .what = "DELETE /x", .status = 202, .location_url = "https://arm/results/2", .now = kNow};
  auto accepted = cloud::azure::OperationOf(w);
  ASSERT_TRUE(accepted.has_value());
  EXPECT_EQ(accepted->status_url, "");
  EXPECT_EQ(accepted->location_url, "https://arm/results/2");
  w.status = 201;
  EXPECT_TRUE(cloud::azure::OperationOf(w).has_value());
  w.status = 200;  // a Location on a 200 is not an operation
  EXPECT_FALSE(cloud::azure::OperationOf(w).has_value());
}

TEST(OperationOfTest, NoHeadersIsASynchronousWrite) {
  EXPECT_FALSE(cloud::azure::OperationOf({.what = "PUT /x", .status = 202, .now = kNow}));
}

// --- OperationResultOf.

ArmResponse Answer(int status, nlohmann::json body = nullptr) {
  ArmResponse r;
  r.status = status;
  r.method = "GET";
  r.path = "/operations/1";
  cloud::azure::ParseArmError(body, r.error_code, r.error_message);
  r.body = std::move(body);
  return r;
}

Operation StatusStyle() { return {.what = "PATCH /vmss", .status_url = "https://arm/op/1"}; }
Operation LocationStyle() { return {.what = "DELETE /vm", .location_url = "https://arm/res/1"}; }

TEST(OperationResultOfTest, StatusStyleReadsTheStatusField) {
  auto done =
      cloud::azure::OperationResultOf(Answer(200, {{"status", "succeeded"}}), StatusStyle());
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->state, State::kSucceeded);

  auto running =
      cloud::azure::OperationResultOf(Answer(200, {{"status", "InProgress"}}), StatusStyle());
  ASSERT_TRUE(running.has_value());
  EXPECT_EQ(running->state, State::kInProgress);
  EXPECT_FALSE(running->done());

  // No status at all: still in progress, not an error.
  auto empty = cloud::azure::OperationResultOf(Answer(200), StatusStyle());
  ASSERT_TRUE(empty.has_value());
  EXPECT_EQ(empty->state, State::kInProgress);
}

TEST(OperationResultOfTest, StatusStyleFailureCarriesTheArmError) {
  nlohmann::json body = {
      {"status", "Failed"},
      {"error", {{"code", "AllocationFailed"}, {"message", "no Standard_NC6s_v3 here"}}}};
  auto failed = cloud::azure::OperationResultOf(Answer(200, body), StatusStyle());
  ASSERT_TRUE(failed.has_value());
  EXPECT_EQ(failed->state, State::kFailed);
  EXPECT_EQ(failed->code, "AllocationFailed");
  EXPECT_EQ(failed->message, "no Standard_NC6s_v3 here");

  for (const char* spelling : {"Canceled", "Cancelled"}) {
    auto canceled =
        cloud::azure::OperationResultOf(Answer(200, {{"status", spelling}}), StatusStyle());
    ASSERT_TRUE(canceled.has_value());
    EXPECT_EQ(canceled->state, State::kCanceled) << spelling;
  }
}

TEST(OperationResultOfTest, ANon2xxStatusAnswerIsTheOutcomeBelow500) {
  nlohmann::json body = {{"error", {{"code", "NotFound"}, {"message", "gone"}}}};
  auto failed = cloud::azure::OperationResultOf(Answer(404, body), StatusStyle());
  ASSERT_TRUE(failed.has_value());
  EXPECT_EQ(failed->state, State::kFailed);
  EXPECT_EQ(failed->code, "NotFound");

  auto error = cloud::azure::OperationResultOf(Answer(503), StatusStyle());
  ASSERT_FALSE(error.has_value());
  EXPECT_EQ(error.error().code(), Error::Code::kUnavailable);
  EXPECT_THAT(error.error().message(), HasSubstr("polling PATCH /vmss: ARM GET /operations/1"));
}

TEST(OperationResultOfTest, LocationStyleReadsTheHttpStatus) {
  auto running = cloud::azure::OperationResultOf(Answer(202), LocationStyle());
  ASSERT_TRUE(running.has_value());
  EXPECT_EQ(running->state, State::kInProgress);
  for (int status : {200, 201, 204}) {
    auto done = cloud::azure::OperationResultOf(Answer(status), LocationStyle());
    ASSERT_TRUE(done.has_value());
    EXPECT_EQ(done->state, State::kSucceeded) << status;
  }
  auto failed = cloud::azure::OperationResultOf(
      Answer(409, {{"error", {{"code", "Conflict"}, {"message", "in use"}}}}), LocationStyle());
  ASSERT_TRUE(failed.has_value());
  EXPECT_EQ(failed->state, State::kFailed);
  EXPECT_EQ(failed->message, "in use");
  EXPECT_FALSE(cloud::azure::OperationResultOf(Answer(500), LocationStyle()).has_value());
}

// --- FollowOperation against FakeArm.

class FollowOperationTest : public AzureTestBase {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(AzureTestBase::SetUp());
    fake_->AddScaleSet({.name = "vmss-cpu", .sku = "Standard_D2_v2", .capacity = 1});
    auto tokens = cloud::azure::MakeTokenSource(FakeAuth(), &http_, &clock_, ProviderOptions().env);
    ASSERT_TRUE(tokens.has_value()) << tokens.error().message();
    tokens_ = std::move(*tokens);
    arm_ = std::make_unique<cloud::azure::ArmClient>(
        &http_, tokens_.get(), &clock_, ProviderOptions().sleep,
        cloud::azure::ArmOptions{.endpoint = fake_->endpoint()});
  }

  // PATCHes the scale set's capacity and returns the operation ARM started.
  Operation Scale(int capacity) {
    nlohmann::json body = {{"sku", {{"capacity", capacity}}}};
    auto r = arm_->Send("PATCH",
                        "/subscriptions/" + fake_->options().subscription + "/resourceGroups/" +
                            fake_->options().resource_group +
                            "/providers/Microsoft.Compute/virtualMachineScaleSets/vmss-cpu",
                        "2025-04-01", &body);
    EXPECT_TRUE(r.has_value()) << r.error().message();
    EXPECT_TRUE(r && r->operation.has_value());
    return r && r->operation ? *r->operation : Operation{};
  }

  net::HttpClient http_;
  std::unique_ptr<cloud::azure::TokenSource> tokens_;
  std::unique_ptr<cloud::azure::ArmClient> arm_;
};

TEST_F(FollowOperationTest, PollsOnlyWhenDueThenReportsTheOutcome) {
  fake_->SetOperationPolls(1);
  Operation op = Scale(3);
  // Retry-After is 2s: nothing is sent before then.
  LroStep early = cloud::azure::FollowOperation(*arm_, op, clock_.Now());
  EXPECT_EQ(early.kind, LroStep::Kind::kWaiting);
  EXPECT_EQ(fake_->CountRequests("GET", "/operations/"), 0);

  clock_.Advance(std::chrono::seconds(2));
  LroStep running = cloud::azure::FollowOperation(*arm_, op, clock_.Now());
  EXPECT_EQ(running.kind, LroStep::Kind::kWaiting);
  EXPECT_EQ(fake_->CountRequests("GET", "/operations/"), 1);
  EXPECT_EQ(op.next_poll, clock_.Now() + std::chrono::seconds(2));

  clock_.Advance(std::chrono::seconds(2));
  LroStep done = cloud::azure::FollowOperation(*arm_, op, clock_.Now());
  ASSERT_EQ(done.kind, LroStep::Kind::kDone);
  EXPECT_EQ(done.result.state, State::kSucceeded);
  EXPECT_EQ(fake_->CountRequests("GET", "/operations/"), 2);
}

TEST_F(FollowOperationTest, AFailedOperationCarriesArmsCodeAndMessage) {
  fake_->FailNextScaleUp("ZonalAllocationFailed", "no capacity in zone 2");
  Operation op = Scale(2);
  clock_.Advance(std::chrono::seconds(2));
  LroStep done = cloud::azure::FollowOperation(*arm_, op, clock_.Now());
  ASSERT_EQ(done.kind, LroStep::Kind::kDone);
  EXPECT_EQ(done.result.state, State::kFailed);
  EXPECT_EQ(done.result.code, "ZonalAllocationFailed");
  EXPECT_EQ(done.result.message, "no capacity in zone 2");
}

TEST_F(FollowOperationTest, PastTheDeadlineNothingIsSent) {
  fake_->SetOperationPolls(5);
  Operation op = Scale(2);
  clock_.Advance(std::chrono::minutes(30));
  LroStep step = cloud::azure::FollowOperation(*arm_, op, clock_.Now());
  EXPECT_EQ(step.kind, LroStep::Kind::kTimedOut);
  EXPECT_EQ(fake_->CountRequests("GET", "/operations/"), 0);
}

TEST_F(FollowOperationTest, AThrottledPollIsAnErrorAndTheOperationStaysPending) {
  fake_->SetOperationPolls(1);
  Operation op = Scale(2);
  clock_.Advance(std::chrono::seconds(2));
  fake_->ThrottleNext(1, 60);
  LroStep step = cloud::azure::FollowOperation(*arm_, op, clock_.Now());
  ASSERT_EQ(step.kind, LroStep::Kind::kPollFailed);
  ASSERT_TRUE(step.error.has_value());
  EXPECT_EQ(step.error->code(), Error::Code::kThrottled);
  EXPECT_THAT(step.error->message(), HasSubstr("polling PATCH "));
  EXPECT_EQ(op.next_poll, clock_.Now() + std::chrono::seconds(60));
}

}  // namespace
}  // namespace tidepool::testing::azure
