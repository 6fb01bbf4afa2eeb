// Lenient readers of cloud API JSON (ARM bodies, Cluster API objects): a field of the expected
// type, or an empty value, for the many optional properties an API may leave out.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace tidepool::cloud {

// j[key] when j is an object and the field is a string; "" otherwise.
inline std::string StringField(const nlohmann::json& j, std::string_view key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

// j[key] when j is an object and the field is an array; an empty array otherwise.
inline const nlohmann::json& ArrayField(const nlohmann::json& j, std::string_view key) {
  static const nlohmann::json kEmpty = nlohmann::json::array();
  if (!j.is_object()) return kEmpty;
  auto it = j.find(key);
  return it != j.end() && it->is_array() ? *it : kEmpty;
}

// j[key] when j is an object and the field is an object; an empty object otherwise.
inline const nlohmann::json& ObjectField(const nlohmann::json& j, std::string_view key) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  if (!j.is_object()) return kEmpty;
  auto it = j.find(key);
  return it != j.end() && it->is_object() ? *it : kEmpty;
}

}  // namespace tidepool::cloud
