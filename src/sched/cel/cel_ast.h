// The compiled form of a device selector (sched/cel/cel.h): the syntax tree the parser builds and
// the evaluator walks, and the values an evaluation passes around.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "model/dra.h"
#include "model/quantity.h"
#include "sched/cel/cel.h"

namespace tidepool::sched::cel::detail {

// A semantic version (semver 2.0): build metadata is ignored, as in comparisons.
struct Version {
  int64_t major = 0, minor = 0, patch = 0;
  std::string_view pre;  // pre-release, "" for a release
};
std::optional<Version> ParseVersion(std::string_view text);
// <0, 0, >0 by semver precedence.
int CompareVersions(const Version& a, const Version& b);

enum class Op : uint8_t {
  // leaves
  kBool,
  kInt,
  kString,
  kDevice,
  kList,
  // device.driver / .attributes / .capacity, and lookups
  kSelect,  // child[0].field
  kIndex,   // child[0][child[1]]
  // operators
  kNot,
  kNeg,
  kAnd,
  kOr,
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kIn,
  // functions: quantity(s), semver(s), size(x); methods: target is child[0]
  kQuantity,
  kSemver,
  kSize,
  kCompareTo,
  kIsGreaterThan,
  kIsLessThan,
  kStartsWith,
  kEndsWith,
  kContains,
  kMatches,
};

struct Node {
  Op op;
  size_t position = 0;  // of the token that made the node, for errors
  bool bool_value = false;
  int64_t int_value = 0;
  std::string text;  // kString literal, kSelect field name
  std::vector<std::unique_ptr<Node>> children;
  // Constant arguments folded at compile time: quantity("80Gi"), semver("1.2.3"), a pattern.
  std::optional<model::Quantity> quantity;
  std::optional<Version> version;
  std::string version_text;  // owns what version->pre points into
  std::unique_ptr<std::regex> regex;
};

// What a node evaluates to. Views point into the device or the tree; both outlive one Eval.
struct Value {
  enum class Type : uint8_t {
    kError,
    kBool,
    kInt,
    kString,
    kQuantity,
    kVersion,
    kDevice,
    kAttributes,
    kCapacity,  // device.attributes / device.capacity
    kAttrDomain,
    kCapDomain,  // ...["domain"]: `s` is the domain
    kList,       // a list literal: `list` is its node
  };
  Type type = Type::kError;
  bool b = false;
  int64_t i = 0;
  std::string_view s;
  model::Quantity q;
  Version v;
  const Node* list = nullptr;
};

// Parses `expression` into a tree, checking names and folding constant arguments.
std::expected<std::unique_ptr<Node>, CompileError> Parse(std::string_view expression);

// Evaluates a node; the first error's message goes to `*error` (when not null).
Value Evaluate(const Node& node, const DeviceView& device, std::string* error);

}  // namespace tidepool::sched::cel::detail
