// Tests of text -> JSON trees (kube/codec/documents.h, ParseDocuments, YamlToJson): format
// detection, the YAML 1.2 core schema, List expansion, and failures that must stay errors.
#include "kube/codec/documents.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <string>

#include "kube/codec/fields.h"
#include "kube/codec/objects.h"

namespace tidepool::kube::codec {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

Json One(std::string_view text) {
  auto docs = ParseDocuments(text, "t.yaml");
  EXPECT_TRUE(docs.has_value()) << (docs ? "" : docs.error().message());
  if (!docs || docs->size() != 1) {
    ADD_FAILURE() << "expected one document";
    return Json::object();
  }
  return (*docs)[0];
}

std::string ErrorOf(std::string_view text) {
  auto docs = ParseDocuments(text, "t.yaml");
  if (docs) return "<no error>";
  return docs.error().message();
}

TEST(YamlScalarTest, CoreSchema) {
  Json j = One(R"(
null1: null
null2: ~
null3:
bool1: true
bool2: False
int1: 12
int2: -3
int3: +7
int4: 012
int5: 0x1F
int6: 0o17
float1: 1.5
float2: -.5
float3: 1e3
float4: 2.
inf: -.inf
nan: .NaN
quoted1: "12"
quoted2: 'true'
tagged: !!str 5
yes: yes
underscore: 1_000
version: 1.2.3
time: 2024-01-01T00:00:00Z
block: |
  12
big: 18446744073709551615
bigger: 123456789012345678901234567890
)");
  EXPECT_TRUE(j["null1"].is_null());
  EXPECT_TRUE(j["null2"].is_null());
  EXPECT_TRUE(j["null3"].is_null());
  EXPECT_EQ(j["bool1"], true);
  EXPECT_EQ(j["bool2"], false);
  EXPECT_TRUE(j["int1"].is_number_integer());
  EXPECT_EQ(j["int1"], 12);
  EXPECT_EQ(j["int2"], -3);
  EXPECT_EQ(j["int3"], 7);
  EXPECT_EQ(j["int4"], 12);
  EXPECT_EQ(j["int5"], 31);
  EXPECT_EQ(j["int6"], 15);
  EXPECT_TRUE(j["float1"].is_number_float());
  EXPECT_EQ(j["float1"], 1.5);
  EXPECT_EQ(j["float2"], -0.5);
  EXPECT_EQ(j["float3"], 1000.0);
  EXPECT_TRUE(j["float3"].is_number_float());
  EXPECT_EQ(j["float4"], 2.0);
  EXPECT_TRUE(std::isinf(j["inf"].get<double>()));
  EXPECT_LT(j["inf"].get<double>(), 0);
  EXPECT_TRUE(std::isnan(j["nan"].get<double>()));
  EXPECT_EQ(j["quoted1"], "12");
  EXPECT_EQ(j["quoted2"], "true");
  EXPECT_EQ(j["tagged"], "5");
  EXPECT_EQ(j["yes"], "yes");  // YAML 1.1's booleans are strings in 1.2
  EXPECT_EQ(j["underscore"], "1_000");
  EXPECT_EQ(j["version"], "1.2.3");
  EXPECT_EQ(j["time"], "2024-01-01T00:00:00Z");
  EXPECT_EQ(j["block"], "12\n");
  EXPECT_TRUE(j["big"].is_number_unsigned());
  EXPECT_EQ(j["big"].get<uint64_t>(), 18446744073709551615ULL);
  EXPECT_TRUE(j["bigger"].is_number_float());
}

TEST(YamlScalarTest, ResolvePlainScalarLeavesOtherTextAlone) {
  EXPECT_EQ(ResolvePlainScalar("500m"), "500m");
  EXPECT_EQ(ResolvePlainScalar("1Gi"), "1Gi");
  EXPECT_EQ(ResolvePlainScalar("-"), "-");
  EXPECT_EQ(ResolvePlainScalar("."), ".");
  EXPECT_EQ(ResolvePlainScalar("1e"), "1e");
  EXPECT_EQ(ResolvePlainScalar("0x"), "0x");
  EXPECT_EQ(ResolvePlainScalar("0xZZ"), "0xZZ");
  EXPECT_EQ(ResolvePlainScalar("+.5e-3"), 0.0005);
}

TEST(YamlStructureTest, MergeKeysAndAliases) {
  Json j = One(R"(
base: &base {cpu: 1, memory: 1Gi}
small:
  <<: *base
  cpu: 500m
list: &l [a, b]
again: *l
)");
  EXPECT_EQ(j["small"]["cpu"], "500m");  // explicit keys win over merged ones
  EXPECT_EQ(j["small"]["memory"], "1Gi");
  EXPECT_FALSE(j["small"].contains("<<"));
  EXPECT_EQ(j["again"], Json::array({"a", "b"}));
}

TEST(YamlStructureTest, DuplicateKeysAreErrors) {
  EXPECT_EQ(ErrorOf("kind: Pod\nmetadata:\n  name: a\n  name: b\n"),
            "t.yaml: line 4, column 3: duplicate key \"name\"");
}

TEST(YamlStructureTest, SelfReferenceAndDeepNestingFailCleanly) {
  EXPECT_THAT(ErrorOf("a: &x [*x]\n"), HasSubstr("nested deeper than"));
  EXPECT_THAT(ErrorOf(std::string(5000, '[')), StartsWith("t.yaml: "));
  std::string deep_json = std::string(100000, '[') + std::string(100000, ']');
  auto docs = ParseDocuments(deep_json, "deep.json");
  // Either outcome is fine as long as it returns; an array of arrays is no object.
  if (docs) {
    auto state = DecodeState(deep_json, "deep.json");
    EXPECT_FALSE(state.has_value());
  }
}

// yaml-cpp 0.7 never finishes loading a ',' outside a flow collection (memory grows without
// bound); the guard in front of it turns that into a located syntax error. Found by fuzzing.
TEST(YamlStructureTest, StrayCommaOutsideFlowCollectionIsASyntaxError) {
  EXPECT_THAT(ErrorOf("[a],"), HasSubstr("unexpected ','"));
  EXPECT_THAT(ErrorOf("{n},"), HasSubstr("unexpected ','"));
  EXPECT_THAT(ErrorOf(","), HasSubstr("unexpected ','"));
}

TEST(YamlStructureTest, AliasBombIsRefused) {
  std::string text = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  char prev = 'a';
  for (char c = 'b'; c <= 'j'; ++c) {
    text += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 10; ++i) text += std::string(i ? ", *" : "*") + prev;
    text += "]\n";
    prev = c;
  }
  EXPECT_THAT(ErrorOf(text), HasSubstr("too large"));
}

TEST(DocumentsTest, JsonAndYamlFlowAreBothAccepted) {
  EXPECT_EQ(One(R"({"kind": "Pod", "n": 1.5})")["n"], 1.5);
  EXPECT_EQ(One("{kind: Pod, n: 2}")["kind"], "Pod");  // YAML flow mapping, not JSON
  EXPECT_EQ(One("[{kind: Pod}]")["kind"], "Pod");      // a YAML flow sequence of one
  auto array = ParseDocuments(R"([{"kind": "Pod"}, {"kind": "Node"}])", "t.json");
  ASSERT_TRUE(array.has_value()) << array.error().message();
  ASSERT_EQ(array->size(), 2u);
  EXPECT_EQ((*array)[1]["kind"], "Node");
  // Broken JSON reports the JSON error, not whatever YAML would make of it.
  EXPECT_THAT(ErrorOf("{\"kind\": \"Pod\", \"metadata\": {\"name\": }}"),
              StartsWith("t.yaml: invalid JSON: parse error at line 1, column 38"));
  EXPECT_EQ(One("\xEF\xBB\xBFkind: Pod\n")["kind"], "Pod");
  EXPECT_THAT(ErrorOf("\xFF\xFEk\0i\0"), HasSubstr("UTF-16"));
}

TEST(DocumentsTest, ListsExpandRecursively) {
  auto docs = ParseDocuments(R"(
kind: List
items:
- {kind: Pod, metadata: {name: a}}
- kind: List
  items:
  - {kind: Node, metadata: {name: b}}
- kind: NodeList
  apiVersion: v1
  items:
  - metadata: {name: c}
- kind: PodList
  items: null
---
- {kind: Pod, metadata: {name: d}}
)",
                             "t.yaml");
  ASSERT_TRUE(docs.has_value()) << docs.error().message();
  ASSERT_EQ(docs->size(), 4u);
  EXPECT_EQ((*docs)[0]["metadata"]["name"], "a");
  EXPECT_EQ((*docs)[1]["kind"], "Node");
  EXPECT_EQ((*docs)[2]["kind"], "Node");
  EXPECT_EQ((*docs)[2]["apiVersion"], "v1");
  EXPECT_EQ((*docs)[3]["metadata"]["name"], "d");

  auto sourced = ParseSourcedDocuments(
      "kind: List\nitems:\n- {a: 1}\n- kind: List\n  items: [{b: 2}]\n", "t.yaml");
  ASSERT_TRUE(sourced.has_value());
  ASSERT_EQ(sourced->size(), 2u);
  EXPECT_EQ((*sourced)[0].origin, "document 1, items[0]");
  EXPECT_EQ((*sourced)[1].origin, "document 1, items[1], items[0]");
}

TEST(DocumentsTest, ListItemsMustBeAnArray) {
  EXPECT_EQ(ErrorOf("kind: List\nitems: {a: 1}\n"),
            "t.yaml: document 1: items: expected an array, got {\"a\":1}");
}

TEST(DocumentsTest, YamlToJsonForTheConfigLoader) {
  YAML::Node node = YAML::Load("pools: [{name: gpu, max: 3, price: 0.9, spot: true}]");
  auto j = YamlToJson(node, "config.yaml");
  ASSERT_TRUE(j.has_value()) << j.error().message();
  EXPECT_EQ((*j)["pools"][0]["max"], 3);
  EXPECT_EQ((*j)["pools"][0]["price"], 0.9);
  EXPECT_EQ((*j)["pools"][0]["spot"], true);
  auto dup = YamlToJson(YAML::Load("a: 1\na: 2\n"), "config.yaml");
  ASSERT_FALSE(dup.has_value());
  EXPECT_EQ(dup.error().message(), "config.yaml: line 2, column 1: duplicate key \"a\"");
}

TEST(FieldPathTest, Rendering) {
  FieldPath root;
  EXPECT_EQ(root.ToString(), "");
  FieldPath spec = root.Key("spec");
  // Each step refers to the one before it, so every stored step needs a named parent.
  FieldPath containers = spec.Key("containers");
  FieldPath c = containers.Index(2);
  EXPECT_EQ(c.ToString(), "spec.containers[2]");
  EXPECT_EQ(c.Key("resources").Key("limits").Key("nvidia.com/gpu").ToString(),
            "spec.containers[2].resources.limits[nvidia.com/gpu]");
  EXPECT_EQ(root.Index(0).Key("a").ToString(), "[0].a");
}

}  // namespace
}  // namespace tidepool::kube::codec
