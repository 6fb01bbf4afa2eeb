#include "ops/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>
#include <utility>

#include "base/check.h"

namespace tidepool::ops {
namespace {

bool IsMetricName(std::string_view s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

bool IsLabelName(std::string_view s) {
  if (s.empty() || s.starts_with("__")) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

LabelValues ToValues(std::initializer_list<std::string_view> labels) {
  LabelValues v;
  v.reserve(labels.size());
  for (std::string_view l : labels) v.emplace_back(l);
  return v;
}

std::string_view TypeName(Family::Type t) {
  switch (t) {
    case Family::Type::kCounter:
      return "counter";
    case Family::Type::kGauge:
      return "gauge";
    case Family::Type::kHistogram:
      return "histogram";
  }
  return "untyped";
}

}  // namespace

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == 0) return "0";  // also -0
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  TIDEPOOL_CHECK(ec == std::errc());
  return std::string(buf, end);
}

std::string EscapeLabelValue(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string EscapeHelp(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  TIDEPOOL_CHECK(start > 0 && factor > 1 && count >= 1);
  std::vector<double> b;
  b.reserve(count);
  double v = start;
  for (int i = 0; i < count; ++i, v *= factor) b.push_back(v);
  return b;
}

// ---- Family ----

Family::Family(Type type, std::string name, std::string help, std::vector<std::string> label_names)
    : type_(type),
      name_(std::move(name)),
      help_(std::move(help)),
      label_names_(std::move(label_names)) {
  TIDEPOOL_CHECK_MSG(IsMetricName(name_), "invalid metric name");
  std::set<std::string_view> seen;
  for (const std::string& l : label_names_) {
    TIDEPOOL_CHECK_MSG(IsLabelName(l), "invalid label name");
    TIDEPOOL_CHECK_MSG(seen.insert(l).second, "duplicate label name");
    TIDEPOOL_CHECK_MSG(type_ != Type::kHistogram || l != "le", "histograms may not use label le");
  }
}

void Family::CheckArity(size_t n) const {
  TIDEPOOL_CHECK_MSG(n == label_names_.size(), "wrong number of label values");
}

void Family::AppendHeader(std::string& out) const {
  out += "# HELP ";
  out += name_;
  out += ' ';
  out += EscapeHelp(help_);
  out += "\n# TYPE ";
  out += name_;
  out += ' ';
  out += TypeName(type_);
  out += '\n';
}

void Family::AppendSample(std::string& out, std::string_view suffix, const LabelValues& values,
                          std::string_view extra_name, std::string_view extra_value,
                          double value) const {
  out += name_;
  out += suffix;
  if (!values.empty() || !extra_name.empty()) {
    out += '{';
    bool first = true;
    for (size_t i = 0; i < values.size(); ++i) {
      if (!first) out += ',';
      first = false;
      out += label_names_[i];
      out += "=\"";
      out += EscapeLabelValue(values[i]);
      out += '"';
    }
    if (!extra_name.empty()) {
      if (!first) out += ',';
      out += extra_name;
      out += "=\"";
      out += extra_value;
      out += '"';
    }
    out += '}';
  }
  out += ' ';
  out += FormatValue(value);
  out += '\n';
}

// ---- Counter ----

Counter::Counter(std::string name, std::string help, std::vector<std::string> label_names)
    : Family(Type::kCounter, std::move(name), std::move(help), std::move(label_names)) {
  if (this->label_names().empty()) series_[{}] = 0;
}

void Counter::Inc(std::initializer_list<std::string_view> labels, double delta) {
  Inc(ToValues(labels), delta);
}

void Counter::Inc(const LabelValues& labels, double delta) {
  CheckArity(labels.size());
  if (!(delta >= 0)) return;  // negative or NaN
  std::lock_guard lock(mu_);
  series_[labels] += delta;
}

double Counter::Value(std::initializer_list<std::string_view> labels) const {
  LabelValues key = ToValues(labels);
  CheckArity(key.size());
  std::lock_guard lock(mu_);
  auto it = series_.find(key);
  return it == series_.end() ? 0 : it->second;
}

void Counter::Render(std::string& out) const {
  AppendHeader(out);
  std::lock_guard lock(mu_);
  for (const auto& [labels, v] : series_) AppendSample(out, "", labels, "", "", v);
}

// ---- Gauge ----

Gauge::Gauge(std::string name, std::string help, std::vector<std::string> label_names)
    : Family(Type::kGauge, std::move(name), std::move(help), std::move(label_names)) {
  if (this->label_names().empty()) series_[{}] = 0;
}

void Gauge::Set(std::initializer_list<std::string_view> labels, double value) {
  Set(ToValues(labels), value);
}

void Gauge::Set(const LabelValues& labels, double value) {
  CheckArity(labels.size());
  std::lock_guard lock(mu_);
  series_[labels] = value;
}

void Gauge::Add(std::initializer_list<std::string_view> labels, double delta) {
  LabelValues key = ToValues(labels);
  CheckArity(key.size());
  std::lock_guard lock(mu_);
  series_[key] += delta;
}

void Gauge::Remove(std::initializer_list<std::string_view> labels) {
  LabelValues key = ToValues(labels);
  CheckArity(key.size());
  std::lock_guard lock(mu_);
  series_.erase(key);
}

void Gauge::Clear() {
  std::lock_guard lock(mu_);
  series_.clear();
}

void Gauge::Replace(std::map<LabelValues, double> series) {
  for (const auto& [labels, v] : series) CheckArity(labels.size());
  std::lock_guard lock(mu_);
  series_ = std::move(series);
}

double Gauge::Value(std::initializer_list<std::string_view> labels) const {
  LabelValues key = ToValues(labels);
  CheckArity(key.size());
  std::lock_guard lock(mu_);
  auto it = series_.find(key);
  return it == series_.end() ? 0 : it->second;
}

size_t Gauge::SeriesCount() const {
  std::lock_guard lock(mu_);
  return series_.size();
}

void Gauge::Render(std::string& out) const {
  AppendHeader(out);
  std::lock_guard lock(mu_);
  for (const auto& [labels, v] : series_) AppendSample(out, "", labels, "", "", v);
}

// ---- Histogram ----

Histogram::Histogram(std::string name, std::string help, std::vector<std::string> label_names,
                     std::vector<double> bounds)
    : Family(Type::kHistogram, std::move(name), std::move(help), std::move(label_names)),
      bounds_(std::move(bounds)) {
  TIDEPOOL_CHECK_MSG(!bounds_.empty(), "a histogram needs at least one bucket bound");
  for (size_t i = 0; i < bounds_.size(); ++i) {
    TIDEPOOL_CHECK_MSG(std::isfinite(bounds_[i]), "bucket bounds must be finite");
    TIDEPOOL_CHECK_MSG(i == 0 || bounds_[i - 1] < bounds_[i],
                       "bucket bounds must be strictly increasing");
  }
  if (this->label_names().empty()) series_[{}].buckets.assign(bounds_.size() + 1, 0);
}

void Histogram::Observe(std::initializer_list<std::string_view> labels, double value) {
  Observe(ToValues(labels), value);
}

void Histogram::Observe(const LabelValues& labels, double value) {
  CheckArity(labels.size());
  if (std::isnan(value)) return;
  // The first bound >= value; +Inf (the extra last bucket) when there is none.
  size_t bucket = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  std::lock_guard lock(mu_);
  Series& s = series_[labels];
  if (s.buckets.empty()) s.buckets.assign(bounds_.size() + 1, 0);
  ++s.buckets[bucket];
  s.sum += value;
  ++s.count;
}

uint64_t Histogram::Count(std::initializer_list<std::string_view> labels) const {
  LabelValues key = ToValues(labels);
  CheckArity(key.size());
  std::lock_guard lock(mu_);
  auto it = series_.find(key);
  return it == series_.end() ? 0 : it->second.count;
}

void Histogram::Render(std::string& out) const {
  AppendHeader(out);
  std::vector<std::string> les;
  les.reserve(bounds_.size() + 1);
  for (double b : bounds_) les.push_back(FormatValue(b));
  les.push_back("+Inf");
  std::lock_guard lock(mu_);
  for (const auto& [labels, s] : series_) {
    uint64_t cumulative = 0;
    for (size_t i = 0; i < s.buckets.size(); ++i) {
      cumulative += s.buckets[i];
      AppendSample(out, "_bucket", labels, "le", les[i], static_cast<double>(cumulative));
    }
    AppendSample(out, "_sum", labels, "", "", s.sum);
    AppendSample(out, "_count", labels, "", "", static_cast<double>(s.count));
  }
}

// ---- CallbackGauge ----

CallbackGauge::CallbackGauge(std::string name, std::string help,
                             std::vector<std::string> label_names,
                             std::function<Samples()> callback)
    : Family(Type::kGauge, std::move(name), std::move(help), std::move(label_names)),
      callback_(std::move(callback)) {
  TIDEPOOL_CHECK(callback_ != nullptr);
}

void CallbackGauge::Render(std::string& out) const {
  Samples samples = callback_();
  AppendHeader(out);
  for (const auto& [labels, v] : samples) {
    // A callback returning the wrong arity is as much a bug as a wrong Set; but a scrape must not
    // take the process down for it, so such samples are left out.
    if (labels.size() != label_names().size()) continue;
    AppendSample(out, "", labels, "", "", v);
  }
}

// ---- Registry ----

template <typename F>
F* Registry::Add(std::unique_ptr<F> family) {
  F* raw = family.get();
  std::lock_guard lock(mu_);
  auto [it, inserted] = families_.emplace(raw->name(), std::move(family));
  TIDEPOOL_CHECK_MSG(inserted, "a metric family of this name is registered already");
  // Histograms render extra series; their names must not collide with another family's, in
  // either order of registration.
  const std::string& name = raw->name();
  for (std::string_view suffix : {"_bucket", "_sum", "_count"}) {
    if (raw->type() == Family::Type::kHistogram) {
      TIDEPOOL_CHECK_MSG(!families_.contains(name + std::string(suffix)),
                         "histogram series name collides with another family");
    }
    if (name.ends_with(suffix)) {
      auto base = families_.find(name.substr(0, name.size() - suffix.size()));
      TIDEPOOL_CHECK_MSG(
          base == families_.end() || base->second->type() != Family::Type::kHistogram,
          "family name collides with a histogram's series");
    }
  }
  return raw;
}

Counter* Registry::AddCounter(std::string name, std::string help, std::vector<std::string> labels) {
  return Add(
      std::unique_ptr<Counter>(new Counter(std::move(name), std::move(help), std::move(labels))));
}

Gauge* Registry::AddGauge(std::string name, std::string help, std::vector<std::string> labels) {
  return Add(
      std::unique_ptr<Gauge>(new Gauge(std::move(name), std::move(help), std::move(labels))));
}

Histogram* Registry::AddHistogram(std::string name, std::string help,
                                  std::vector<std::string> labels, std::vector<double> bounds) {
  return Add(std::unique_ptr<Histogram>(
      new Histogram(std::move(name), std::move(help), std::move(labels), std::move(bounds))));
}

CallbackGauge* Registry::AddCallbackGauge(std::string name, std::string help,
                                          std::vector<std::string> labels,
                                          std::function<CallbackGauge::Samples()> callback) {
  return Add(std::unique_ptr<CallbackGauge>(
      new CallbackGauge(std::move(name), std::move(help), std::move(labels), std::move(callback))));
}

CallbackGauge* Registry::AddCallbackGauge(std::string name, std::string help,
                                          std::function<double()> callback) {
  TIDEPOOL_CHECK(callback != nullptr);
  return AddCallbackGauge(std::move(name), std::move(help), {},
                          [cb = std::move(callback)]() -> CallbackGauge::Samples {
                            return {{LabelValues{}, cb()}};
                          });
}

std::string Registry::Render() const {
  std::vector<const Family*> families;
  {
    std::lock_guard lock(mu_);
    families.reserve(families_.size());
    for (const auto& [name, f] : families_) families.push_back(f.get());
  }
  // Families are never removed, so the pointers stay valid without the lock; callbacks run
  // without it and may themselves read other metrics.
  std::string out;
  for (const Family* f : families) f->Render(out);
  return out;
}

}  // namespace tidepool::ops
