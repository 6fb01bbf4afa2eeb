#include "kube/config/yaml_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <system_error>

#include "kube/codec/documents.h"

namespace tidepool::kube::config {
namespace {

constexpr std::string_view kIntTag = "tag:yaml.org,2002:int";
constexpr std::string_view kFloatTag = "tag:yaml.org,2002:float";
constexpr std::string_view kBoolTag = "tag:yaml.org,2002:bool";
constexpr size_t kMaxRender = 60;

bool IsPlainKey(std::string_view key) {
  if (key.empty()) return false;
  return std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool IsAlnum(char c) { return IsLowerAlnum(c) || (c >= 'A' && c <= 'Z'); }

// 1-based line of a node, or `fallback` when yaml-cpp has no position for it.
int LineOf(const YAML::Node& node, int fallback) {
  YAML::Mark m = node.Mark();
  return m.is_null() || m.line < 0 ? fallback : m.line + 1;
}

// Parses an optionally signed decimal integer; false when `text` is anything else. Sets
// `overflow` (and returns true) when the digits do not fit in int64.
bool ParseInteger(std::string_view text, int64_t& out, bool& overflow) {
  overflow = false;
  if (!text.empty() && text[0] == '+') text.remove_prefix(1);
  if (text.empty() || text == "-") return false;
  size_t digits_from = text[0] == '-' ? 1 : 0;
  for (size_t i = digits_from; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
  }
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  if (ec == std::errc::result_out_of_range) {
    overflow = true;
    out =
        text[0] == '-' ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
    return true;
  }
  return ec == std::errc() && ptr == text.data() + text.size();
}

// Parses a finite decimal number ("0.5", "1", "-2", "1e3", ".5"); false for anything else.
bool ParseNumber(std::string_view text, double& out) {
  if (!text.empty() && text[0] == '+') text.remove_prefix(1);
  if (text.empty()) return false;
  // from_chars also reads "inf" and "nan"; YAML spells those .inf/.nan and we want neither.
  for (char c : text) {
    bool ok = (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E';
    if (!ok) return false;
  }
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size() && std::isfinite(out);
}

bool IsBoolText(std::string_view s) {
  return s == "true" || s == "True" || s == "TRUE" || s == "false" || s == "False" || s == "FALSE";
}

// Levenshtein distance, case-insensitive (config keys are short).
size_t EditDistance(std::string_view a, std::string_view b) {
  auto lower = [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; };
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t subst = prev[j - 1] + (lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, subst});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

std::string_view ClosestName(std::string_view name, std::span<const std::string_view> candidates) {
  std::string_view best;
  size_t best_distance = std::numeric_limits<size_t>::max();
  for (std::string_view c : candidates) {
    size_t d = EditDistance(name, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  size_t budget = name.size() >= 6 ? 2 : 1;
  return best_distance <= budget ? best : std::string_view();
}

std::string JoinPath(std::string_view path, std::string_view key) {
  if (IsPlainKey(key)) {
    return path.empty() ? std::string(key) : fmt::format("{}.{}", path, key);
  }
  return fmt::format("{}[{}]", path, key.empty() ? "\"\"" : key);
}

YamlValue YamlValue::Root(const YAML::Node& node, std::string_view source) {
  return YamlValue(node, source, "", LineOf(node, 1));
}

bool YamlValue::IsPlainScalar() const { return node_.IsScalar() && node_.Tag() == "?"; }

YamlValue YamlValue::Member(std::string_view key, const YAML::Node& node, int line) const {
  return YamlValue(node, source_, JoinPath(path_, key), line);
}

YamlValue YamlValue::Item(size_t i, const YAML::Node& node) const {
  // An empty item ("- " alone) has no useful mark of its own; blame the list.
  int line = node.IsNull() ? line_ : LineOf(node, line_);
  return YamlValue(node, source_, fmt::format("{}[{}]", path_, i), line);
}

Error YamlValue::MakeError(std::string_view message) const {
  if (path_.empty()) {
    return Error(Error::Code::kInvalidArgument, fmt::format("{}:{}: {}", source_, line_, message));
  }
  return Error(Error::Code::kInvalidArgument,
               fmt::format("{}:{}: {}: {}", source_, line_, path_, message));
}

Error YamlValue::Expected(std::string_view what) const {
  return MakeError(fmt::format("expected {}, got {}", what, Render()));
}

std::string YamlValue::Render() const {
  if (IsNull()) return "nothing";
  if (node_.IsMap()) return "a map";
  if (node_.IsSequence()) return "a list";
  const std::string& text = node_.Scalar();
  if (IsPlainScalar()) {
    int64_t i;
    double d;
    bool overflow;
    if (ParseInteger(text, i, overflow) || ParseNumber(text, d) || IsBoolText(text)) return text;
  }
  std::string shown = text.size() > kMaxRender ? text.substr(0, kMaxRender) + "..." : text;
  std::string out = "\"";
  for (char c : shown) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
  return out;
}

Result<std::string> YamlValue::ReadString() const {
  if (IsNull() || !node_.IsScalar()) return std::unexpected(Expected("a string"));
  return node_.Scalar();
}

Result<bool> YamlValue::ReadBool() const {
  if (!IsNull() && node_.IsScalar() && (node_.Tag() == "?" || node_.Tag() == kBoolTag)) {
    const std::string& s = node_.Scalar();
    if (s == "true" || s == "True" || s == "TRUE") return true;
    if (s == "false" || s == "False" || s == "FALSE") return false;
  }
  return std::unexpected(Expected("true or false"));
}

Result<int64_t> YamlValue::ReadInt(int64_t lo, int64_t hi, std::string_view what) const {
  int64_t v = 0;
  bool overflow = false;
  if (IsNull() || !node_.IsScalar() || (node_.Tag() != "?" && node_.Tag() != kIntTag) ||
      !ParseInteger(node_.Scalar(), v, overflow)) {
    return std::unexpected(Expected(what));
  }
  if (v < lo || (overflow && v < 0)) {
    return std::unexpected(Expected(fmt::format("{} (at least {})", what, lo)));
  }
  if (v > hi || overflow) {
    return std::unexpected(Expected(fmt::format("{} (at most {})", what, hi)));
  }
  return v;
}

Result<double> YamlValue::ReadNumber(double lo, double hi, std::string_view what) const {
  double v = 0;
  if (IsNull() || !node_.IsScalar() ||
      (node_.Tag() != "?" && node_.Tag() != kIntTag && node_.Tag() != kFloatTag) ||
      !ParseNumber(node_.Scalar(), v) || v < lo || v > hi) {
    return std::unexpected(Expected(what));
  }
  return v;
}

Result<Duration> YamlValue::ReadDuration(bool allow_zero) const {
  if (IsNull() || !node_.IsScalar()) {
    return std::unexpected(Expected("a duration such as \"10m\" or \"1h30m\""));
  }
  auto d = ParseDuration(node_.Scalar());
  if (!d) return std::unexpected(MakeError(d.error().message()));
  if (d->count() < 0) return std::unexpected(Expected("a non-negative duration"));
  if (d->count() == 0 && !allow_zero) return std::unexpected(Expected("a positive duration"));
  return *d;
}

Result<model::Quantity> YamlValue::ReadQuantity() const {
  if (IsNull() || !node_.IsScalar()) {
    return std::unexpected(Expected("a quantity such as \"4\", \"500m\" or \"16Gi\""));
  }
  auto q = model::Quantity::Parse(node_.Scalar());
  if (!q) return std::unexpected(MakeError(q.error().message()));
  if (q->Sign() < 0) return std::unexpected(Expected("a non-negative quantity"));
  return *q;
}

Result<size_t> YamlValue::ReadEnum(std::span<const std::string_view> names) const {
  if (!IsNull() && node_.IsScalar()) {
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == node_.Scalar()) return i;
    }
  }
  std::string list;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) list += ", ";
    fmt::format_to(std::back_inserter(list), "\"{}\"", names[i]);
  }
  return std::unexpected(Expected(fmt::format("one of {}", list)));
}

Result<std::vector<YamlValue>> YamlValue::ReadList() const {
  std::vector<YamlValue> items;
  if (IsNull()) return items;
  if (!node_.IsSequence()) return std::unexpected(Expected("a list"));
  items.reserve(node_.size());
  size_t i = 0;
  for (const auto& item : node_) {
    items.push_back(Item(i, item));
    ++i;
  }
  return items;
}

Result<std::vector<std::string>> YamlValue::ReadStringList() const {
  TIDEPOOL_ASSIGN_OR_RETURN(auto items, ReadList());
  std::vector<std::string> out;
  out.reserve(items.size());
  for (const auto& item : items) {
    TIDEPOOL_ASSIGN_OR_RETURN(auto s, item.ReadString());
    out.push_back(std::move(s));
  }
  return out;
}

Result<YamlMap> YamlMap::Read(const YamlValue& v, std::string_view expected) {
  YamlMap map(v);
  if (v.IsNull()) return map;
  if (!v.IsMap()) return std::unexpected(v.Expected(expected));
  for (const auto& entry : v.node()) {
    // Copies: yaml-cpp's iterator hands out a temporary pair, so a reference would dangle.
    const YAML::Node key = entry.first;
    int key_line = LineOf(key, v.line());
    if (!key.IsScalar() || key.IsNull()) {
      YamlValue at(key, v.source(), v.path(), key_line);
      return std::unexpected(at.Expected("a string key"));
    }
    const std::string& name = key.Scalar();
    YamlValue member = v.Member(name, entry.second, key_line);
    for (const auto& e : map.entries_) {
      if (e.key == name) {
        return std::unexpected(member.MakeError(
            fmt::format("duplicate key (first given on line {})", e.value.line())));
      }
    }
    map.entries_.push_back(Entry{name, std::move(member)});
  }
  return map;
}

Result<void> YamlMap::CheckKeys(std::span<const std::string_view> allowed) const {
  for (const auto& e : entries_) {
    if (std::find(allowed.begin(), allowed.end(), e.key) != allowed.end()) continue;
    std::string list;
    for (size_t i = 0; i < allowed.size(); ++i) {
      if (i > 0) list += ", ";
      list += allowed[i];
    }
    std::string message = fmt::format("unknown key (expected one of: {})", list);
    std::string_view best = ClosestName(e.key, allowed);
    if (!best.empty()) message += fmt::format("; did you mean \"{}\"?", best);
    return std::unexpected(e.value.MakeError(message));
  }
  return {};
}

const YamlValue* YamlMap::Find(std::string_view key) const {
  for (const auto& e : entries_) {
    if (e.key == key) return &e.value;
  }
  return nullptr;
}

Result<YamlValue> YamlMap::Require(std::string_view key, std::string_view expected) const {
  if (const YamlValue* v = Find(key)) return *v;
  YamlValue missing = self_.Member(key, YAML::Node(), self_.line());
  return std::unexpected(
      missing.MakeError(fmt::format("required key is missing (expected {})", expected)));
}

Result<YAML::Node> LoadYamlDocument(std::string_view text, std::string_view source,
                                    std::string_view what) {
  try {
    std::vector<YAML::Node> docs = codec::LoadAllYaml(std::string(text));
    if (docs.size() > 1) {
      return InvalidArgument("{}:{}: expected a single YAML document ({}), found a second one",
                             source, LineOf(docs[1], 1), what);
    }
    if (docs.empty() || docs[0].IsNull()) {
      return InvalidArgument("{}: the document is empty (expected {})", source, what);
    }
    return docs[0];
  } catch (const YAML::Exception& e) {
    if (e.mark.is_null() || e.mark.line < 0) {
      return InvalidArgument("{}: invalid YAML: {}", source, e.msg);
    }
    return InvalidArgument("{}:{}: invalid YAML at column {}: {}", source, e.mark.line + 1,
                           e.mark.column + 1, e.msg);
  } catch (const std::exception& e) {
    return InvalidArgument("{}: cannot parse YAML: {}", source, e.what());
  }
}

bool IsDns1123Label(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  if (!IsLowerAlnum(s.front()) || !IsLowerAlnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return IsLowerAlnum(c) || c == '-'; });
}

namespace {

// A DNS-1123 subdomain: dot-separated DNS-1123 labels, <= 253 characters in all.
bool IsDns1123Subdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  while (true) {
    size_t dot = s.find('.', start);
    std::string_view label = s.substr(start, dot == std::string_view::npos ? s.npos : dot - start);
    if (!IsDns1123Label(label)) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

bool IsNamePart(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  if (!IsAlnum(s.front()) || !IsAlnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return IsAlnum(c) || c == '-' || c == '_' || c == '.'; });
}

}  // namespace

bool IsQualifiedName(std::string_view s) {
  size_t slash = s.find('/');
  if (slash == std::string_view::npos) return IsNamePart(s);
  return IsDns1123Subdomain(s.substr(0, slash)) && IsNamePart(s.substr(slash + 1));
}

bool IsResourceName(std::string_view s) {
  if (!IsQualifiedName(s)) return false;
  if (s.find('/') != std::string_view::npos) return true;
  return s == "cpu" || s == "memory" || s == "ephemeral-storage" || s == "pods" || s == "storage" ||
         s.starts_with("hugepages-") || s.starts_with("attachable-volumes-");
}

bool IsLabelValue(std::string_view s) { return s.empty() || IsNamePart(s); }

}  // namespace tidepool::kube::config
