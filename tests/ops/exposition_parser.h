// A strict parser of the Prometheus text exposition format 0.0.4, for tests: it rejects what a
// lenient scraper would let pass (bad escapes, interleaved families, non-cumulative buckets).
#pragma once

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace tidepool::ops::testing {

struct ParsedSample {
  std::string name;                           // including _bucket/_sum/_count
  std::map<std::string, std::string> labels;  // unescaped
  double value = 0;
};

struct ParsedFamily {
  std::string name;
  std::string type;  // counter, gauge, histogram, summary, untyped
  std::string help;  // unescaped
  bool has_help = false;
  bool has_type = false;
  std::vector<ParsedSample> samples;
};

struct ParsedExposition {
  std::vector<ParsedFamily> families;  // in order of appearance
  std::string error;                   // empty when the text is valid

  const ParsedFamily* Find(std::string_view name) const {
    for (const auto& f : families)
      if (f.name == name) return &f;
    return nullptr;
  }
  // The value of the sample `name` with exactly `labels`, or nullopt.
  std::optional<double> Value(std::string_view name,
                              const std::map<std::string, std::string>& labels = {}) const {
    for (const auto& f : families)
      for (const auto& s : f.samples)
        if (s.name == name && s.labels == labels) return s.value;
    return std::nullopt;
  }
};

namespace internal {

inline bool IsMetricName(std::string_view s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
          (i > 0 && c >= '0' && c <= '9'))) {
      return false;
    }
  }
  return true;
}

inline bool IsLabelName(std::string_view s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
          (i > 0 && c >= '0' && c <= '9'))) {
      return false;
    }
  }
  return true;
}

// Go's strconv.ParseFloat as Prometheus uses it, plus the format's +Inf/-Inf/NaN spellings.
inline std::optional<double> ParseValue(std::string_view s) {
  if (s == "+Inf" || s == "Inf") return HUGE_VAL;
  if (s == "-Inf") return -HUGE_VAL;
  if (s == "NaN") return NAN;
  if (s.empty()) return std::nullopt;
  std::string_view body = s;
  if (body.front() == '+') body.remove_prefix(1);
  double v = 0;
  auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), v);
  if (ec != std::errc() || end != body.data() + body.size()) return std::nullopt;
  return v;
}

inline std::string_view FamilyOf(std::string_view sample, const std::string& current_type,
                                 std::string_view current) {
  if (current_type == "histogram" || current_type == "summary") {
    for (std::string_view suffix : {"_bucket", "_sum", "_count"}) {
      if (sample.size() > suffix.size() && sample.ends_with(suffix) &&
          sample.substr(0, sample.size() - suffix.size()) == current) {
        return current;
      }
    }
  }
  return sample;
}

}  // namespace internal

inline ParsedExposition ParseExposition(std::string_view text) {
  ParsedExposition out;
  auto fail = [&](size_t line_no, std::string_view line, std::string_view why) {
    out.error = "line " + std::to_string(line_no) + ": " + std::string(why) + ": \"" +
                std::string(line) + "\"";
    return out;
  };
  if (!text.empty() && text.back() != '\n') return fail(0, "", "text does not end with a newline");

  std::set<std::string> closed;  // families whose lines ended (a family may not come back)
  std::set<std::pair<std::string, std::map<std::string, std::string>>> seen_series;
  ParsedFamily* cur = nullptr;
  size_t line_no = 0;
  size_t pos = 0;

  auto start_family = [&](const std::string& name) -> bool {
    if (cur != nullptr && cur->name == name) return true;
    if (closed.contains(name)) return false;
    if (cur != nullptr) closed.insert(cur->name);
    out.families.push_back({name, "untyped", "", false, false, {}});
    cur = &out.families.back();
    return true;
  };

  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (line.empty()) return fail(line_no, line, "empty line");
    if (line.find('\r') != std::string_view::npos) return fail(line_no, line, "carriage return");

    if (line.starts_with("#")) {
      bool help = line.starts_with("# HELP ");
      bool type = line.starts_with("# TYPE ");
      if (!help && !type) return fail(line_no, line, "comment that is neither HELP nor TYPE");
      std::string_view rest = line.substr(7);
      size_t sp = rest.find(' ');
      if (sp == std::string_view::npos) return fail(line_no, line, "no text after the name");
      std::string name(rest.substr(0, sp));
      std::string_view arg = rest.substr(sp + 1);
      if (!internal::IsMetricName(name)) return fail(line_no, line, "invalid metric name");
      if (!start_family(name)) return fail(line_no, line, "family appears twice");
      if (help) {
        if (cur->has_help) return fail(line_no, line, "second HELP");
        std::string h;
        for (size_t i = 0; i < arg.size(); ++i) {
          if (arg[i] != '\\') {
            h += arg[i];
            continue;
          }
          if (++i >= arg.size()) return fail(line_no, line, "dangling backslash in HELP");
          if (arg[i] == '\\') {
            h += '\\';
          } else if (arg[i] == 'n') {
            h += '\n';
          } else {
            return fail(line_no, line, "invalid escape in HELP");
          }
        }
        cur->help = h;
        cur->has_help = true;
      } else {
        static const std::set<std::string_view> kTypes = {"counter", "gauge", "histogram",
                                                          "summary", "untyped"};
        if (!kTypes.contains(arg)) return fail(line_no, line, "unknown TYPE");
        if (!cur->samples.empty()) return fail(line_no, line, "TYPE after samples");
        if (cur->has_type) return fail(line_no, line, "second TYPE");
        cur->type = std::string(arg);
        cur->has_type = true;
      }
      continue;
    }

    // A sample: name[{labels}] value [timestamp]
    size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    std::string name(line.substr(0, i));
    if (!internal::IsMetricName(name)) return fail(line_no, line, "invalid sample name");
    ParsedSample s;
    s.name = name;
    if (i < line.size() && line[i] == '{') {
      ++i;
      bool first = true;
      while (true) {
        if (i >= line.size()) return fail(line_no, line, "unterminated label set");
        if (line[i] == '}') {
          ++i;
          break;
        }
        if (!first) {
          if (line[i] != ',') return fail(line_no, line, "expected ',' between labels");
          ++i;
          if (i < line.size() && line[i] == '}') return fail(line_no, line, "trailing comma");
        }
        first = false;
        size_t eq = line.find('=', i);
        if (eq == std::string_view::npos) return fail(line_no, line, "label without '='");
        std::string lname(line.substr(i, eq - i));
        if (!internal::IsLabelName(lname)) return fail(line_no, line, "invalid label name");
        i = eq + 1;
        if (i >= line.size() || line[i] != '"') return fail(line_no, line, "unquoted label value");
        ++i;
        std::string v;
        bool closed_quote = false;
        while (i < line.size()) {
          char c = line[i++];
          if (c == '"') {
            closed_quote = true;
            break;
          }
          if (c != '\\') {
            v += c;
            continue;
          }
          if (i >= line.size()) return fail(line_no, line, "dangling backslash");
          char e = line[i++];
          if (e == '\\') {
            v += '\\';
          } else if (e == '"') {
            v += '"';
          } else if (e == 'n') {
            v += '\n';
          } else {
            return fail(line_no, line, "invalid escape in label value");
          }
        }
        if (!closed_quote) return fail(line_no, line, "unterminated label value");
        if (!s.labels.emplace(lname, v).second) return fail(line_no, line, "duplicate label");
      }
    }
    if (i >= line.size() || line[i] != ' ') return fail(line_no, line, "expected ' ' before value");
    ++i;
    std::string_view rest = line.substr(i);
    size_t sp = rest.find(' ');
    std::string_view value_text = rest.substr(0, sp);
    if (sp != std::string_view::npos) {
      std::string_view ts = rest.substr(sp + 1);
      int64_t t = 0;
      auto [end, ec] = std::from_chars(ts.data(), ts.data() + ts.size(), t);
      if (ts.empty() || ec != std::errc() || end != ts.data() + ts.size()) {
        return fail(line_no, line, "invalid timestamp");
      }
    }
    auto value = internal::ParseValue(value_text);
    if (!value) return fail(line_no, line, "invalid value");
    s.value = *value;

    std::string family(internal::FamilyOf(name, cur ? cur->type : "", cur ? cur->name : ""));
    if (!start_family(family)) return fail(line_no, line, "family appears twice");
    if (!seen_series.insert({name, s.labels}).second)
      return fail(line_no, line, "duplicate series");
    if (cur->type == "counter" && (s.value < 0 || std::isnan(s.value))) {
      return fail(line_no, line, "negative or NaN counter");
    }
    if (cur->type == "histogram") {
      bool bucket = name == cur->name + "_bucket";
      if (!bucket && name != cur->name + "_sum" && name != cur->name + "_count") {
        return fail(line_no, line, "histogram sample without _bucket/_sum/_count");
      }
      if (bucket != s.labels.contains("le")) return fail(line_no, line, "le only on _bucket");
    } else if (s.labels.contains("le") && cur->type != "summary") {
      // le on a non-histogram is legal but suspicious for tidepool's own metrics.
      return fail(line_no, line, "le label outside a histogram");
    }
    cur->samples.push_back(std::move(s));
  }

  // Histogram semantics per label set: increasing le ending in +Inf, cumulative counts, +Inf
  // count equal to _count, _sum and _count present.
  for (const ParsedFamily& f : out.families) {
    if (f.type != "histogram") continue;
    struct Acc {
      std::vector<std::pair<double, double>> buckets;
      std::optional<double> sum, count;
    };
    std::map<std::map<std::string, std::string>, Acc> by;
    for (const ParsedSample& s : f.samples) {
      auto labels = s.labels;
      if (s.name == f.name + "_bucket") {
        auto le = internal::ParseValue(labels.at("le"));
        if (!le) return fail(0, f.name, "unparsable le");
        labels.erase("le");
        by[labels].buckets.push_back({*le, s.value});
      } else if (s.name == f.name + "_sum") {
        by[labels].sum = s.value;
      } else {
        by[labels].count = s.value;
      }
    }
    for (const auto& [labels, a] : by) {
      if (!a.sum || !a.count) return fail(0, f.name, "histogram series without _sum or _count");
      if (a.buckets.empty() || !std::isinf(a.buckets.back().first)) {
        return fail(0, f.name, "histogram series without a final +Inf bucket");
      }
      for (size_t k = 1; k < a.buckets.size(); ++k) {
        if (!(a.buckets[k - 1].first < a.buckets[k].first))
          return fail(0, f.name, "le not increasing");
        if (a.buckets[k - 1].second > a.buckets[k].second) return fail(0, f.name, "not cumulative");
      }
      if (a.buckets.back().second != *a.count) return fail(0, f.name, "+Inf bucket != _count");
    }
  }
  return out;
}

}  // namespace tidepool::ops::testing
