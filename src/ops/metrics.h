// A small Prometheus metrics registry: counter, gauge and histogram families with labels, and
// their rendering in the text exposition format 0.0.4 for /metrics (no client library exists).
#pragma once

#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace tidepool::ops {

// Label values of one series, in the order of its family's label names.
using LabelValues = std::vector<std::string>;

// What every family has: a name, help text, label names. Families are created by a Registry,
// live as long as it does, and are never removed; pointers to them stay valid.
//
// Series are identified by their label values. A call with the wrong number of label values is a
// bug in the caller and aborts (TIDEPOOL_CHECK); values themselves may be any UTF-8 text.
// Thread-safe: every method may be called from any thread while Render runs.
class Family {
 public:
  enum class Type { kCounter, kGauge, kHistogram };

  virtual ~Family() = default;
  Family(const Family&) = delete;
  Family& operator=(const Family&) = delete;

  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  const std::vector<std::string>& label_names() const { return label_names_; }
  Type type() const { return type_; }

  // Appends this family's HELP, TYPE and sample lines to `out`, series in label-value order.
  virtual void Render(std::string& out) const = 0;

 protected:
  Family(Type type, std::string name, std::string help, std::vector<std::string> label_names);
  void CheckArity(size_t n) const;
  // Appends `name{labels} value\n`; `extra_label` (e.g. le="0.5") is appended last when set.
  void AppendSample(std::string& out, std::string_view suffix, const LabelValues& values,
                    std::string_view extra_name, std::string_view extra_value, double value) const;
  void AppendHeader(std::string& out) const;

 private:
  Type type_;
  std::string name_;
  std::string help_;
  std::vector<std::string> label_names_;
};

// A monotonically increasing count. A family without labels has its one series at 0 from the
// start; labelled series appear at their first Inc.
class Counter final : public Family {
 public:
  // Adds `delta` to the series; a negative or NaN delta is ignored (counters never go down).
  void Inc(std::initializer_list<std::string_view> labels = {}, double delta = 1);
  void Inc(const LabelValues& labels, double delta = 1);
  // The current value (0 for a series never incremented). For tests and the status page.
  double Value(std::initializer_list<std::string_view> labels = {}) const;

  void Render(std::string& out) const override;

 private:
  friend class Registry;
  Counter(std::string name, std::string help, std::vector<std::string> label_names);

  mutable std::mutex mu_;
  std::map<LabelValues, double> series_;
};

// A value that goes up and down. Replace() swaps the whole set of series at once, for gauges
// recomputed from a snapshot (pools, reasons) so that series that vanished are dropped and a
// concurrent scrape never sees half an update.
class Gauge final : public Family {
 public:
  void Set(std::initializer_list<std::string_view> labels, double value);
  void Set(const LabelValues& labels, double value);
  void Add(std::initializer_list<std::string_view> labels, double delta);
  // Drops one series (no-op when absent) or all of them.
  void Remove(std::initializer_list<std::string_view> labels);
  void Clear();
  void Replace(std::map<LabelValues, double> series);
  double Value(std::initializer_list<std::string_view> labels = {}) const;
  size_t SeriesCount() const;

  void Render(std::string& out) const override;

 private:
  friend class Registry;
  Gauge(std::string name, std::string help, std::vector<std::string> label_names);

  mutable std::mutex mu_;
  std::map<LabelValues, double> series_;
};

// Observations counted into buckets with upper bounds (le), rendered cumulatively with a final
// +Inf bucket, plus _sum and _count.
class Histogram final : public Family {
 public:
  void Observe(std::initializer_list<std::string_view> labels, double value);
  void Observe(const LabelValues& labels, double value);
  // Observations of one series so far (0 when absent). For tests.
  uint64_t Count(std::initializer_list<std::string_view> labels = {}) const;
  const std::vector<double>& bounds() const { return bounds_; }

  void Render(std::string& out) const override;

 private:
  friend class Registry;
  Histogram(std::string name, std::string help, std::vector<std::string> label_names,
            std::vector<double> bounds);

  struct Series {
    std::vector<uint64_t> buckets;  // per bound, not cumulative; the last is +Inf
    double sum = 0;
    uint64_t count = 0;
  };
  std::vector<double> bounds_;  // strictly increasing, finite
  mutable std::mutex mu_;
  std::map<LabelValues, Series> series_;
};

// A gauge family whose samples are computed at scrape time by a callback (e.g. the age of the
// last loop step, informer cache sizes). The callback runs on the scraping thread, without any
// registry lock held; it must be thread-safe and must not block for long.
class CallbackGauge final : public Family {
 public:
  using Samples = std::map<LabelValues, double>;
  void Render(std::string& out) const override;

 private:
  friend class Registry;
  CallbackGauge(std::string name, std::string help, std::vector<std::string> label_names,
                std::function<Samples()> callback);

  std::function<Samples()> callback_;
};

// Owns families and renders them. Registration validates names (metric names
// [a-zA-Z_:][a-zA-Z0-9_:]*, label names [a-zA-Z_][a-zA-Z0-9_]* not starting with "__", no "le"
// label on histograms, no duplicate label names), rejects a second family of the same name and
// histogram bounds that are not finite and strictly increasing: all bugs, so they abort.
// Thread-safe; Render sees each family at one instant (families independently).
class Registry {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  Counter* AddCounter(std::string name, std::string help, std::vector<std::string> labels = {});
  Gauge* AddGauge(std::string name, std::string help, std::vector<std::string> labels = {});
  Histogram* AddHistogram(std::string name, std::string help, std::vector<std::string> labels,
                          std::vector<double> bounds);
  CallbackGauge* AddCallbackGauge(std::string name, std::string help,
                                  std::vector<std::string> labels,
                                  std::function<CallbackGauge::Samples()> callback);
  // A single unlabelled gauge computed at scrape time.
  CallbackGauge* AddCallbackGauge(std::string name, std::string help,
                                  std::function<double()> callback);

  // The exposition text (format 0.0.4), families in name order. Callback gauges run here.
  std::string Render() const;

 private:
  template <typename F>
  F* Add(std::unique_ptr<F> family);

  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Family>> families_;
};

// Content type of Registry::Render's output.
inline constexpr std::string_view kExpositionContentType =
    "text/plain; version=0.0.4; charset=utf-8";

// Bucket bounds: `count` bounds start, start*factor, ... (as client libraries' ExponentialBuckets).
std::vector<double> ExponentialBuckets(double start, double factor, int count);

// Formats a sample value as the exposition format expects: shortest round-trip decimal, "+Inf",
// "-Inf" or "NaN".
std::string FormatValue(double v);
// Escapes a label value (backslash, double quote, newline) and HELP text (backslash, newline).
std::string EscapeLabelValue(std::string_view v);
std::string EscapeHelp(std::string_view v);

}  // namespace tidepool::ops
