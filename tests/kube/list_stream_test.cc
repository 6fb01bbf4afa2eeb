// StreamJsonList (kube/codec/list_stream.h) must hand on exactly what ParseSourcedDocuments
// lists, item by item, and decline everything else, so a state decoded while it is parsed is the
// state decoded from the whole tree.
#include "kube/codec/list_stream.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kube/codec/objects.h"

namespace tidepool::kube::codec {
namespace {

struct Streamed {
  bool taken = false;
  std::vector<SourcedDocument> docs;
};

Streamed Stream(std::string_view text) {
  Streamed s;
  s.taken = StreamJsonList(text, "s.json", [&](SourcedDocument&& d) -> Result<void> {
    s.docs.push_back(std::move(d));
    return {};
  });
  return s;
}

// The streamed documents are ParseSourcedDocuments' documents, origins included, up to the
// order of typed-list items that wait for the list's kind.
void ExpectSameAsTree(std::string_view text) {
  Streamed s = Stream(text);
  ASSERT_TRUE(s.taken) << text;
  auto tree = ParseSourcedDocuments(text, "s.json");
  ASSERT_TRUE(tree.has_value()) << tree.error().message();
  auto key = [](const SourcedDocument& d) { return d.origin + " " + d.value.dump(); };
  std::vector<std::string> a, b;
  for (const auto& d : s.docs) a.push_back(key(d));
  for (const auto& d : *tree) b.push_back(key(d));
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  EXPECT_EQ(a, b) << text;
}

TEST(ListStreamTest, KubectlListsHandTheSameObjectsOn) {
  // kubectl prints kind after items; the items carry their own kind.
  ExpectSameAsTree(R"({"apiVersion":"v1","items":[
    {"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","labels":{"x":"1"}},"spec":{"n":[1,2.5,true,null]}},
    {"apiVersion":"v1","kind":"Node","metadata":{"name":"n"}}],"kind":"List","metadata":{}})");
  // An empty List, a List without items, and one whose items are Lists themselves.
  ExpectSameAsTree(R"({"apiVersion":"v1","items":[],"kind":"List"})");
  ExpectSameAsTree(R"({"apiVersion":"v1","kind":"List"})");
  ExpectSameAsTree(R"({"kind":"List","apiVersion":"v1","items":[
    {"kind":"List","apiVersion":"v1","items":[{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p"}}]},
    {"kind":"Pod","apiVersion":"v1","metadata":{"name":"q"}}]})");
}

// Values read as nlohmann's reader reads them: integers that are not negative unsigned, others
// signed, the rest floating; escapes in keys and strings; a repeated key keeps its last value.
TEST(ListStreamTest, ValuesAreReadAsTheTreeReadsThem) {
  const std::string text = R"({"kind":"List","apiVersion":"v1","items":[{"kind":"Pod",
    "apiVersion":"v1","metadata":{"name":"a\u00e9\"b","labels":{"k\tey":"v\\1"}},
    "n":[0,7,-7,18446744073709551615,-9223372036854775808,2.5,-0.0,1e3,true,false,null],
    "dup":1,"dup":{"deep":[[[{}]]]}}]})";
  ExpectSameAsTree(text);
  Streamed s = Stream(text);
  ASSERT_EQ(s.docs.size(), 1u);
  const Json& n = s.docs[0].value["n"];
  EXPECT_TRUE(n[0].is_number_unsigned());
  EXPECT_TRUE(n[1].is_number_unsigned());
  EXPECT_TRUE(n[2].is_number_integer() && !n[2].is_number_unsigned());
  EXPECT_EQ(n[3].get<uint64_t>(), 18446744073709551615u);
  EXPECT_EQ(n[4].get<int64_t>(), INT64_MIN);
  EXPECT_TRUE(n[5].is_number_float());
  EXPECT_TRUE(n[7].is_number_float());
  EXPECT_EQ(s.docs[0].value["metadata"]["name"], "a\u00e9\"b");
  EXPECT_EQ(s.docs[0].value["metadata"]["labels"]["k\tey"], "v\\1");
  EXPECT_TRUE(s.docs[0].value["dup"].is_object());
}

// The consumer is told how many items the List has before the first is handed on.
TEST(ListStreamTest, TheItemCountComesFirst) {
  std::vector<std::string> events;
  bool taken = StreamJsonList(
      R"({"kind":"List","items":[{"kind":"Pod","apiVersion":"v1"},{"kind":"Pod","apiVersion":"v1"}]})",
      "s.json",
      [&](SourcedDocument&&) -> Result<void> {
        events.push_back("item");
        return {};
      },
      {}, [&](size_t n) { events.push_back("expect " + std::to_string(n)); });
  ASSERT_TRUE(taken);
  EXPECT_EQ(events, (std::vector<std::string>{"expect 2", "item", "item"}));
}

TEST(ListStreamTest, TypedListItemsTakeTheListsKindAtTheEnd) {
  // The API server's PodList: items without kind or apiVersion, the list's kind given last.
  std::string text = R"({"apiVersion":"v1","items":[{"metadata":{"name":"a"}},
    {"kind":"Pod","apiVersion":"v1","metadata":{"name":"b"}},{"metadata":{"name":"c"}}],
    "kind":"PodList","metadata":{"resourceVersion":"7"}})";
  ExpectSameAsTree(text);
  Streamed s = Stream(text);
  ASSERT_EQ(s.docs.size(), 3u);
  EXPECT_EQ(s.docs[0].origin, "document 1, items[1]");  // carried its kind: handed on at once
  EXPECT_EQ(s.docs[1].value["kind"], "Pod");
  EXPECT_EQ(s.docs[1].value["apiVersion"], "v1");
  EXPECT_EQ(s.docs[2].origin, "document 1, items[2]");
}

TEST(ListStreamTest, DeclinesWhatIsNotAJsonList) {
  for (std::string_view text : {
           R"(kind: List
items: [])",                                         // YAML
           R"([{"kind":"Pod","apiVersion":"v1"}])",  // a top-level array
           R"({"kind":"Pod","apiVersion":"v1","items":[{"kind":"Node","apiVersion":"v1"}]})",
           R"({"kind":"List","items":[{"kind":"Pod","apiVersion":"v1"},)",  // invalid JSON
           R"({"kind":"List","items":{"a":1}})",                            // items not an array
           R"({"kind":"List","items":[1e400]})",                            // a number out of range
           R"({"kind":"List","items":[]} {"kind":"List"})",                 // two values
           R"({"kind":"List","items":[]}])",                                // a stray token
           R"("just a string")",
       }) {
    EXPECT_FALSE(Stream(text).taken) << text;
  }
}

TEST(ListStreamTest, AnErrorFromTheConsumerDeclines) {
  int calls = 0;
  bool taken = StreamJsonList(
      R"({"kind":"List","items":[{"kind":"Pod","apiVersion":"v1"},{"kind":"Pod","apiVersion":"v1"}]})",
      "s.json", [&](SourcedDocument&&) -> Result<void> {
        ++calls;
        return InvalidArgument("bad pod");
      });
  EXPECT_FALSE(taken);
  EXPECT_EQ(calls, 1);  // the first error stops the parse
}

// Progress is told after each item: items counted from 1, the bytes parsed growing up to the
// end of the item (its closing brace), the total the text's size. Without a callback the parse
// takes the same items.
TEST(ListStreamTest, ProgressFollowsTheItems) {
  const std::string text =
      R"({"kind":"List","items":[{"kind":"Pod","apiVersion":"v1"},{"kind":"Node","apiVersion":"v1"},)"
      R"({"kind":"Pod","apiVersion":"v1"}]})";
  std::vector<ListProgress> seen;
  int docs = 0;
  bool taken = StreamJsonList(
      text, "s.json",
      [&](SourcedDocument&&) -> Result<void> {
        ++docs;
        return {};
      },
      [&](const ListProgress& p) { seen.push_back(p); });
  ASSERT_TRUE(taken);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(docs, 3);
  size_t end = 0;
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].source, "s.json");
    EXPECT_EQ(seen[i].items, i + 1);
    EXPECT_EQ(seen[i].bytes_total, text.size());
    end = text.find('}', end) + 1;  // the item's closing brace
    EXPECT_EQ(seen[i].bytes_read, end) << i;
  }
  EXPECT_TRUE(Stream(text).taken);
}

// The state decoder reads a JSON List while parsing it; the result is the YAML reading's.
TEST(ListStreamTest, StateFromAStreamedListEqualsTheStateFromYaml) {
  std::string json = R"({"apiVersion":"v1","kind":"List","items":[
    {"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"},"status":{"allocatable":{"cpu":"4","memory":"8Gi","pods":"110"}}},
    {"apiVersion":"v1","kind":"Pod","metadata":{"name":"p1","namespace":"ml"},
     "spec":{"nodeName":"n1","containers":[{"name":"c","resources":{"requests":{"cpu":"1"}}}]},"status":{"phase":"Running"}},
    {"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"}}]})";
  std::string yaml = R"(apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}}
- apiVersion: v1
  kind: Pod
  metadata: {name: p1, namespace: ml}
  spec: {nodeName: n1, containers: [{name: c, resources: {requests: {cpu: "1"}}}]}
  status: {phase: Running}
- {apiVersion: v1, kind: ConfigMap, metadata: {name: cm}}
)";
  auto a = DecodeState(json, "s.json");
  auto b = DecodeState(yaml, "s.yaml");
  ASSERT_TRUE(a.has_value()) << a.error().message();
  ASSERT_TRUE(b.has_value()) << b.error().message();
  ASSERT_EQ(a->pods.size(), 1u);
  ASSERT_EQ(a->nodes.size(), 1u);
  EXPECT_EQ(a->pods[0].Key(), b->pods[0].Key());
  EXPECT_EQ(a->pods[0].requests.cpu_milli(), 1000);
  EXPECT_EQ(a->pods[0].requests.cpu_milli(), b->pods[0].requests.cpu_milli());
  EXPECT_EQ(a->nodes[0].allocatable.cpu_milli(), b->nodes[0].allocatable.cpu_milli());
  EXPECT_EQ(a->ignored, b->ignored);
}

// A bad item is reported as the ordinary reader reports it, with its position.
TEST(ListStreamTest, ABadItemIsWordedAsBefore) {
  auto r = DecodeState(
      R"({"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Pod","metadata":{"namespace":"x"},"spec":{"containers":3}}]})",
      "s.json");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message().find("s.json"), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find("items[0]"), std::string::npos) << r.error().message();
}

}  // namespace
}  // namespace tidepool::kube::codec
