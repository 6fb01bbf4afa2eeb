#include "kube/codec/fields.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <limits>

namespace tidepool::kube::codec {
namespace {

bool IsPlainKey(std::string_view key) {
  if (key.empty()) return false;
  for (char c : key) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

constexpr size_t kMaxRender = 80;

// Reads an integral JSON number into `v`; false for any other value (including 1.5).
bool IntegralValue(const Json& j, int64_t& v) {
  switch (j.type()) {
    case Json::value_t::number_integer:
      v = j.get<int64_t>();
      return true;
    case Json::value_t::number_unsigned: {
      uint64_t u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
      v = static_cast<int64_t>(u);
      return true;
    }
    case Json::value_t::number_float: {
      double d = j.get<double>();
      // 2^63 is exactly representable; anything at or above it does not fit.
      if (!std::isfinite(d) || d != std::trunc(d) || d >= 9223372036854775808.0 ||
          d < -9223372036854775808.0) {
        return false;
      }
      v = static_cast<int64_t>(d);
      return true;
    }
    default:
      return false;
  }
}

}  // namespace

std::string FieldPath::ToString() const {
  // Collect the frames root-first; paths are short, so a small vector is enough.
  std::vector<const FieldPath*> frames;
  for (const FieldPath* p = this; p != nullptr && p->parent_ != nullptr; p = p->parent_) {
    frames.push_back(p);
  }
  std::string out;
  for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
    const FieldPath& f = **it;
    if (f.index_ >= 0) {
      fmt::format_to(std::back_inserter(out), "[{}]", f.index_);
    } else if (IsPlainKey(f.key_)) {
      if (!out.empty()) out.push_back('.');
      out.append(f.key_);
    } else {
      fmt::format_to(std::back_inserter(out), "[{}]", f.key_.empty() ? "\"\"" : f.key_);
    }
  }
  return out;
}

namespace {

// Compact JSON, but only as much as an error message shows: stops after about kMaxRender
// characters and at a small depth, so a huge or deeply nested value costs little (nlohmann's
// dump recurses without limit).
void RenderBounded(const Json& v, int depth, std::string& out) {
  if (out.size() > kMaxRender) return;
  auto dump = [&](const Json& scalar) {
    out += scalar.dump(-1, ' ', false, Json::error_handler_t::replace);
  };
  switch (v.type()) {
    case Json::value_t::object: {
      if (depth >= 4 && !v.empty()) {
        out += "{...}";
        return;
      }
      out.push_back('{');
      bool first = true;
      for (const auto& [k, child] : v.items()) {
        if (out.size() > kMaxRender) return;
        if (!first) out.push_back(',');
        first = false;
        dump(Json(k));
        out.push_back(':');
        RenderBounded(child, depth + 1, out);
      }
      out.push_back('}');
      return;
    }
    case Json::value_t::array: {
      if (depth >= 4 && !v.empty()) {
        out += "[...]";
        return;
      }
      out.push_back('[');
      for (size_t i = 0; i < v.size(); ++i) {
        if (out.size() > kMaxRender) return;
        if (i > 0) out.push_back(',');
        RenderBounded(v[i], depth + 1, out);
      }
      out.push_back(']');
      return;
    }
    case Json::value_t::number_float: {
      double d = v.get<double>();
      if (std::isnan(d)) {
        out += ".nan";
      } else if (std::isinf(d)) {
        out += d > 0 ? ".inf" : "-.inf";
      } else {
        dump(v);
      }
      return;
    }
    default:
      dump(v);
  }
}

}  // namespace

std::string RenderForError(const Json* value) {
  if (value == nullptr) return "nothing";
  std::string s;
  RenderBounded(*value, 0, s);
  if (s.size() > kMaxRender) {
    s.resize(kMaxRender - 3);
    // Do not cut a UTF-8 sequence in half.
    while (!s.empty() && (static_cast<unsigned char>(s.back()) & 0xC0) == 0x80) s.pop_back();
    if (!s.empty() && static_cast<unsigned char>(s.back()) >= 0xC0) s.pop_back();
    s += "...";
  }
  return s;
}

Error FieldError(const FieldPath& path, std::string_view message) {
  if (path.IsRoot()) return Error(Error::Code::kInvalidArgument, std::string(message));
  return Error(Error::Code::kInvalidArgument, fmt::format("{}: {}", path.ToString(), message));
}

Error TypeError(const FieldPath& path, std::string_view expected, const Json* got) {
  return FieldError(path, fmt::format("expected {}, got {}", expected, RenderForError(got)));
}

Error EnumError(const FieldPath& path, std::span<const std::string_view> names, const Json* got) {
  std::string expected = "one of ";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) expected += ", ";
    fmt::format_to(std::back_inserter(expected), "\"{}\"", names[i]);
  }
  return TypeError(path, expected, got);
}

const Json* Find(const Json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  const auto& members = obj.get_ref<const Json::object_t&>();
  // Most objects a decoder reads have a few members, and it asks for every field it knows: a
  // scan that compares lengths first calls memcmp far less than the tree's descent.
  if (members.size() <= 8) {
    for (const auto& [name, value] : members) {
      if (name.size() == key.size() && name == key) return value.is_null() ? nullptr : &value;
    }
    return nullptr;
  }
  auto it = members.find(key);
  if (it == members.end() || it->second.is_null()) return nullptr;
  return &it->second;
}

const Json& EmptyObject() {
  static const Json* const kEmpty = new Json(Json::object());
  return *kEmpty;
}

const Json& EmptyArray() {
  static const Json* const kEmpty = new Json(Json::array());
  return *kEmpty;
}

Result<const Json*> ReadObject(const Json& obj, std::string_view key, const FieldPath& path) {
  const Json* v = Find(obj, key);
  if (v == nullptr) return &EmptyObject();
  if (!v->is_object()) return std::unexpected(TypeError(path.Key(key), "an object", v));
  return v;
}

Result<const Json*> ReadArray(const Json& obj, std::string_view key, const FieldPath& path) {
  const Json* v = Find(obj, key);
  if (v == nullptr) return &EmptyArray();
  if (!v->is_array()) return std::unexpected(TypeError(path.Key(key), "an array", v));
  return v;
}

Result<void> ReadString(const Json& obj, std::string_view key, const FieldPath& path,
                        std::string& out) {
  const Json* v = Find(obj, key);
  if (v == nullptr) return {};
  if (!v->is_string()) return std::unexpected(TypeError(path.Key(key), "a string", v));
  out = v->get_ref<const std::string&>();
  return {};
}

Result<void> ReadBool(const Json& obj, std::string_view key, const FieldPath& path, bool& out) {
  const Json* v = Find(obj, key);
  if (v == nullptr) return {};
  if (!v->is_boolean()) return std::unexpected(TypeError(path.Key(key), "true or false", v));
  out = v->get<bool>();
  return {};
}

Result<void> ReadInt32(const Json& obj, std::string_view key, const FieldPath& path,
                       std::optional<int32_t>& out) {
  const Json* v = Find(obj, key);
  if (v == nullptr) return {};
  int64_t n = 0;
  if (!IntegralValue(*v, n)) return std::unexpected(TypeError(path.Key(key), "an integer", v));
  if (n < std::numeric_limits<int32_t>::min() || n > std::numeric_limits<int32_t>::max()) {
    return std::unexpected(TypeError(path.Key(key), "a 32-bit integer", v));
  }
  out = static_cast<int32_t>(n);
  return {};
}

Result<void> ReadInt32(const Json& obj, std::string_view key, const FieldPath& path, int32_t& out) {
  std::optional<int32_t> v;
  TIDEPOOL_RETURN_IF_ERROR(ReadInt32(obj, key, path, v));
  if (v) out = *v;
  return {};
}

Result<void> ReadInt64(const Json& obj, std::string_view key, const FieldPath& path,
                       std::optional<int64_t>& out) {
  const Json* v = Find(obj, key);
  if (v == nullptr) return {};
  int64_t n = 0;
  if (!IntegralValue(*v, n)) return std::unexpected(TypeError(path.Key(key), "an integer", v));
  out = n;
  return {};
}

Result<void> ReadTime(const Json& obj, std::string_view key, const FieldPath& path,
                      std::optional<Time>& out) {
  const Json* v = Find(obj, key);
  if (v == nullptr) return {};
  if (v->is_string()) {
    auto t = ParseRfc3339(v->get_ref<const std::string&>());
    if (t) {
      out = *t;
      return {};
    }
  }
  return std::unexpected(TypeError(path.Key(key), "an RFC 3339 time", v));
}

Result<void> ReadStringMap(const Json& obj, std::string_view key, const FieldPath& path,
                           model::Labels& out) {
  const Json* v = Find(obj, key);
  if (v == nullptr) return {};
  FieldPath map_path = path.Key(key);
  if (!v->is_object()) return std::unexpected(TypeError(map_path, "an object", v));
  out.clear();
  for (const auto& [k, value] : v->items()) {
    if (!value.is_string()) {
      return std::unexpected(TypeError(map_path.Key(k), "a string", &value));
    }
    out.emplace(k, value.get_ref<const std::string&>());
  }
  return {};
}

Result<void> ReadStringList(const Json& obj, std::string_view key, const FieldPath& path,
                            std::vector<std::string>& out) {
  const Json* v = Find(obj, key);
  if (v == nullptr) return {};
  FieldPath list_path = path.Key(key);
  if (!v->is_array()) return std::unexpected(TypeError(list_path, "an array of strings", v));
  out.clear();
  out.reserve(v->size());
  for (size_t i = 0; i < v->size(); ++i) {
    const Json& item = (*v)[i];
    if (!item.is_string()) return std::unexpected(TypeError(list_path.Index(i), "a string", &item));
    out.push_back(item.get_ref<const std::string&>());
  }
  return {};
}

Result<model::Quantity> QuantityFromJson(const Json& value, const FieldPath& path) {
  std::optional<Result<model::Quantity>> parsed;
  switch (value.type()) {
    case Json::value_t::string:
      parsed = model::Quantity::Parse(value.get_ref<const std::string&>());
      break;
    case Json::value_t::number_integer:
      parsed = model::Quantity::Parse(fmt::format("{}", value.get<int64_t>()));
      break;
    case Json::value_t::number_unsigned:
      parsed = model::Quantity::Parse(fmt::format("{}", value.get<uint64_t>()));
      break;
    case Json::value_t::number_float: {
      double d = value.get<double>();
      if (!std::isfinite(d)) break;
      // Fixed notation, shortest round trip: 0.1 -> "0.1", 1e-05 -> "0.00001", never an
      // exponent. The largest double needs 309 digits.
      char buf[400];
      auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::fixed);
      if (ec == std::errc()) parsed = model::Quantity::Parse(std::string_view(buf, end - buf));
      break;
    }
    default:
      break;
  }
  if (!parsed || !*parsed) return std::unexpected(TypeError(path, "a quantity", &value));
  return std::move(**parsed);
}

Result<void> ReadResourceList(const Json& obj, std::string_view key, const FieldPath& path,
                              model::Resources& out, const Json* except) {
  const Json* v = Find(obj, key);
  if (v == nullptr) return {};
  FieldPath list_path = path.Key(key);
  if (!v->is_object()) return std::unexpected(TypeError(list_path, "an object", v));
  for (const auto& [name, value] : v->items()) {
    if (value.is_null()) continue;  // Go reads a null quantity as absent
    FieldPath entry_path = list_path.Key(name);
    TIDEPOOL_ASSIGN_OR_RETURN(model::Quantity q, QuantityFromJson(value, entry_path));
    if (q.Sign() < 0) {
      return std::unexpected(TypeError(entry_path, "a non-negative quantity", &value));
    }
    if (except != nullptr && Find(*except, name) != nullptr) continue;
    out.SetQuantity(model::InternResource(name), q);
  }
  return {};
}

}  // namespace tidepool::kube::codec
