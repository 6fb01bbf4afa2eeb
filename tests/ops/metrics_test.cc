#include "ops/metrics.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "tests/ops/exposition_parser.h"

namespace tidepool::ops {
namespace {

using testing::ParseExposition;

TEST(ExpositionParserTest, RejectsWhatTheFormatForbids) {
  // The parser itself must be strict, or the tests below prove nothing.
  EXPECT_NE(ParseExposition("a 1").error, "");                       // no final newline
  EXPECT_NE(ParseExposition("a{x=\"\\t\"} 1\n").error, "");          // bad escape
  EXPECT_NE(ParseExposition("a{x=\"1\",x=\"2\"} 1\n").error, "");    // duplicate label
  EXPECT_NE(ParseExposition("a{x=1} 1\n").error, "");                // unquoted
  EXPECT_NE(ParseExposition("a 1\nb 2\na 3\n").error, "");           // interleaved
  EXPECT_NE(ParseExposition("# TYPE a counter\na -1\n").error, "");  // negative counter
  EXPECT_NE(ParseExposition("a 1\n# TYPE a gauge\n").error, "");     // TYPE after sample
  EXPECT_NE(ParseExposition("# TYPE h histogram\nh_bucket{le=\"1\"} 2\n"
                            "h_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n")
                .error,
            "");  // not cumulative
  EXPECT_NE(ParseExposition("# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n").error,
            "");                                            // no +Inf
  EXPECT_NE(ParseExposition("# HELP a x\\y\n").error, "");  // bad HELP escape
  EXPECT_NE(ParseExposition("a one\n").error, "");
  EXPECT_EQ(ParseExposition("# HELP a h\n# TYPE a gauge\na{b=\"c\"} 1.5\n").error, "");
}

TEST(MetricsTest, RendersHelpTypeAndSamplesInStableOrder) {
  Registry r;
  Counter* c = r.AddCounter("zz_requests_total", "Requests.", {"code", "verb"});
  Gauge* g = r.AddGauge("aa_temperature_celsius", "Temperature.");
  c->Inc({"500", "get"});
  c->Inc({"200", "list"}, 2);
  c->Inc({"200", "get"}, 3);
  g->Set({}, 21.5);

  std::string text = r.Render();
  EXPECT_EQ(text,
            "# HELP aa_temperature_celsius Temperature.\n"
            "# TYPE aa_temperature_celsius gauge\n"
            "aa_temperature_celsius 21.5\n"
            "# HELP zz_requests_total Requests.\n"
            "# TYPE zz_requests_total counter\n"
            "zz_requests_total{code=\"200\",verb=\"get\"} 3\n"
            "zz_requests_total{code=\"200\",verb=\"list\"} 2\n"
            "zz_requests_total{code=\"500\",verb=\"get\"} 1\n");
  EXPECT_EQ(text, r.Render());  // stable
  EXPECT_EQ(ParseExposition(text).error, "");
}

TEST(MetricsTest, EscapesLabelValuesAndHelpAndTheyRoundTrip) {
  Registry r;
  Gauge* g = r.AddGauge("tricky", "Help with a \\ backslash\nand a newline \"quoted\".", {"v"});
  const std::vector<std::string> values = {"back\\slash",       "double\"quote",       "new\nline",
                                           "all three: \\\"\n", "ünïcödé ✓",           "",
                                           "{curly},=comma",    "trailing backslash\\"};
  for (size_t i = 0; i < values.size(); ++i) g->Set({values[i]}, static_cast<double>(i));

  std::string text = r.Render();
  EXPECT_NE(text.find("tricky{v=\"back\\\\slash\"} 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("tricky{v=\"double\\\"quote\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("tricky{v=\"new\\nline\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# HELP tricky Help with a \\\\ backslash\\nand a newline \"quoted\".\n"),
            std::string::npos)
      << text;

  auto parsed = ParseExposition(text);
  ASSERT_EQ(parsed.error, "") << text;
  const auto* f = parsed.Find("tricky");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->help, "Help with a \\ backslash\nand a newline \"quoted\".");
  ASSERT_EQ(f->samples.size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(parsed.Value("tricky", {{"v", values[i]}}), static_cast<double>(i)) << values[i];
  }
}

TEST(MetricsTest, ValuesRoundTripExactly) {
  Registry r;
  Gauge* g = r.AddGauge("v", "Values.", {"i"});
  const std::vector<double> values = {0,
                                      1,
                                      -2.5,
                                      0.1,
                                      1e-9,
                                      1e300,
                                      123456789.123456789,
                                      1.0 / 3,
                                      -0.0,
                                      std::numeric_limits<double>::max(),
                                      std::numeric_limits<double>::denorm_min(),
                                      std::numeric_limits<double>::infinity(),
                                      -std::numeric_limits<double>::infinity(),
                                      9007199254740993.0};
  for (size_t i = 0; i < values.size(); ++i) g->Set({std::to_string(i)}, values[i]);
  g->Set({"nan"}, std::nan(""));

  auto parsed = ParseExposition(r.Render());
  ASSERT_EQ(parsed.error, "");
  for (size_t i = 0; i < values.size(); ++i) {
    auto v = parsed.Value("v", {{"i", std::to_string(i)}});
    ASSERT_TRUE(v.has_value()) << i;
    EXPECT_EQ(*v, values[i]) << i;  // bit-exact through the text
  }
  auto nan = parsed.Value("v", {{"i", "nan"}});
  ASSERT_TRUE(nan.has_value());
  EXPECT_TRUE(std::isnan(*nan));
  EXPECT_EQ(FormatValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatValue(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(FormatValue(3), "3");
  EXPECT_EQ(FormatValue(0.25), "0.25");
}

TEST(MetricsTest, HistogramBucketsAreCumulativeWithInfSumAndCount) {
  Registry r;
  Histogram* h = r.AddHistogram("op_duration_seconds", "Durations.", {"op"}, {0.1, 0.5, 1, 2.5});
  for (double v : {0.05, 0.1, 0.2, 0.7, 3.0, 10.0}) h->Observe({"a"}, v);
  h->Observe({"b"}, 0.3);

  std::string text = r.Render();
  EXPECT_NE(text.find("# TYPE op_duration_seconds histogram\n"), std::string::npos);
  EXPECT_NE(text.find("op_duration_seconds_bucket{op=\"a\",le=\"0.1\"} 2\n"), std::string::npos)
      << "0.1 falls into le=0.1 (upper bounds are inclusive)\n"
      << text;
  auto parsed = ParseExposition(text);
  ASSERT_EQ(parsed.error, "") << text;
  EXPECT_EQ(parsed.Value("op_duration_seconds_bucket", {{"op", "a"}, {"le", "0.5"}}), 3);
  EXPECT_EQ(parsed.Value("op_duration_seconds_bucket", {{"op", "a"}, {"le", "1"}}), 4);
  EXPECT_EQ(parsed.Value("op_duration_seconds_bucket", {{"op", "a"}, {"le", "2.5"}}), 4);
  EXPECT_EQ(parsed.Value("op_duration_seconds_bucket", {{"op", "a"}, {"le", "+Inf"}}), 6);
  EXPECT_EQ(parsed.Value("op_duration_seconds_count", {{"op", "a"}}), 6);
  EXPECT_DOUBLE_EQ(*parsed.Value("op_duration_seconds_sum", {{"op", "a"}}), 14.05);
  EXPECT_EQ(parsed.Value("op_duration_seconds_bucket", {{"op", "b"}, {"le", "0.1"}}), 0);
  EXPECT_EQ(parsed.Value("op_duration_seconds_count", {{"op", "b"}}), 1);
  EXPECT_EQ(h->Count({"a"}), 6u);

  // An unlabelled histogram shows its zero series before any observation.
  Registry r2;
  r2.AddHistogram("empty_seconds", "Nothing yet.", {}, {1});
  auto p2 = ParseExposition(r2.Render());
  ASSERT_EQ(p2.error, "");
  EXPECT_EQ(p2.Value("empty_seconds_bucket", {{"le", "+Inf"}}), 0);
  EXPECT_EQ(p2.Value("empty_seconds_count"), 0);
}

TEST(MetricsTest, CountersIgnoreNegativeAndNanDeltas) {
  Registry r;
  Counter* c = r.AddCounter("c_total", "C.");
  c->Inc();
  c->Inc({}, -5);
  c->Inc({}, std::nan(""));
  c->Inc({}, 0.5);
  EXPECT_EQ(c->Value(), 1.5);
  EXPECT_EQ(ParseExposition(r.Render()).Value("c_total"), 1.5);
}

TEST(MetricsTest, GaugeReplaceDropsVanishedSeries) {
  Registry r;
  Gauge* g = r.AddGauge("pool_nodes", "Nodes.", {"pool"});
  g->Set({"a"}, 1);
  g->Set({"b"}, 2);
  g->Replace({{{"b"}, 3}, {{"c"}, 4}});
  auto parsed = ParseExposition(r.Render());
  ASSERT_EQ(parsed.error, "");
  EXPECT_FALSE(parsed.Value("pool_nodes", {{"pool", "a"}}).has_value());
  EXPECT_EQ(parsed.Value("pool_nodes", {{"pool", "b"}}), 3);
  EXPECT_EQ(parsed.Value("pool_nodes", {{"pool", "c"}}), 4);
  g->Remove({"b"});
  g->Add({"c"}, -1);
  EXPECT_EQ(g->SeriesCount(), 1u);
  EXPECT_EQ(g->Value({"c"}), 3);
  g->Clear();
  EXPECT_EQ(g->SeriesCount(), 0u);
  // A labelled family without series still has HELP and TYPE, and parses.
  std::string text = r.Render();
  EXPECT_EQ(text, "# HELP pool_nodes Nodes.\n# TYPE pool_nodes gauge\n");
  EXPECT_EQ(ParseExposition(text).error, "");
}

TEST(MetricsTest, CallbackGaugesAreComputedAtScrapeTime) {
  Registry r;
  std::atomic<int> calls = 0;
  r.AddCallbackGauge("informer_objects", "Objects per informer.", {"resource"},
                     [&]() -> CallbackGauge::Samples {
                       ++calls;
                       return {{{"pods"}, 10.0 * calls}, {{"nodes"}, 3}, {{"too", "many"}, 1}};
                     });
  r.AddCallbackGauge("seconds_since_step", "Age.", [&] { return 42.0; });
  EXPECT_EQ(calls, 0);
  auto p1 = ParseExposition(r.Render());
  ASSERT_EQ(p1.error, "");
  EXPECT_EQ(p1.Value("informer_objects", {{"resource", "pods"}}), 10);
  EXPECT_EQ(p1.Value("informer_objects", {{"resource", "nodes"}}), 3);
  EXPECT_EQ(p1.Find("informer_objects")->samples.size(), 2u);  // wrong arity left out
  EXPECT_EQ(p1.Find("informer_objects")->type, "gauge");
  EXPECT_EQ(p1.Value("seconds_since_step"), 42);
  auto p2 = ParseExposition(r.Render());
  EXPECT_EQ(p2.Value("informer_objects", {{"resource", "pods"}}), 20);
}

TEST(MetricsTest, ConcurrentUpdatesWhileRenderingLoseNothing) {
  Registry r;
  Counter* c = r.AddCounter("ops_total", "Ops.", {"thread"});
  Histogram* h = r.AddHistogram("lat_seconds", "Latency.", {}, {0.5});
  Gauge* g = r.AddGauge("g", "G.", {"k"});
  constexpr int kThreads = 4;
  constexpr int kPerThread = 5000;
  std::atomic<bool> done = false;
  std::thread scraper([&] {
    while (!done) {
      auto parsed = ParseExposition(r.Render());
      ASSERT_EQ(parsed.error, "");
    }
  });
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        c->Inc({std::to_string(t % 2)});
        h->Observe({}, i % 2 ? 0.25 : 1.0);
        g->Replace({{{std::to_string(i % 3)}, 1.0}});
      }
    });
  }
  for (auto& w : workers) w.join();
  done = true;
  scraper.join();
  EXPECT_EQ(c->Value({"0"}) + c->Value({"1"}), kThreads * kPerThread);
  auto parsed = ParseExposition(r.Render());
  ASSERT_EQ(parsed.error, "");
  EXPECT_EQ(parsed.Value("lat_seconds_count"), kThreads * kPerThread);
  EXPECT_EQ(parsed.Value("lat_seconds_bucket", {{"le", "0.5"}}), kThreads * kPerThread / 2);
  EXPECT_EQ(g->SeriesCount(), 1u);
}

TEST(MetricsTest, ExponentialBuckets) {
  EXPECT_EQ(ExponentialBuckets(0.5, 2, 4), (std::vector<double>{0.5, 1, 2, 4}));
}

using MetricsDeathTest = ::testing::Test;

TEST(MetricsDeathTest, RegistrationBugsAbort) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        Registry r;
        r.AddCounter("dup_total", "a");
        r.AddGauge("dup_total", "b");
      },
      "registered already");
  EXPECT_DEATH({ Registry().AddGauge("bad-name", "x"); }, "invalid metric name");
  EXPECT_DEATH({ Registry().AddGauge("g", "x", {"__reserved"}); }, "invalid label name");
  EXPECT_DEATH({ Registry().AddGauge("g", "x", {"a", "a"}); }, "duplicate label name");
  EXPECT_DEATH({ Registry().AddHistogram("h", "x", {"le"}, {1}); }, "le");
  EXPECT_DEATH({ Registry().AddHistogram("h", "x", {}, {2, 1}); }, "strictly increasing");
  EXPECT_DEATH(
      {
        Registry r;
        r.AddHistogram("h", "x", {}, {1});
        r.AddCounter("h_count", "y");
      },
      "collides");
  EXPECT_DEATH(
      {
        Registry r;
        r.AddGauge("g", "x", {"a", "b"})->Set({"only one"}, 1);
      },
      "wrong number of label values");
}

}  // namespace
}  // namespace tidepool::ops
