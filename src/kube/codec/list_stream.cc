#include "kube/codec/list_stream.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <string>
#include <utility>
#include <vector>

namespace tidepool::kube::codec {
namespace {

namespace od = simdjson::ondemand;

// One value of simdjson's on-demand reader as the Json tree nlohmann's reader would build: an
// integer that is not negative is unsigned, as nlohmann reads it, and a repeated key keeps its
// last value. False on anything simdjson rejects (the ordinary reader then words the error).
bool ToJson(od::value v, Json& out);

bool ObjectToJson(od::object object, Json& out) {
  out = Json::object();
  for (auto field : object) {
    std::string_view key;
    od::value value;
    if (field.unescaped_key().get(key) || field.value().get(value)) return false;
    if (!ToJson(value, out[std::string(key)])) return false;
  }
  return true;
}

bool NumberToJson(od::value v, Json& out) {
  od::number_type type;
  if (v.get_number_type().get(type)) return false;
  switch (type) {
    case od::number_type::signed_integer: {
      int64_t i = 0;
      if (v.get_int64().get(i)) return false;
      out = i >= 0 ? Json(static_cast<uint64_t>(i)) : Json(i);
      return true;
    }
    case od::number_type::unsigned_integer: {
      uint64_t u = 0;
      if (v.get_uint64().get(u)) return false;
      out = u;
      return true;
    }
    case od::number_type::floating_point_number: {
      double d = 0;
      if (v.get_double().get(d)) return false;
      out = d;
      return true;
    }
  }
  return false;
}

bool ToJson(od::value v, Json& out) {
  od::json_type type;
  if (v.type().get(type)) return false;
  switch (type) {
    case od::json_type::object: {
      od::object object;
      return !v.get_object().get(object) && ObjectToJson(object, out);
    }
    case od::json_type::array: {
      od::array array;
      if (v.get_array().get(array)) return false;
      out = Json::array();
      for (auto element : array) {
        od::value item;
        if (element.get(item)) return false;
        Json j;
        if (!ToJson(item, j)) return false;
        out.push_back(std::move(j));
      }
      return true;
    }
    case od::json_type::number:
      return NumberToJson(v, out);
    case od::json_type::string: {
      std::string_view text;
      if (v.get_string().get(text)) return false;
      out = std::string(text);
      return true;
    }
    case od::json_type::boolean: {
      bool b = false;
      if (v.get_bool().get(b)) return false;
      out = b;
      return true;
    }
    case od::json_type::null: {
      bool null = false;
      if (v.is_null().get(null) || !null) return false;
      out = nullptr;
      return true;
    }
  }
  return false;
}

bool HasKindAndVersion(const Json& item) {
  return item.is_object() && Find(item, "kind") != nullptr && Find(item, "apiVersion") != nullptr;
}

}  // namespace

bool StreamJsonList(std::string_view text, std::string_view source,
                    const std::function<Result<void>(SourcedDocument&&)>& f,
                    const OnListProgress& progress, const std::function<void(size_t)>& expect) {
  if (!LooksLikeJson(text)) return false;
  const char* at = text.data();
  size_t items = 0;
  auto report = [&] {
    if (progress) progress({source, static_cast<size_t>(at - text.data()), text.size(), ++items});
  };
  auto hand_on = [&](std::vector<SourcedDocument>& docs) {
    for (SourcedDocument& d : docs)
      if (!f(std::move(d))) return false;
    return true;
  };
  std::vector<std::pair<Json, size_t>> waiting;  // typed list items without kind or apiVersion
  auto deliver = [&](Json&& item, size_t i) {
    report();
    if (!HasKindAndVersion(item)) {
      waiting.emplace_back(std::move(item), i);
      return true;
    }
    std::vector<SourcedDocument> docs;
    // Items that carry their own kind and apiVersion take nothing from the list.
    return ExpandListItem(std::move(item), fmt::format("document 1, items[{}]", i), 1, "List",
                          nullptr, source, docs) &&
           hand_on(docs);
  };
  // The List's own members, its items array kept empty.
  Json root = Json::object();
  simdjson::padded_string padded(text);
  od::parser parser;
  od::document doc;
  od::object object;
  if (parser.iterate(padded).get(doc) || doc.get_object().get(object)) return false;
  for (auto field : object) {
    std::string_view key;
    od::value value;
    od::json_type type;
    if (field.unescaped_key().get(key) || field.value().get(value) || value.type().get(type))
      return false;
    if (key != "items" || type != od::json_type::array) {
      if (!ToJson(value, root[std::string(key)])) return false;
      continue;
    }
    root["items"] = Json::array();
    od::array items;
    if (value.get_array().get(items)) return false;
    size_t count = 0;
    if (expect && !items.count_elements().get(count)) expect(count);
    size_t i = 0;
    for (auto element : items) {
      od::value v;
      Json item;
      if (element.get(v) || !ToJson(v, item)) return false;
      const char* location = nullptr;
      if (!doc.current_location().get(location)) at = text.data() + (location - padded.data());
      if (!deliver(std::move(item), i++)) return false;
    }
  }
  // A token after the object: not one JSON value.
  const char* rest = nullptr;
  if (!doc.current_location().get(rest)) return false;
  at = text.data() + text.size();
  std::string list_kind;
  if (!IsListKind(root, list_kind)) return false;
  Json api_version;
  if (const Json* v = Find(root, "apiVersion")) api_version = *v;
  // The List itself (its items member emptied): an error of its own stops here.
  std::vector<SourcedDocument> docs;
  if (!ExpandDocument(std::move(root), "document 1", 0, source, docs)) return false;
  for (auto& [item, i] : waiting) {
    if (!ExpandListItem(std::move(item), fmt::format("document 1, items[{}]", i), 1, list_kind,
                        api_version.is_null() ? nullptr : &api_version, source, docs))
      return false;
  }
  return hand_on(docs);
}

}  // namespace tidepool::kube::codec
