// Strict, position-aware reads from a yaml-cpp tree for tidepool's own YAML files: every failure
// says "file:line: key.path: expected ..., got ...". Nothing here throws; yaml-cpp's own
// exceptions are caught by LoadYamlDocument and by the callers that walk the tree.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "base/time.h"
#include "model/meta.h"
#include "model/quantity.h"

namespace tidepool::kube::config {

// One node of a parsed document together with where it came from: the file name, the key path
// from the document root ("pools[1].template.capacity[nvidia.com/gpu]") and the 1-based line to
// blame. The line of a map member is the line of its key (for a block map or list value that is
// where the reader looks, and yaml-cpp places an empty value on the following line). Cheap to
// copy: yaml-cpp nodes are shared handles. `source` is a view and must outlive the value.
class YamlValue {
 public:
  YamlValue(YAML::Node node, std::string_view source, std::string path, int line)
      : node_(std::move(node)), source_(source), path_(std::move(path)), line_(line) {}

  // The root of a document, blamed on the line where its content starts.
  static YamlValue Root(const YAML::Node& node, std::string_view source);

  const YAML::Node& node() const { return node_; }
  std::string_view source() const { return source_; }
  const std::string& path() const { return path_; }
  int line() const { return line_; }

  bool IsNull() const { return !node_.IsDefined() || node_.IsNull(); }
  bool IsMap() const { return node_.IsMap(); }
  bool IsSequence() const { return node_.IsSequence(); }
  bool IsScalar() const { return node_.IsScalar(); }
  // True for a scalar written without quotes and without an explicit non-integer/float tag,
  // i.e. one YAML would read as a number or boolean when it looks like one.
  bool IsPlainScalar() const;

  // The member `key` of this map (the caller supplies the member's node and the key's line).
  YamlValue Member(std::string_view key, const YAML::Node& node, int line) const;
  // The i-th item of this list.
  YamlValue Item(size_t i, const YAML::Node& node) const;

  // "file:line: path: message" (no "path: " for the document root).
  Error MakeError(std::string_view message) const;
  // "file:line: path: expected <what>, got <Render()>".
  Error Expected(std::string_view what) const;
  // The value as an error message quotes it: plain numbers and booleans as written, other
  // scalars quoted, "a map", "a list" or "nothing"; long text is shortened.
  std::string Render() const;

  // Typed reads. A null (empty) value is an error for all of them: a key written without a
  // value is a mistake, never a request for the default.

  // Any scalar, as written ("10" and 10 both read as "10").
  Result<std::string> ReadString() const;
  // true/True/TRUE/false/False/FALSE, unquoted (YAML 1.2 core schema; no yes/no/on/off).
  Result<bool> ReadBool() const;
  // An unquoted decimal integer in [lo, hi]. `what` names the expectation in errors
  // ("a non-negative integer"); a quoted "10" is an error, as is 1.5 or 1e3.
  Result<int64_t> ReadInt(int64_t lo, int64_t hi, std::string_view what) const;
  // An unquoted finite number in [lo, hi]; `what` as for ReadInt ("a number between 0 and 1").
  Result<double> ReadNumber(double lo, double hi, std::string_view what) const;
  // A Go-style duration ("10m", "1h30m"; see ParseDuration), quoted or not; negative durations
  // are errors, and so is zero when `allow_zero` is false.
  Result<Duration> ReadDuration(bool allow_zero) const;
  // A Kubernetes quantity, quoted or not; a plain scalar's text is parsed as written, so 0.1
  // stays exactly 100m. Negative amounts are errors.
  Result<model::Quantity> ReadQuantity() const;
  // One of `names` (as a string); the error lists them all.
  Result<size_t> ReadEnum(std::span<const std::string_view> names) const;
  // The items of a list; null reads as an empty list, anything else that is not a list is an
  // error.
  Result<std::vector<YamlValue>> ReadList() const;
  // A list of strings.
  Result<std::vector<std::string>> ReadStringList() const;

 private:
  YAML::Node node_;
  std::string_view source_;
  std::string path_;
  int line_ = 0;
};

// A YAML map read strictly: its keys are scalars and unique (yaml-cpp keeps duplicates; a
// repeated key is an error here), and its members keep document order.
class YamlMap {
 public:
  struct Entry {
    std::string key;
    YamlValue value;  // path "<map path>.<key>", line of the key
  };

  // The map at `v`. Null (an empty section, `scaleDown:`) reads as an empty map; a scalar or
  // list is an error saying `expected` ("a map of scale-up settings").
  static Result<YamlMap> Read(const YamlValue& v, std::string_view expected);

  // An error at the first key that is not one of `allowed`, listing them all (and suggesting
  // the closest one when the key looks like a typo).
  Result<void> CheckKeys(std::span<const std::string_view> allowed) const;

  // The member or nullptr.
  const YamlValue* Find(std::string_view key) const;
  // The member, or an error at the map's line: "path.key: required key is missing (expected
  // <expected>)".
  Result<YamlValue> Require(std::string_view key, std::string_view expected) const;

  const YamlValue& self() const { return self_; }
  const std::vector<Entry>& entries() const { return entries_; }

 private:
  explicit YamlMap(YamlValue self) : self_(std::move(self)) {}

  YamlValue self_;
  std::vector<Entry> entries_;
};

// Parses `text` as exactly one YAML document. An empty text or document is an error
// "file: is empty (expected <what>)"; a syntax error carries yaml-cpp's line and column; a
// second document is an error at its line.
Result<YAML::Node> LoadYamlDocument(std::string_view text, std::string_view source,
                                    std::string_view what);

// The name in `candidates` closest to `name` when it is close enough to be a likely typo
// ("expandrs" -> "expanders", "MaxNodes" -> "maxNodes"), else empty.
std::string_view ClosestName(std::string_view name, std::span<const std::string_view> candidates);

// Appends a key to a path the way error messages print it: "a.b" for plain keys,
// "a[nvidia.com/gpu]" for keys with other characters (as kube/codec's field paths do).
std::string JoinPath(std::string_view path, std::string_view key);

// Kubernetes name syntax, for validating what the config will write into Node objects.
// A DNS-1123 label: lowercase alphanumerics and '-', starting and ending alphanumeric, <= 63.
bool IsDns1123Label(std::string_view s);
// A qualified name as label keys, taint keys and resource names use: an optional DNS-1123
// subdomain prefix and '/', then a name of <= 63 alphanumerics, '-', '_', '.', starting and
// ending alphanumeric.
bool IsQualifiedName(std::string_view s);
// A resource name as Node capacity accepts it: a standard one (cpu, memory, ephemeral-storage,
// pods, storage, hugepages-<size>, attachable-volumes-<kind>) or a domain-prefixed extended
// resource (nvidia.com/gpu). An unprefixed "gpu" or "MaxNodes" is not one.
bool IsResourceName(std::string_view s);
// A label value: empty, or <= 63 alphanumerics, '-', '_', '.', starting and ending alphanumeric.
bool IsLabelValue(std::string_view s);

}  // namespace tidepool::kube::config
