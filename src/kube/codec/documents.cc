#include "kube/codec/documents.h"

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <utility>

#include "kube/codec/objects.h"

namespace tidepool::kube::codec {
namespace {

// Deeper nesting than this is not a Kubernetes object; the limit keeps recursion (and a
// self-referencing alias) from exhausting the stack.
constexpr int kMaxDepth = 200;
// Lists nest (a List of Lists) only a little in practice.
constexpr int kMaxListDepth = 8;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsHexDigit(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool AllOf(std::string_view s, bool (*pred)(char)) {
  if (s.empty()) return false;
  for (char c : s)
    if (!pred(c)) return false;
  return true;
}
bool IsOctalDigit(char c) { return c >= '0' && c <= '7'; }

// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? without the sign.
bool IsCoreFloat(std::string_view s) {
  size_t i = 0;
  size_t int_digits = 0;
  while (i < s.size() && IsDigit(s[i])) ++i, ++int_digits;
  size_t frac_digits = 0;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && IsDigit(s[i])) ++i, ++frac_digits;
  }
  if (int_digits == 0 && frac_digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    size_t exp_digits = 0;
    while (i < s.size() && IsDigit(s[i])) ++i, ++exp_digits;
    if (exp_digits == 0) return false;
  }
  return i == s.size();
}

std::optional<double> ToDouble(std::string_view s) {
  double d = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
  if (ptr != s.data() + s.size()) return std::nullopt;
  // Out of range: from_chars leaves d unset; YAML means "a very large/small number".
  if (ec == std::errc::result_out_of_range) {
    bool tiny = false;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == 'e' || s[i] == 'E') {
        tiny = i + 1 < s.size() && s[i + 1] == '-';
        break;
      }
    }
    return tiny ? 0.0 : std::numeric_limits<double>::infinity();
  }
  if (ec != std::errc()) return std::nullopt;
  return d;
}

Error YamlError(std::string_view source, const YAML::Mark& mark, std::string_view message) {
  if (mark.is_null() || mark.line < 0) {
    return Error(Error::Code::kInvalidArgument, fmt::format("{}: {}", source, message));
  }
  return Error(Error::Code::kInvalidArgument, fmt::format("{}: line {}, column {}: {}", source,
                                                          mark.line + 1, mark.column + 1, message));
}

class YamlConverter {
 public:
  YamlConverter(std::string_view source, size_t budget) : source_(source), budget_(budget) {}

  Result<Json> Convert(const YAML::Node& node, int depth) {
    if (depth > kMaxDepth) {
      return std::unexpected(
          YamlError(source_, node.Mark(), fmt::format("nested deeper than {} levels", kMaxDepth)));
    }
    if (budget_ == 0) {
      return std::unexpected(
          YamlError(source_, node.Mark(), "document too large (aliases expand to too many nodes)"));
    }
    --budget_;
    switch (node.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null:
        return Json(nullptr);
      case YAML::NodeType::Scalar:
        return Scalar(node);
      case YAML::NodeType::Sequence: {
        Json arr = Json::array();
        for (const auto& item : node) {
          TIDEPOOL_ASSIGN_OR_RETURN(Json v, Convert(item, depth + 1));
          arr.push_back(std::move(v));
        }
        return arr;
      }
      case YAML::NodeType::Map:
        return Map(node, depth);
    }
    return Json(nullptr);
  }

 private:
  static Json Scalar(const YAML::Node& node) {
    const std::string& tag = node.Tag();
    const std::string& text = node.Scalar();
    // "!" marks a non-plain scalar (quoted, literal or folded block): always a string.
    if (tag == "?") return ResolvePlainScalar(text);
    static constexpr std::string_view kCore = "tag:yaml.org,2002:";
    if (tag.starts_with(kCore)) {
      std::string_view type = std::string_view(tag).substr(kCore.size());
      if (type == "null") return Json(nullptr);
      if (type == "int" || type == "float" || type == "bool") return ResolvePlainScalar(text);
    }
    return Json(text);
  }

  static bool IsMergeKey(const YAML::Node& key) {
    return key.IsScalar() && key.Tag() == "?" && key.Scalar() == "<<";
  }

  Result<Json> Map(const YAML::Node& node, int depth) {
    Json obj = Json::object();
    // Explicit keys first; merge keys (`<<: *base`) only fill in keys not set explicitly,
    // wherever they appear in the mapping.
    // yaml-cpp's iterators hand out temporaries: bind each entry by value, never `it->first`.
    for (const auto& entry : node) {
      const YAML::Node& key = entry.first;
      if (IsMergeKey(key)) continue;
      if (key.IsMap() || key.IsSequence()) {
        return std::unexpected(YamlError(source_, key.Mark(), "mapping keys must be scalars"));
      }
      const std::string& name = key.Scalar();
      if (obj.contains(name)) {
        return std::unexpected(
            YamlError(source_, key.Mark(), fmt::format("duplicate key \"{}\"", name)));
      }
      TIDEPOOL_ASSIGN_OR_RETURN(Json v, Convert(entry.second, depth + 1));
      obj.emplace(name, std::move(v));
    }
    for (const auto& entry : node) {
      if (!IsMergeKey(entry.first)) continue;
      const YAML::Node& value = entry.second;
      std::vector<YAML::Node> sources;
      if (value.IsMap()) {
        sources.push_back(value);
      } else if (value.IsSequence()) {
        for (const auto& s : value) sources.push_back(s);
      }
      for (const auto& s : sources) {
        if (!s.IsMap()) {
          return std::unexpected(
              YamlError(source_, s.Mark(), "a merge key (<<) takes a mapping or a list of them"));
        }
      }
      if (sources.empty()) {
        return std::unexpected(
            YamlError(source_, value.Mark(), "a merge key (<<) takes a mapping or a list of them"));
      }
      // Earlier mappings in a merge list take precedence over later ones.
      for (const auto& s : sources) {
        TIDEPOOL_ASSIGN_OR_RETURN(Json merged, Convert(s, depth + 1));
        for (auto& [k, v] : merged.items()) {
          if (!obj.contains(k)) obj.emplace(k, std::move(v));
        }
      }
    }
    return obj;
  }

  std::string_view source_;
  size_t budget_;
};

}  // namespace

bool IsListKind(const Json& doc, std::string& kind_out) {
  const Json* kind = Find(doc, "kind");
  if (kind == nullptr || !kind->is_string()) return false;
  const auto& k = kind->get_ref<const std::string&>();
  if (k == "List") {
    kind_out = k;
    return true;
  }
  if (k.size() > 4 && k.ends_with("List") && doc.contains("items")) {
    kind_out = k;
    return true;
  }
  return false;
}

Result<void> ExpandDocument(Json doc, std::string origin, int depth, std::string_view source,
                            std::vector<SourcedDocument>& out) {
  std::string list_kind;
  if (!doc.is_object() || !IsListKind(doc, list_kind)) {
    out.push_back({std::move(doc), std::move(origin)});
    return {};
  }
  if (depth >= kMaxListDepth) {
    return InvalidArgument("{}: {}: Lists nested deeper than {} levels", source, origin,
                           kMaxListDepth);
  }
  const Json* items = Find(doc, "items");
  if (items == nullptr) return {};  // an empty list
  if (!items->is_array()) {
    return std::unexpected(
        TypeError(FieldPath().Key("items"), "an array", items).Wrap(origin).Wrap(source));
  }
  const Json* api_version = Find(doc, "apiVersion");
  Json taken = std::move(doc["items"]);
  for (size_t i = 0; i < taken.size(); ++i) {
    TIDEPOOL_RETURN_IF_ERROR(ExpandListItem(std::move(taken[i]),
                                            fmt::format("{}, items[{}]", origin, i), depth + 1,
                                            list_kind, api_version, source, out));
  }
  return {};
}

Result<void> ExpandListItem(Json item, std::string origin, int depth, const std::string& list_kind,
                            const Json* api_version, std::string_view source,
                            std::vector<SourcedDocument>& out) {
  // Items of a typed list (PodList) carry no kind of their own.
  if (list_kind != "List" && item.is_object()) {
    if (Find(item, "kind") == nullptr) item["kind"] = list_kind.substr(0, list_kind.size() - 4);
    if (Find(item, "apiVersion") == nullptr && api_version != nullptr) {
      item["apiVersion"] = *api_version;
    }
  }
  return ExpandDocument(std::move(item), std::move(origin), depth, source, out);
}

namespace {

// Expands one top-level document: a top-level array is a sequence of objects.
Result<void> ExpandTop(Json doc, const std::string& origin, std::string_view source,
                       std::vector<SourcedDocument>& out) {
  if (doc.is_null()) return {};  // an empty YAML document
  if (doc.is_array()) {
    for (size_t i = 0; i < doc.size(); ++i) {
      TIDEPOOL_RETURN_IF_ERROR(
          ExpandDocument(std::move(doc[i]), fmt::format("{}, [{}]", origin, i), 0, source, out));
    }
    return {};
  }
  return ExpandDocument(std::move(doc), origin, 0, source, out);
}

Result<std::vector<SourcedDocument>> ParseYaml(std::string_view text, std::string_view source) {
  std::vector<YAML::Node> nodes;
  try {
    nodes = LoadAllYaml(std::string(text));
  } catch (const YAML::Exception& e) {
    return std::unexpected(YamlError(source, e.mark, fmt::format("invalid YAML: {}", e.msg)));
  }
  std::vector<SourcedDocument> out;
  // Every node of the text takes at least a byte or two; only aliases can expand beyond that.
  YamlConverter converter(source, 16 * text.size() + 4096);
  for (size_t i = 0; i < nodes.size(); ++i) {
    TIDEPOOL_ASSIGN_OR_RETURN(Json doc, converter.Convert(nodes[i], 0));
    TIDEPOOL_RETURN_IF_ERROR(
        ExpandTop(std::move(doc), fmt::format("document {}", i + 1), source, out));
  }
  return out;
}

// "SOURCE: invalid JSON: <nlohmann's message without its [json.exception...] prefix>".
Error InvalidJson(std::string_view source, const std::exception& e) {
  // what() is "[json.exception.parse_error.101] parse error at line 3, column 5: ...".
  std::string_view what = e.what();
  if (auto pos = what.find("] "); what.starts_with("[json.exception") && pos != what.npos) {
    what.remove_prefix(pos + 2);
  }
  return InvalidArgument("{}: invalid JSON: {}", source, what).error();
}

Result<Json> ParseJson(std::string_view text, std::string_view source) {
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    return std::unexpected(InvalidJson(source, e));
  } catch (const Json::out_of_range& e) {
    // A number beyond double range ("1e400"): bad input, not an internal error.
    return std::unexpected(InvalidJson(source, e));
  }
}

}  // namespace

// JSON starts with `{` or `[`. So does a YAML flow collection (`{kind: Pod}`), whose first key
// or item is usually unquoted; JSON's is a string, a number, a literal or another bracket.
// Deciding up front (rather than falling back to YAML when JSON fails) keeps the JSON syntax
// error for broken JSON, which YAML would often read as something else.
bool LooksLikeJson(std::string_view text) {
  if (text.empty() || (text[0] != '{' && text[0] != '[')) return false;
  size_t i = text.find_first_not_of(" \t\r\n{[");
  if (i == std::string_view::npos) return true;
  std::string_view rest = text.substr(i);
  char c = rest[0];
  return c == '"' || c == '}' || c == ']' || c == '-' || IsDigit(c) || rest.starts_with("true") ||
         rest.starts_with("false") || rest.starts_with("null");
}

Json ResolvePlainScalar(const std::string& text) {
  std::string_view s = text;
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return Json(nullptr);
  if (s == "true" || s == "True" || s == "TRUE") return Json(true);
  if (s == "false" || s == "False" || s == "FALSE") return Json(false);
  char first = s[0];
  if (!(IsDigit(first) || first == '-' || first == '+' || first == '.')) return Json(text);

  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o')) {
    std::string_view digits = s.substr(2);
    int base = s[1] == 'x' ? 16 : 8;
    if (AllOf(digits, base == 16 ? IsHexDigit : IsOctalDigit)) {
      uint64_t u = 0;
      auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), u, base);
      if (ec == std::errc() && ptr == digits.data() + digits.size()) {
        if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
          return Json(static_cast<int64_t>(u));
        }
        return Json(u);
      }
      return Json(text);  // wider than 64 bits: keep the text
    }
    return Json(text);
  }

  bool negative = first == '-';
  std::string_view unsigned_part = (first == '-' || first == '+') ? s.substr(1) : s;
  if (AllOf(unsigned_part, IsDigit)) {
    // from_chars takes a leading '-' but not '+'.
    std::string_view signed_part = negative ? s : unsigned_part;
    int64_t v = 0;
    auto [ptr, ec] =
        std::from_chars(signed_part.data(), signed_part.data() + signed_part.size(), v);
    if (ec == std::errc() && ptr == signed_part.data() + signed_part.size()) return Json(v);
    if (!negative) {
      uint64_t u = 0;
      auto [uptr, uec] =
          std::from_chars(unsigned_part.data(), unsigned_part.data() + unsigned_part.size(), u);
      if (uec == std::errc() && uptr == unsigned_part.data() + unsigned_part.size()) {
        return Json(u);
      }
    }
    if (auto d = ToDouble(signed_part)) return Json(*d);
    return Json(text);
  }
  if (unsigned_part == ".inf" || unsigned_part == ".Inf" || unsigned_part == ".INF") {
    double inf = std::numeric_limits<double>::infinity();
    return Json(negative ? -inf : inf);
  }
  if (s == ".nan" || s == ".NaN" || s == ".NAN") {
    return Json(std::numeric_limits<double>::quiet_NaN());
  }
  if (IsCoreFloat(unsigned_part)) {
    std::string_view signed_part = negative ? s : unsigned_part;
    if (auto d = ToDouble(signed_part)) return Json(*d);
  }
  return Json(text);
}

namespace {

// Records where each document starts; ignores everything else.
class DocumentStarts final : public YAML::EventHandler {
 public:
  const YAML::Mark& start() const { return start_; }
  void OnDocumentStart(const YAML::Mark& mark) override { start_ = mark; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

 private:
  YAML::Mark start_;
};

}  // namespace

std::vector<YAML::Node> LoadAllYaml(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentStarts starts;
  int previous = -1;
  while (parser.HandleNextDocument(starts)) {
    if (starts.start().pos == previous) {
      throw YAML::ParserException(starts.start(),
                                  "unexpected ',' outside a flow collection ([...] or {...})");
    }
    previous = starts.start().pos;
  }
  return YAML::LoadAll(text);
}

Result<std::vector<SourcedDocument>> ParseSourcedDocuments(std::string_view text,
                                                           std::string_view source) {
  try {
    if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // UTF-8 byte order mark
    if (text.starts_with("\xFF\xFE") || text.starts_with("\xFE\xFF")) {
      return InvalidArgument(
          "{}: the input is UTF-16 encoded (as PowerShell's `>` writes files); convert it to "
          "UTF-8",
          source);
    }
    size_t first = text.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos) return std::vector<SourcedDocument>{};
    if (LooksLikeJson(text.substr(first))) {
      TIDEPOOL_ASSIGN_OR_RETURN(Json json, ParseJson(text, source));
      std::vector<SourcedDocument> out;
      TIDEPOOL_RETURN_IF_ERROR(ExpandTop(std::move(json), "document 1", source, out));
      return out;
    }
    return ParseYaml(text, source);
  } catch (const std::exception& e) {
    return Fail(Error::Code::kInternal, "{}: unexpected error while parsing: {}", source, e.what());
  }
}

Result<std::vector<nlohmann::json>> ParseDocuments(std::string_view text, std::string_view source) {
  TIDEPOOL_ASSIGN_OR_RETURN(auto docs, ParseSourcedDocuments(text, source));
  std::vector<nlohmann::json> out;
  out.reserve(docs.size());
  for (auto& d : docs) out.push_back(std::move(d.value));
  return out;
}

Result<nlohmann::json> YamlToJson(const YAML::Node& node, std::string_view source) {
  try {
    // No text to scale by; ten million nodes is far beyond any configuration.
    YamlConverter converter(source, 10'000'000);
    return converter.Convert(node, 0);
  } catch (const std::exception& e) {
    return Fail(Error::Code::kInternal, "{}: unexpected error while converting YAML: {}", source,
                e.what());
  }
}

}  // namespace tidepool::kube::codec
