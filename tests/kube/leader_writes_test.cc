#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/time.h"
#include "kube/client/leader.h"
#include "kube/client/writes.h"

namespace tidepool::kube {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

Time At(std::string_view rfc3339) { return *ParseRfc3339(rfc3339); }

TEST(LeaderElectionConfigTest, Validation) {
  LeaderElectionConfig c{.identity = "a"};
  EXPECT_TRUE(ValidateLeaderElectionConfig(c));
  c.identity = "";
  auto r = ValidateLeaderElectionConfig(c);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message(), HasSubstr("identity"));
  c = LeaderElectionConfig{.identity = "a", .renew_deadline = seconds(15)};
  r = ValidateLeaderElectionConfig(c);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message(),
              HasSubstr("leaseDuration (15s) must be greater than renewDeadline (15s)"));
  c.renew_deadline = seconds(2);
  r = ValidateLeaderElectionConfig(c);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message(),
              HasSubstr("renewDeadline (2s) must be greater than retryPeriod"));
}

TEST(LeaderElectionConfigTest, MicroTimeHasSixFractionDigits) {
  EXPECT_EQ(FormatMicroTime(At("2026-11-22T01:40:05Z")), "2026-11-22T01:40:05.000000Z");
  EXPECT_EQ(FormatMicroTime(At("2026-11-22T01:40:05Z") + milliseconds(7)),
            "2026-11-22T01:40:05.007000Z");
}

TEST(WritesTest, TaintTimestampIsUnixSeconds) {
  EXPECT_EQ(TaintTimestamp(At("2026-11-22T01:40:05Z") + milliseconds(999)), "1795311605");
  EXPECT_EQ(kToBeDeletedTaint, "ToBeDeletedByClusterAutoscaler");
  EXPECT_EQ(kDeletionCandidateTaint, "DeletionCandidateOfClusterAutoscaler");
}

}  // namespace
}  // namespace tidepool::kube
