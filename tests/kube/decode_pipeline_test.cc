// DecodePipeline (kube/codec/decode_pipeline.h): items decoded on a second thread, in the order
// they were pushed; the first error stops it. A state read with 2 threads is the state read with
// 1, and a bad item is worded the same.
#include "kube/codec/decode_pipeline.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "kube/codec/encode.h"
#include "kube/codec/objects.h"

namespace tidepool::kube::codec {
namespace {

SourcedDocument Doc(int i) { return {nlohmann::json{{"i", i}}, fmt::format("items[{}]", i)}; }

TEST(DecodePipeline, DecodesEveryItemInOrder) {
  std::vector<int> seen;
  DecodePipeline pipeline([&](SourcedDocument&& d) -> Result<void> {
    seen.push_back(d.value["i"].get<int>());
    return {};
  });
  for (int i = 0; i < 10000; ++i) ASSERT_TRUE(pipeline.Push(Doc(i)));
  ASSERT_TRUE(pipeline.Finish());
  ASSERT_EQ(seen.size(), 10000u);
  for (int i = 0; i < 10000; ++i) ASSERT_EQ(seen[i], i);
  EXPECT_TRUE(pipeline.Finish()) << "idempotent";
}

TEST(DecodePipeline, TheFirstErrorStopsItAndReachesTheParser) {
  std::vector<int> seen;
  DecodePipeline pipeline([&](SourcedDocument&& d) -> Result<void> {
    int i = d.value["i"].get<int>();
    if (i == 300) return InvalidArgument("{}: bad", d.origin);
    seen.push_back(i);
    return {};
  });
  int pushed = 0;
  bool refused = false;
  for (; pushed < 100000 && !refused; ++pushed) refused = !pipeline.Push(Doc(pushed));
  EXPECT_TRUE(refused) << "the parser hears of the error and may stop";
  EXPECT_LT(pushed, 100000);
  Result<void> done = pipeline.Finish();
  ASSERT_FALSE(done);
  EXPECT_EQ(done.error().message(), "items[300]: bad");
  ASSERT_EQ(seen.size(), 300u) << "nothing after the bad item is decoded";
}

TEST(DecodePipeline, AnExceptionIsAnErrorNotACrash) {
  DecodePipeline pipeline(
      [](SourcedDocument&&) -> Result<void> { throw std::runtime_error("surprise"); });
  (void)pipeline.Push(Doc(0));
  Result<void> done = pipeline.Finish();
  ASSERT_FALSE(done);
  EXPECT_EQ(done.error().code(), Error::Code::kInternal);
  EXPECT_NE(done.error().message().find("surprise"), std::string::npos);
}

// A List of every kind the state reads, with typed-list items that wait for the list's kind.
std::string BigList(int pods, const std::string& bad_pod = "") {
  std::string items;
  for (int n = 0; n < pods / 10; ++n) {
    items += fmt::format(
        R"({{"apiVersion":"v1","kind":"Node","metadata":{{"name":"n{0}","labels":{{"zone":"z{1}"}}}},)"
        R"("status":{{"allocatable":{{"cpu":"{2}","memory":"16Gi","pods":"110"}}}}}},)",
        n, n % 3, 4 + n % 5);
  }
  for (int p = 0; p < pods; ++p) {
    std::string spec = fmt::format(
        R"({{"nodeName":"{}","containers":[{{"name":"c","resources":{{"requests":{{"cpu":"{}m"}}}}}}]}})",
        p % 4 == 0 ? "" : fmt::format("n{}", p % (pods / 10)), 100 + p % 900);
    if (fmt::format("p{}", p) == bad_pod) spec = R"({"containers":3})";
    items += fmt::format(
        R"({{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"p{}","namespace":"ns{}",)"
        R"("ownerReferences":[{{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs","uid":"u{}","controller":true}}]}},)"
        R"("spec":{},"status":{{"phase":"{}"}}}},)",
        p, p % 7, p % 13, spec, p % 4 == 0 ? "Pending" : "Running");
  }
  items +=
      R"({"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"b","namespace":"ns1"},)"
      R"("spec":{"minAvailable":1,"selector":{"matchLabels":{"a":"b"}}}},)";
  items += R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"}})";
  return R"({"apiVersion":"v1","kind":"List","items":[)" + items + "]}";
}

// What a state holds, in words, to compare two readings.
std::vector<std::string> Digest(const ClusterState& s) {
  std::vector<std::string> out;
  for (const auto& n : s.nodes) out.push_back(EncodeNode(n).dump());
  for (const auto& p : s.pods) {
    out.push_back(fmt::format("{} {} {} {} {} {}", p.Key(), p.node_name, p.requests.cpu_milli(),
                              static_cast<int>(p.phase), p.meta.owner_references[0].uid,
                              p.meta.name));
  }
  out.push_back(fmt::format("pdbs {} ds {}", s.pdbs.size(), s.daemon_sets.size()));
  for (const auto& [kind, count] : s.ignored)
    out.push_back(fmt::format("ignored {} {}", kind, count));
  return out;
}

TEST(DecodePipeline, AStateReadWithTwoThreadsIsTheStateReadWithOne) {
  const std::string text = BigList(5000);
  auto one = DecodeState(text, "big.json", {}, 1);
  auto two = DecodeState(text, "big.json", {}, 2);
  ASSERT_TRUE(one.has_value()) << one.error().message();
  ASSERT_TRUE(two.has_value()) << two.error().message();
  ASSERT_EQ(one->pods.size(), 5000u);
  EXPECT_EQ(Digest(*one), Digest(*two));
}

TEST(DecodePipeline, ABadItemIsWordedAsWithOneThread) {
  const std::string text = BigList(3000, "p2500");
  auto one = DecodeState(text, "big.json", {}, 1);
  auto two = DecodeState(text, "big.json", {}, 2);
  ASSERT_FALSE(one.has_value());
  ASSERT_FALSE(two.has_value());
  EXPECT_EQ(one.error().message(), two.error().message());
  EXPECT_NE(two.error().message().find("containers"), std::string::npos) << two.error().message();
}

}  // namespace
}  // namespace tidepool::kube::codec
