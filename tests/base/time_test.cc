#include "base/time.h"

#include <gtest/gtest.h>

namespace tidepool {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

TEST(ParseDuration, GoSyntax) {
  EXPECT_EQ(*ParseDuration("10m"), minutes(10));
  EXPECT_EQ(*ParseDuration("1h30m"), minutes(90));
  EXPECT_EQ(*ParseDuration("1.5s"), Duration(1500));
  EXPECT_EQ(*ParseDuration("500ms"), Duration(500));
  EXPECT_EQ(*ParseDuration("0"), Duration(0));
  EXPECT_EQ(*ParseDuration("-2s"), seconds(-2));
}

TEST(ParseDuration, RejectsMalformedWithTheInput) {
  for (const char* bad : {"", "10", "5 minutes", "1x", "h", "1.2.3s"}) {
    auto d = ParseDuration(bad);
    ASSERT_FALSE(d) << bad;
    EXPECT_NE(d.error().message().find(std::string("\"") + bad + "\""), std::string::npos)
        << d.error().message();
  }
}

TEST(FormatDuration, RoundTrips) {
  for (const char* s : {"1h30m", "45s", "250ms", "0s", "2h", "1m1.5s"}) {
    EXPECT_EQ(FormatDuration(*ParseDuration(s)), s);
  }
}

TEST(Rfc3339, ParsesAndFormats) {
  auto t = ParseRfc3339("2026-11-22T01:40:05Z");
  ASSERT_TRUE(t);
  EXPECT_EQ(FormatRfc3339(*t), "2026-11-22T01:40:05Z");
  auto offset = ParseRfc3339("2026-11-22T03:40:05+02:00");
  ASSERT_TRUE(offset);
  EXPECT_EQ(*offset, *t);
  auto frac = ParseRfc3339("2026-11-22T01:40:05.250Z");
  ASSERT_TRUE(frac);
  EXPECT_EQ(*frac - *t, Duration(250));
  EXPECT_EQ(FormatRfc3339(*frac), "2026-11-22T01:40:05.250Z");
}

TEST(Rfc3339, RejectsMalformed) {
  for (const char* bad : {"", "2026-11-22", "2026-13-01T00:00:00Z", "2026-11-22T01:40:05",
                          "2026-02-30T00:00:00Z", "yesterday"}) {
    EXPECT_FALSE(ParseRfc3339(bad)) << bad;
  }
}

TEST(ManualClock, MovesOnlyWhenTold) {
  ManualClock clock(Time(hours(1)));
  EXPECT_EQ(clock.Now(), Time(hours(1)));
  clock.Advance(seconds(5));
  EXPECT_EQ(clock.Now(), Time(hours(1) + seconds(5)));
}

}  // namespace
}  // namespace tidepool
