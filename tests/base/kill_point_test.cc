#include "base/kill_point.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>

namespace tidepool {
namespace {

TEST(KillPointTest, ParsesANameAndAVisitCount) {
  auto first = ParseKillPlan("kwok-saved");
  ASSERT_TRUE(first) << first.error().message();
  EXPECT_EQ(first->point, KillPoint::kKwokSaved);
  EXPECT_EQ(first->nth, 1);

  auto second = ParseKillPlan("kwok-node-created:2");
  ASSERT_TRUE(second) << second.error().message();
  EXPECT_EQ(second->point, KillPoint::kKwokNodeCreated);
  EXPECT_EQ(second->nth, 2);
}

TEST(KillPointTest, EveryNameParsesToItsOwnPoint) {
  for (size_t i = 0; i < kKillPointNames.size(); ++i) {
    auto plan = ParseKillPlan(kKillPointNames[i]);
    ASSERT_TRUE(plan) << kKillPointNames[i];
    EXPECT_EQ(static_cast<size_t>(plan->point), i);
  }
}

TEST(KillPointTest, BadValuesNameWhatWasExpected) {
  auto unknown = ParseKillPlan("kwok-saev");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code(), Error::Code::kInvalidArgument);
  EXPECT_NE(unknown.error().message().find("unknown kill point 'kwok-saev'"), std::string::npos);
  EXPECT_NE(unknown.error().message().find("kwok-node-created"), std::string::npos);

  for (const char* bad : {"kwok-saved:", "kwok-saved:0", "kwok-saved:x", "kwok-saved:2x"}) {
    auto r = ParseKillPlan(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message().find("positive count"), std::string::npos) << bad;
  }
}

TEST(KillPointDeathTest, TheArmedPointKillsAtItsNthVisit) {
  EXPECT_EXIT(
      {
        setenv("TIDEPOOL_KILL_AT", "node-tainted:2", 1);
        if (!ArmKillPointFromEnv()) std::exit(3);
        ReachKillPoint(KillPoint::kKwokSaved);    // another point: nothing
        ReachKillPoint(KillPoint::kNodeTainted);  // first visit: nothing
        ReachKillPoint(KillPoint::kNodeTainted);  // second: SIGKILL
        std::exit(0);
      },
      testing::KilledBySignal(SIGKILL), "kill point node-tainted reached \\(visit 2\\)");
}

}  // namespace
}  // namespace tidepool
