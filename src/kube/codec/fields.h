// Typed reads from a JSON tree that know where they are: every failure names the field path
// ("spec.containers[0].resources.requests.cpu"), what was expected and what was found.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "model/meta.h"
#include "model/quantity.h"
#include "model/resources.h"

namespace tidepool::kube::codec {

using Json = nlohmann::json;

// A position in a JSON tree as a chain of stack frames, one per step, so building a path costs
// nothing until an error renders it. A child refers to its parent: keep the parent alive (pass
// `path.Key("spec")` down as an argument; do not store it beyond the parent's scope). Keys are
// views, so they must outlive the path too (string literals or keys of the tree being read).
class FieldPath {
 public:
  FieldPath() = default;

  FieldPath Key(std::string_view key) const { return FieldPath(this, key, -1); }
  FieldPath Index(size_t i) const { return FieldPath(this, {}, static_cast<int64_t>(i)); }

  bool IsRoot() const { return parent_ == nullptr; }

  // "spec.containers[0].resources.requests.cpu". Keys that are not plain identifiers (labels
  // like "app.kubernetes.io/name", resources like "nvidia.com/gpu") print as "[key]", the way
  // Kubernetes' field paths print map keys.
  std::string ToString() const;

 private:
  FieldPath(const FieldPath* parent, std::string_view key, int64_t index)
      : parent_(parent), key_(key), index_(index) {}

  const FieldPath* parent_ = nullptr;
  std::string_view key_;
  int64_t index_ = -1;  // >= 0: an array index step; otherwise a key step
};

// Renders a JSON value for an error message: compact JSON, truncated to about 80 characters;
// nullptr renders as "nothing" (the field is absent).
std::string RenderForError(const Json* value);

// `path: expected <expected>, got <value>` (without `path: ` at the root).
Error TypeError(const FieldPath& path, std::string_view expected, const Json* got);
// `path: <message>` (without `path: ` at the root).
Error FieldError(const FieldPath& path, std::string_view message);

// The member `key` of `obj`, or nullptr when `obj` is not an object, the key is absent, or its
// value is JSON null. Kubernetes (Go's encoding/json) reads null exactly as absent.
const Json* Find(const Json& obj, std::string_view key);

// An empty JSON object and array with static lifetime: what an absent optional section reads as.
const Json& EmptyObject();
const Json& EmptyArray();

// The readers below look up `key` in `obj` (an object; `path` is the path of `obj`). An absent
// or null member leaves `out` untouched (the caller's default); a member of the wrong type is an
// error naming `path.key`.

// The member as an object (EmptyObject() when absent).
Result<const Json*> ReadObject(const Json& obj, std::string_view key, const FieldPath& path);
// The member as an array (EmptyArray() when absent).
Result<const Json*> ReadArray(const Json& obj, std::string_view key, const FieldPath& path);

Result<void> ReadString(const Json& obj, std::string_view key, const FieldPath& path,
                        std::string& out);
Result<void> ReadBool(const Json& obj, std::string_view key, const FieldPath& path, bool& out);
// Integers: JSON integers, or numbers with an integral value (YAML `1.0`), within range.
Result<void> ReadInt32(const Json& obj, std::string_view key, const FieldPath& path, int32_t& out);
Result<void> ReadInt32(const Json& obj, std::string_view key, const FieldPath& path,
                       std::optional<int32_t>& out);
Result<void> ReadInt64(const Json& obj, std::string_view key, const FieldPath& path,
                       std::optional<int64_t>& out);
// An RFC 3339 timestamp.
Result<void> ReadTime(const Json& obj, std::string_view key, const FieldPath& path,
                      std::optional<Time>& out);
// An object of string values (labels, annotations, nodeSelector); replaces `out`.
Result<void> ReadStringMap(const Json& obj, std::string_view key, const FieldPath& path,
                           model::Labels& out);
// An array of strings; replaces `out`.
Result<void> ReadStringList(const Json& obj, std::string_view key, const FieldPath& path,
                            std::vector<std::string>& out);

// One of a fixed set of names; absent leaves `out` untouched. The error lists the allowed
// values: `expected one of "NoSchedule", "PreferNoSchedule", "NoExecute", got "Sometimes"`.
template <typename E>
struct EnumName {
  std::string_view name;
  E value;
};
Error EnumError(const FieldPath& path, std::span<const std::string_view> names, const Json* got);
template <typename E, size_t N>
Result<void> ReadEnum(const Json& obj, std::string_view key, const FieldPath& path,
                      const EnumName<E> (&names)[N], E& out) {
  const Json* v = Find(obj, key);
  if (v == nullptr) return {};
  if (v->is_string()) {
    const auto& s = v->get_ref<const std::string&>();
    for (const auto& n : names) {
      if (n.name == s) {
        out = n.value;
        return {};
      }
    }
  }
  std::string_view list[N];
  for (size_t i = 0; i < N; ++i) list[i] = names[i].name;
  return std::unexpected(EnumError(path.Key(key), list, v));
}

// A Kubernetes quantity: a JSON string in quantity syntax, or a JSON number (YAML `cpu: 1`,
// `cpu: 0.5`; a double is formatted shortest-round-trip first, so 0.1 stays exactly 100m).
Result<model::Quantity> QuantityFromJson(const Json& value, const FieldPath& path);
// A ResourceList (`{cpu: 500m, nvidia.com/gpu: 1}`): sets each listed resource in `out` through
// Resources::SetQuantity with interned names. Negative amounts are errors. Every entry is
// checked, but those whose name is also a member of `except` (an object, may be null) are not
// set: this is how limits default the requests a container leaves out.
Result<void> ReadResourceList(const Json& obj, std::string_view key, const FieldPath& path,
                              model::Resources& out, const Json* except = nullptr);

}  // namespace tidepool::kube::codec
