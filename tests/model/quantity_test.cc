#include "model/quantity.h"

#include <gtest/gtest.h>

namespace tidepool::model {
namespace {

Quantity Q(std::string_view s) {
  auto q = Quantity::Parse(s);
  EXPECT_TRUE(q) << s << ": " << (q ? "" : q.error().message());
  return q ? *q : Quantity();
}

TEST(Quantity, DecimalSuffixes) {
  EXPECT_EQ(Q("500m").MilliValue(), 500);
  EXPECT_EQ(Q("2").MilliValue(), 2000);
  EXPECT_EQ(Q("1k").Value(), 1000);
  EXPECT_EQ(Q("3M").Value(), 3'000'000);
  EXPECT_EQ(Q("1G").Value(), 1'000'000'000);
  EXPECT_EQ(Q("2T").Value(), 2'000'000'000'000);
  EXPECT_EQ(Q("1P").Value(), 1'000'000'000'000'000);
  EXPECT_EQ(Q("1E").Value(), 1'000'000'000'000'000'000);
  EXPECT_EQ(Q("5n").nanos(), 5);
  EXPECT_EQ(Q("5u").nanos(), 5000);
}

TEST(Quantity, BinarySuffixes) {
  EXPECT_EQ(Q("1Ki").Value(), 1024);
  EXPECT_EQ(Q("1Mi").Value(), 1 << 20);
  EXPECT_EQ(Q("1Gi").Value(), int64_t{1} << 30);
  EXPECT_EQ(Q("16Ti").Value(), int64_t{16} << 40);
  EXPECT_EQ(Q("1Pi").Value(), int64_t{1} << 50);
  EXPECT_EQ(Q("1Ei").Value(), int64_t{1} << 60);
}

TEST(Quantity, OneGiIsNotOneG) {
  EXPECT_NE(Q("1Gi"), Q("1G"));
  EXPECT_GT(Q("1Gi"), Q("1G"));
  EXPECT_EQ(Q("1Gi"), Q("1073741824"));
}

TEST(Quantity, Exponents) {
  EXPECT_EQ(Q("1e3").Value(), 1000);
  EXPECT_EQ(Q("1E3").Value(), 1000);
  EXPECT_EQ(Q("1E-3").MilliValue(), 1);
  EXPECT_EQ(Q("1e+2").Value(), 100);
  EXPECT_EQ(Q("1e3").format(), Quantity::Format::kDecimalExponent);
}

TEST(Quantity, FractionsAndSigns) {
  EXPECT_EQ(Q("0.1").MilliValue(), 100);
  EXPECT_EQ(Q(".5").MilliValue(), 500);
  EXPECT_EQ(Q("1.5Gi").Value(), int64_t{3} << 29);
  EXPECT_EQ(Q("-1").MilliValue(), -1000);
  EXPECT_EQ(Q("+1").MilliValue(), 1000);
  EXPECT_EQ(Q("1.").Value(), 1);
}

TEST(Quantity, ExactArithmetic) {
  Quantity sum = Q("0.1") + Q("0.2");
  EXPECT_EQ(sum.ToString(), "300m");
  EXPECT_EQ(sum, Q("300m"));
  EXPECT_EQ((Q("1") - Q("0.9")).ToString(), "100m");
  Quantity tenth_ten_times;
  for (int i = 0; i < 10; ++i) tenth_ten_times += Q("0.1");
  EXPECT_EQ(tenth_ten_times, Q("1"));
}

TEST(Quantity, RoundsUpBelowNano) {
  EXPECT_EQ(Q("0.0000000001").nanos(), 1);
  EXPECT_EQ(Q("1.5n").nanos(), 2);
  EXPECT_EQ(Q("-1.5n").nanos(), -2);
  // MilliValue and Value round up like the scheduler reads them.
  EXPECT_EQ(Q("1.5m").MilliValue(), 2);
  EXPECT_EQ(Q("100m").Value(), 1);
}

TEST(Quantity, CanonicalForm) {
  EXPECT_EQ(Q("1.5").ToString(), "1500m");
  EXPECT_EQ(Q("1.5Gi").ToString(), "1536Mi");
  EXPECT_EQ(Q("1000").ToString(), "1k");
  EXPECT_EQ(Q("1500").ToString(), "1500");
  EXPECT_EQ(Q("2048Ki").ToString(), "2Mi");
  EXPECT_EQ(Q("1000Ki").ToString(), "1000Ki");
  EXPECT_EQ(Q("1e3").ToString(), "1e3");
  EXPECT_EQ(Q("0.1m").ToString(), "100u");
  EXPECT_EQ(Q("0").ToString(), "0");
  EXPECT_EQ(Q("-2Gi").ToString(), "-2Gi");
  // BinarySI below 1024 or fractional prints as DecimalSI.
  EXPECT_EQ(Q("0.5Ki").ToString(), "512");
  EXPECT_EQ(Q("100m").ToString(), "100m");
  EXPECT_EQ(Quantity::FromUnits(1536, Quantity::Format::kBinarySI).ToString(), "1536");
}

TEST(Quantity, RejectsGarbageQuotingTheInput) {
  for (const char* bad : {"", "lots", "1K", "1.2.3", "1 Gi", " 1", "1e", "1ee3", "Gi", "--1",
                          "1Gib", "0x10", "1,5"}) {
    auto q = Quantity::Parse(bad);
    ASSERT_FALSE(q) << "accepted \"" << bad << "\"";
    EXPECT_NE(q.error().message().find(std::string("\"") + bad + "\""), std::string::npos)
        << q.error().message();
  }
}

TEST(Quantity, RejectsOverflow) {
  EXPECT_TRUE(Quantity::Parse("9223372036854775807"));
  EXPECT_FALSE(Quantity::Parse("9223372036854775808"));
  EXPECT_FALSE(Quantity::Parse("9Ei"));
  EXPECT_TRUE(Quantity::Parse("7Ei"));
  EXPECT_FALSE(Quantity::Parse("1e30"));
  EXPECT_FALSE(Quantity::Parse("123456789012345678901234567890123456789012"));
  auto q = Quantity::Parse("99999999999999999999");
  ASSERT_FALSE(q);
  EXPECT_NE(q.error().message().find("too large"), std::string::npos);
}

TEST(Quantity, ComparesAcrossFormats) {
  EXPECT_EQ(Q("1k"), Q("1e3"));
  EXPECT_EQ(Q("1000m"), Q("1"));
  EXPECT_LT(Q("999m"), Q("1"));
  EXPECT_GT(Q("1Ki"), Q("1k"));
}

}  // namespace
}  // namespace tidepool::model
