#include "sim/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <set>
#include <tuple>
#include <utility>

#include "base/html.h"
#include "base/text_file.h"
#include "sim/summary.h"

namespace tidepool::sim {
namespace {

constexpr int kChartWidth = 1240;
constexpr int kChartHeight = 300;
constexpr int kLeft = 76, kRight = 24, kTop = 58, kBottom = 48;
constexpr int kBuckets = 1200;  // at most ~2 points per pixel column

constexpr std::array<std::string_view, 10> kPalette = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759",
                                                       "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
                                                       "#9c755f", "#bab0ac"};

std::string_view PolicyColor(const std::string& name, size_t i) {
  if (name == "tidepool") return "#1f6fb4";
  if (name == "ca-like") return "#d1495b";
  if (name == "static") return "#6c757d";
  return kPalette[i % kPalette.size()];
}

// Axis range and ticks at 1, 2 or 5 times a power of ten.
struct Axis {
  double lo = 0, hi = 1, step = 1;
  std::vector<double> ticks;
};

Axis NiceAxis(double lo, double hi, int target = 5) {
  if (!(hi > lo)) hi = lo + 1;
  double raw = (hi - lo) / target;
  double mag = std::pow(10, std::floor(std::log10(raw)));
  double norm = raw / mag;
  double step = (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
  Axis a;
  a.step = step;
  a.lo = std::floor(lo / step + 1e-9) * step;
  a.hi = std::ceil(hi / step - 1e-9) * step;
  for (double t = a.lo; t <= a.hi + step * 1e-6; t += step) a.ticks.push_back(t);
  return a;
}

std::string TickLabel(double v, double step) {
  int decimals = std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9)));
  if (std::abs(v) >= 1e6 && step >= 1e5) return fmt::format("{:g}M", v / 1e6);
  if (std::abs(v) >= 1e4 && step >= 1e3) return fmt::format("{:g}k", v / 1e3);
  return fmt::format("{:.{}f}", std::abs(v) < step * 1e-6 ? 0.0 : v, decimals);
}

using Points = std::vector<std::pair<double, double>>;

// An SVG line chart with linear axes; series are step functions or plain polylines.
class Chart {
 public:
  Chart(std::string title, std::string x_label, std::string y_label, double x0, double x1,
        double y0, double y1)
      : title_(std::move(title)),
        x_label_(std::move(x_label)),
        y_label_(std::move(y_label)),
        x_(NiceAxis(x0, x1)),
        y_(NiceAxis(y0, y1)) {
    x_.hi = std::max(x_.lo + 1e-9, x1);  // the time axis ends where the data ends
    std::erase_if(x_.ticks, [&](double t) { return t > x_.hi + 1e-9; });
  }

  double Px(double x) const {
    return kLeft + (x - x_.lo) / (x_.hi - x_.lo) * (kChartWidth - kLeft - kRight);
  }
  double Py(double y) const {
    return kChartHeight - kBottom - (y - y_.lo) / (y_.hi - y_.lo) * (kChartHeight - kTop - kBottom);
  }

  // A step function: each value holds until the next point; the last one until x_end.
  void Step(const Points& pts, double x_end, std::string_view color, double width = 2,
            bool dashed = false) {
    if (pts.empty()) return;
    body_ += fmt::format(
        "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"{}\"{} stroke-linejoin=\"round\" "
        "points=\"{}\"/>\n",
        color, width, dashed ? " stroke-dasharray=\"6 4\"" : "", StepPoints(pts, x_end, false));
  }

  // A band between two step functions with the same x values (stacked areas).
  void Band(const Points& lower, const Points& upper, double x_end, std::string_view color) {
    if (upper.empty()) return;
    std::string pts = StepPoints(upper, x_end, false);
    pts += " " + StepPoints(lower, x_end, true);
    body_ += fmt::format(
        "<polygon fill=\"{}\" fill-opacity=\"0.85\" stroke=\"{}\" stroke-width=\"0.6\" "
        "points=\"{}\"/>\n",
        color, color, pts);
  }

  void Line(const Points& pts, std::string_view color, double width = 2) {
    if (pts.empty()) return;
    std::string s;
    for (const auto& [x, y] : pts) s += fmt::format("{:.1f},{:.1f} ", Px(x), Py(y));
    if (!s.empty()) s.pop_back();
    body_ += fmt::format(
        "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"{}\" stroke-linejoin=\"round\" "
        "points=\"{}\"/>\n",
        color, width, s);
  }

  void HLine(double y, std::string_view color, std::string_view label) {
    body_ += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" "
        "stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>\n",
        Px(x_.lo), Py(y), Px(x_.hi), Py(y), color);
    body_ += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"12\" fill=\"{}\">{}</text>\n",
                         Px(x_.lo) + 6, Py(y) - 5, color, HtmlEscape(label));
  }

  // A labelled point (scatter charts).
  void Dot(double x, double y, std::string_view color, std::string_view label) {
    body_ += fmt::format(
        "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"6\" fill=\"{}\" stroke=\"#333\" "
        "stroke-width=\"0.8\"/>"
        "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"12\" fill=\"#222\">{}</text>\n",
        Px(x), Py(y), color, Px(x) + 9, Py(y) - 8, HtmlEscape(label));
  }

  void AddLegend(std::string name, std::string_view color) {
    legend_.emplace_back(std::move(name), std::string(color));
  }

  std::string Svg() const {
    std::string s = fmt::format(
        "<svg width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" role=\"img\" "
        "font-family=\"system-ui, -apple-system, 'Segoe UI', Roboto, Helvetica, Arial, "
        "sans-serif\">\n",
        kChartWidth, kChartHeight);
    s += fmt::format("<title>{}</title>\n", HtmlEscape(title_));
    s += fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n",
                     kChartWidth, kChartHeight);
    s += fmt::format(
        "<text x=\"{}\" y=\"20\" font-size=\"15\" font-weight=\"600\" fill=\"#222\">{}</text>\n",
        kLeft, HtmlEscape(title_));
    // Legend on one row under the title.
    double lx = kLeft;
    for (const auto& [name, color] : legend_) {
      s += fmt::format(
          "<rect x=\"{:.0f}\" y=\"31\" width=\"14\" height=\"10\" fill=\"{}\"/>"
          "<text x=\"{:.0f}\" y=\"40\" font-size=\"12\" fill=\"#333\">{}</text>\n",
          lx, color, lx + 19, HtmlEscape(name));
      lx += 19 + 7.2 * static_cast<double>(name.size()) + 22;
    }
    // Grid and ticks.
    for (double t : y_.ticks) {
      s += fmt::format(
          "<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#e3e3e3\" "
          "stroke-width=\"1\"/>"
          "<text x=\"{}\" y=\"{:.1f}\" font-size=\"11\" fill=\"#555\" "
          "text-anchor=\"end\">{}</text>\n",
          kLeft, Py(t), kChartWidth - kRight, Py(t), kLeft - 6, Py(t) + 4, TickLabel(t, y_.step));
    }
    for (double t : x_.ticks) {
      s += fmt::format(
          "<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"#f0f0f0\" "
          "stroke-width=\"1\"/>"
          "<text x=\"{:.1f}\" y=\"{}\" font-size=\"11\" fill=\"#555\" "
          "text-anchor=\"middle\">{}</text>\n",
          Px(t), kTop, Px(t), kChartHeight - kBottom, Px(t), kChartHeight - kBottom + 16,
          TickLabel(t, x_.step));
    }
    s += "<g>\n" + body_ + "</g>\n";
    // Axes on top of the data.
    s += fmt::format(
        "<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#888\" stroke-width=\"1\"/>"
        "<line x1=\"{0}\" y1=\"{3}\" x2=\"{0}\" y2=\"{1}\" stroke=\"#888\" stroke-width=\"1\"/>\n",
        kLeft, kChartHeight - kBottom, kChartWidth - kRight, kTop);
    s += fmt::format(
        "<text x=\"{}\" y=\"{}\" font-size=\"12\" fill=\"#333\" text-anchor=\"middle\">{}</text>\n",
        (kLeft + kChartWidth - kRight) / 2, kChartHeight - 10, HtmlEscape(x_label_));
    s += fmt::format(
        "<text x=\"16\" y=\"{0}\" font-size=\"12\" fill=\"#333\" text-anchor=\"middle\" "
        "transform=\"rotate(-90 16 {0})\">{1}</text>\n",
        (kTop + kChartHeight - kBottom) / 2, HtmlEscape(y_label_));
    s += "</svg>\n";
    return s;
  }

 private:
  std::string StepPoints(const Points& pts, double x_end, bool reverse) const {
    std::vector<std::pair<double, double>> v;
    for (size_t i = 0; i < pts.size(); ++i) {
      double next = i + 1 < pts.size() ? pts[i + 1].first : x_end;
      v.emplace_back(pts[i].first, pts[i].second);
      v.emplace_back(std::max(next, pts[i].first), pts[i].second);
    }
    if (reverse) std::reverse(v.begin(), v.end());
    std::string s;
    for (const auto& [x, y] : v) s += fmt::format("{:.1f},{:.1f} ", Px(x), Py(y));
    if (!s.empty()) s.pop_back();
    return s;
  }

  std::string title_, x_label_, y_label_;
  Axis x_, y_;
  std::string body_;
  std::vector<std::pair<std::string, std::string>> legend_;
};

// Indices of the points to draw: per pixel-wide bucket of time, the first point, the one with the
// largest key (so peaks survive) and the last one (whose value holds until the next bucket).
std::vector<size_t> Sample(const std::vector<TimelinePoint>& pts, double t1,
                           const std::function<double(const TimelinePoint&)>& key) {
  std::vector<size_t> out;
  double span = std::max(t1, 1e-9);
  long bucket = -1;
  size_t best = 0;
  for (size_t i = 0; i < pts.size(); ++i) {
    long b = static_cast<long>(pts[i].hours / span * kBuckets);
    if (b != bucket) {
      if (i > 0) out.insert(out.end(), {best, i - 1});
      bucket = b;
      out.push_back(i);
      best = i;
    } else if (key(pts[i]) > key(pts[best])) {
      best = i;
    }
  }
  if (!pts.empty()) out.insert(out.end(), {best, pts.size() - 1});
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

struct TimeScale {
  double per_hour;  // x units per hour
  std::string label;
};

TimeScale ChooseTimeScale(double hours) {
  if (hours > 96) return {1.0 / 24, "time since start (days)"};
  return {1.0, "time since start (hours)"};
}

int Total(const TimelinePoint& p) {
  int n = 0;
  for (int v : p.nodes) n += v;
  return n;
}

// "$1,234.56".
std::string Money(double v) {
  std::string digits = fmt::format("{:.2f}", std::abs(v));
  size_t dot = digits.find('.');
  for (int i = static_cast<int>(dot) - 3; i > 0; i -= 3) digits.insert(static_cast<size_t>(i), ",");
  return (v < 0 ? "-$" : "$") + digits;
}

// The fraction of sorted `waits` at most `w`.
double FractionAtMost(const std::vector<double>& waits, double w) {
  if (waits.empty()) return 0;
  auto it = std::upper_bound(waits.begin(), waits.end(), w);
  return static_cast<double>(it - waits.begin()) / static_cast<double>(waits.size());
}

std::string SummaryTable(const std::vector<PolicyRun>& runs) {
  std::string s =
      "<table>\n<thead><tr><th class=\"l\">policy</th><th>cost</th><th>cost / lower bound</th>"
      "<th>wait p50</th><th>wait p95</th><th>wait max</th><th>GPU-hours paid</th>"
      "<th>GPU-hours used</th><th>jobs completed</th><th>pod evictions</th>"
      "<th>work lost (GPU-hours)</th><th>nodes added / removed</th></tr></thead>\n<tbody>\n";
  for (size_t i = 0; i < runs.size(); ++i) {
    const Summary& m = runs[i].summary;
    s += fmt::format(
        "<tr><td class=\"l\"><span class=\"dot\" style=\"background:{}\"></span>{}</td>"
        "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.0f}</td>"
        "<td>{:.0f}</td><td>{} / {}</td><td>{}</td><td>{:.1f}</td><td>{} / {}</td></tr>\n",
        PolicyColor(runs[i].name, i), HtmlEscape(runs[i].name), Money(m.cost), FormatBoundRatio(m),
        FormatSeconds(m.wait_p50), FormatSeconds(m.wait_p95), FormatSeconds(m.wait_max),
        m.gpu_hours_paid, m.gpu_hours_used, m.jobs_completed, m.jobs, m.evictions,
        m.work_lost_gpu_hours, m.scale_ups, m.scale_downs);
  }
  s += "</tbody>\n</table>\n<ul class=\"notes\">\n";
  for (const PolicyRun& r : runs) {
    s += fmt::format("<li><b>{}</b>: {}</li>\n", HtmlEscape(r.name), HtmlEscape(r.description));
  }
  if (!runs.empty()) {
    const Summary& m = runs.front().summary;
    s += fmt::format(
        "<li><b>lower bound</b>: {}, every job on perfectly packed capacity of the cheapest "
        "pool that can host it, from its submit time, with no boot delay{}</li>\n",
        Money(m.lower_bound_cost),
        m.lower_bound_jobs_excluded > 0
            ? fmt::format(" ({} jobs no pool can host left out)", m.lower_bound_jobs_excluded)
            : "");
  }
  s += "</ul>\n";
  return s;
}

// What every chart of a report shares: the time axis, the common maxima and the pools drawn.
struct ReportScale {
  double hours = 0;
  double max_nodes = 1, max_pending = 1, max_cost = 1, max_wait_min = 1;
  TimeScale ts;
  double x_end = 0;
  // Pools that ever had a node in any run, in config order, with fixed colours.
  std::vector<std::string> pool_names;
  std::vector<bool> used;
};

ReportScale ScaleOf(const std::vector<PolicyRun>& runs) {
  ReportScale sc;
  for (const PolicyRun& r : runs) {
    const Summary& m = r.summary;
    sc.hours = std::max(sc.hours, m.simulated_hours);
    for (const TimelinePoint& p : m.timeline.points) {
      sc.max_nodes = std::max(sc.max_nodes, static_cast<double>(Total(p)));
      sc.max_pending = std::max(sc.max_pending, static_cast<double>(p.pending));
    }
    sc.max_cost = std::max({sc.max_cost, m.cost, m.lower_bound_cost});
    if (!m.waits.empty()) sc.max_wait_min = std::max(sc.max_wait_min, m.waits.back() / 60);
  }
  sc.ts = ChooseTimeScale(sc.hours);
  sc.x_end = sc.hours * sc.ts.per_hour;
  if (!runs.empty()) sc.pool_names = runs.front().summary.timeline.pools;
  sc.used.assign(sc.pool_names.size(), false);
  for (const PolicyRun& r : runs)
    for (const TimelinePoint& p : r.summary.timeline.points)
      for (size_t k = 0; k < p.nodes.size() && k < sc.used.size(); ++k)
        sc.used[k] = sc.used[k] || p.nodes[k] > 0;
  return sc;
}

// The document up to the opening of <main>: metadata and the inline style sheet.
std::string PageHead(const std::string& title) {
  std::string html;
  html +=
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n";
  html += fmt::format("<title>tidepool simulation: {}</title>\n", HtmlEscape(title));
  html +=
      "<style>\n"
      "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;"
      "color:#222;background:#f6f7f9;margin:0;padding:24px 28px;}\n"
      "main{max-width:1280px;margin:0 auto;}\n"
      "h1{font-size:24px;margin:0 0 4px 0;}\n"
      "h2{font-size:17px;margin:28px 0 8px 0;}\n"
      ".sub{color:#555;font-size:14px;margin:0 0 16px 0;}\n"
      ".card{background:#fff;border:1px solid #dde1e6;border-radius:6px;padding:12px 16px;"
      "margin:0 0 16px 0;overflow-x:auto;}\n"
      "table{border-collapse:collapse;font-size:14px;width:100%;}\n"
      "th,td{padding:6px 8px;border-bottom:1px solid #e6e8eb;text-align:right;"
      "white-space:nowrap;}\n"
      "th{background:#f0f2f5;font-weight:600;white-space:normal;vertical-align:bottom;}\n"
      ".l{text-align:left;}\n"
      ".dot{display:inline-block;width:10px;height:10px;border-radius:5px;margin-right:8px;}\n"
      ".notes{font-size:13px;color:#444;margin:10px 0 0 0;padding-left:18px;}\n"
      ".caption{font-size:13px;color:#555;margin:4px 0 0 0;}\n"
      "svg{display:block;max-width:100%;height:auto;}\n"
      "</style>\n</head>\n<body>\n<main>\n";
  return html;
}

// Nodes per pool, one stacked chart per policy on a common scale.
std::string NodesSection(const std::vector<PolicyRun>& runs, const ReportScale& sc) {
  std::string html = "<h2>Nodes per pool over time</h2>\n";
  for (size_t r = 0; r < runs.size(); ++r) {
    const std::vector<TimelinePoint>& pts = runs[r].summary.timeline.points;
    Chart chart(fmt::format("Nodes per pool, stacked: {}", runs[r].name), sc.ts.label, "nodes", 0,
                sc.x_end, 0, sc.max_nodes);
    std::vector<size_t> idx =
        Sample(pts, sc.hours, [](const TimelinePoint& p) { return Total(p); });
    Points lower;
    for (size_t i : idx) lower.emplace_back(pts[i].hours * sc.ts.per_hour, 0);
    for (size_t k = 0; k < sc.pool_names.size(); ++k) {
      if (!sc.used[k]) continue;
      Points upper = lower;
      for (size_t j = 0; j < idx.size(); ++j) {
        const TimelinePoint& p = pts[idx[j]];
        upper[j].second += k < p.nodes.size() ? p.nodes[k] : 0;
      }
      std::string_view color = kPalette[k % kPalette.size()];
      chart.Band(lower, upper, sc.x_end, color);
      chart.AddLegend(sc.pool_names[k], color);
      lower = std::move(upper);
    }
    html += "<div class=\"card\">\n" + chart.Svg() + "</div>\n";
  }
  return html;
}

// Pending pods per policy.
std::string PendingSection(const std::vector<PolicyRun>& runs, const ReportScale& sc) {
  Chart chart("Pending pods (submitted, not running)", sc.ts.label, "pods", 0, sc.x_end, 0,
              sc.max_pending);
  for (size_t r = 0; r < runs.size(); ++r) {
    const std::vector<TimelinePoint>& pts = runs[r].summary.timeline.points;
    Points line;
    for (size_t i : Sample(pts, sc.hours,
                           [](const TimelinePoint& p) { return static_cast<double>(p.pending); })) {
      line.emplace_back(pts[i].hours * sc.ts.per_hour, static_cast<double>(pts[i].pending));
    }
    std::string_view color = PolicyColor(runs[r].name, r);
    chart.Step(line, sc.x_end, color, runs.size() > 1 ? 1.6 : 2);
    chart.AddLegend(runs[r].name, color);
  }
  return "<h2>Pending pods over time</h2>\n<div class=\"card\">\n" + chart.Svg() + "</div>\n";
}

// The top of the cost chart. A policy costing far more than the others (a static cluster) would
// flatten them all: the axis then ends a little above the second highest.
double CostAxisTop(const std::vector<PolicyRun>& runs, const ReportScale& sc) {
  std::vector<double> totals;
  for (const PolicyRun& r : runs) totals.push_back(r.summary.cost);
  std::sort(totals.begin(), totals.end(), std::greater<>());
  double y_max = sc.max_cost * 1.05;
  if (totals.size() >= 2 && totals[0] > 2.5 * totals[1]) {
    const Summary* first = runs.empty() ? nullptr : &runs.front().summary;
    y_max = std::max(totals[1], first ? first->lower_bound_cost : 0.0) * 1.25;
  }
  return y_max;
}

// Cumulative cost per policy; a line off the scale is cut at the top and its total named in
// the legend.
std::string CostSection(const std::vector<PolicyRun>& runs, const ReportScale& sc) {
  const Summary* first = runs.empty() ? nullptr : &runs.front().summary;
  double y_max = CostAxisTop(runs, sc);
  Chart chart("Cumulative cost (USD)", sc.ts.label, "USD", 0, sc.x_end, 0, y_max);
  for (size_t r = 0; r < runs.size(); ++r) {
    const std::vector<TimelinePoint>& pts = runs[r].summary.timeline.points;
    Points line;
    for (size_t i : Sample(pts, sc.hours, [](const TimelinePoint& p) { return p.cost; })) {
      line.emplace_back(pts[i].hours * sc.ts.per_hour, std::min(pts[i].cost, y_max));
    }
    std::string_view color = PolicyColor(runs[r].name, r);
    chart.Line(line, color, 2);
    bool off = runs[r].summary.cost > y_max;
    chart.AddLegend(off ? fmt::format("{} (off the scale: {} in all)", runs[r].name,
                                      Money(runs[r].summary.cost))
                        : runs[r].name,
                    color);
  }
  if (first && first->lower_bound_cost > 0) {
    chart.HLine(first->lower_bound_cost, "#2a9d8f",
                fmt::format("lower bound for the whole trace: {}", Money(first->lower_bound_cost)));
    chart.AddLegend("lower bound (total)", "#2a9d8f");
  }
  return "<h2>Cumulative cost</h2>\n<div class=\"card\">\n" + chart.Svg() + "</div>\n";
}

// One policy's wait-time CDF in percent, from 0 to x_max minutes, floored at y_lo; at most
// ~800 points however many jobs there are.
Points WaitCdf(const std::vector<double>& w, double x_max, double y_lo) {
  Points line;
  if (w.empty()) return line;
  size_t n = w.size();
  size_t stride = std::max<size_t>(1, n / 800);
  line.emplace_back(0, std::max(y_lo, 100 * FractionAtMost(w, 0)));
  for (size_t i = 0; i < n && w[i] / 60 <= x_max;) {
    size_t j = i;  // the last job with this wait: the CDF's value at w[i]
    while (j + 1 < n && w[j + 1] == w[i]) ++j;
    line.emplace_back(w[i] / 60,
                      std::max(y_lo, 100.0 * static_cast<double>(j + 1) / static_cast<double>(n)));
    i = std::max(j + 1, i + stride);
  }
  line.emplace_back(x_max, std::max(y_lo, 100 * FractionAtMost(w, x_max * 60)));
  return line;
}

// Wait-time CDF per policy. The x axis ends at the largest 99th percentile (a long tail would
// squeeze every curve against the axis); the y axis starts at the tens below the smallest share
// of jobs that did not wait.
std::string WaitSection(const std::vector<PolicyRun>& runs, const ReportScale& sc) {
  double x_max = 0, lowest = 100;
  for (const PolicyRun& r : runs) {
    const std::vector<double>& w = r.summary.waits;
    if (w.empty()) continue;
    size_t k = std::min(w.size() - 1, static_cast<size_t>(std::ceil(0.99 * w.size())) - 1);
    x_max = std::max(x_max, w[k] / 60);
    lowest = std::min(lowest, 100 * FractionAtMost(w, 0));
  }
  x_max = std::max(x_max, 1.0);
  bool cut = x_max < sc.max_wait_min;
  double y_lo = std::min(90.0, std::floor(lowest / 10) * 10);
  Chart chart("Wait time until all of a job's pods run (CDF)", "wait (minutes)",
              "% of jobs started", 0, x_max, y_lo, 100);
  for (size_t r = 0; r < runs.size(); ++r) {
    std::string_view color = PolicyColor(runs[r].name, r);
    chart.Line(WaitCdf(runs[r].summary.waits, x_max, y_lo), color, 2);
    chart.AddLegend(runs[r].name, color);
  }
  std::string html = "<h2>Wait-time distribution</h2>\n<div class=\"card\">\n" + chart.Svg();
  html += fmt::format(
      "<p class=\"caption\">Wait: from a job's submission until all its pods run at once "
      "(gangs) or each of its pods has started. Jobs that never started are not in the "
      "curve; the summary counts them.{}{}</p>\n</div>\n",
      cut ? fmt::format(" The wait axis ends at the largest 99th percentile ({}); the longest "
                        "wait was {}.",
                        FormatSeconds(x_max * 60), FormatSeconds(sc.max_wait_min * 60))
          : "",
      y_lo > 0 ? fmt::format(" The share axis starts at {:.0f} %.", y_lo) : "");
  return html;
}

// The policies no other beats on both cost and GPU-job p95 wait, cheapest first, as
// (cost, wait in minutes).
Points Frontier(const std::vector<PolicyRun>& runs) {
  std::vector<size_t> order(runs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(runs[a].summary.cost, runs[a].summary.wait_p95_gpu) <
           std::tie(runs[b].summary.cost, runs[b].summary.wait_p95_gpu);
  });
  Points frontier;
  double best = std::numeric_limits<double>::infinity();
  for (size_t i : order) {
    double w = runs[i].summary.wait_p95_gpu / 60;
    if (w < best) {
      best = w;
      frontier.emplace_back(runs[i].summary.cost, w);
    }
  }
  return frontier;
}

// Cost against the GPU jobs' p95 wait, one point per policy; the dashed line joins the
// policies no other beats on both (the frontier). Only for two policies or more.
std::string FrontierSection(const std::vector<PolicyRun>& runs) {
  if (runs.size() <= 1) return "";
  double c0 = runs.front().summary.cost, c1 = c0, w1 = 0;
  for (const PolicyRun& r : runs) {
    c0 = std::min(c0, r.summary.cost);
    c1 = std::max(c1, r.summary.cost);
    w1 = std::max(w1, r.summary.wait_p95_gpu / 60);
  }
  double pad = std::max(1.0, (c1 - c0) * 0.1);
  Chart chart("Cost–wait frontier", "cost ($)", "GPU-job wait p95 (minutes)",
              std::max(0.0, c0 - pad), c1 + pad, 0, std::max(1.0, w1 * 1.15));
  chart.Line(Frontier(runs), "#888888", 1.5);
  for (size_t r = 0; r < runs.size(); ++r) {
    std::string_view color = PolicyColor(runs[r].name, r);
    chart.Dot(runs[r].summary.cost, runs[r].summary.wait_p95_gpu / 60, color, runs[r].name);
    chart.AddLegend(runs[r].name, color);
  }
  std::string html = "<h2>Cost–wait frontier</h2>\n<div class=\"card\">\n" + chart.Svg();
  html +=
      "<p class=\"caption\">Each policy's total cost against the 95th percentile of the wait "
      "of jobs that ask for GPUs. The grey line joins the policies that no other policy beats "
      "on both cost and wait.</p>\n</div>\n";
  return html;
}

}  // namespace

std::string RenderHtmlReport(const ReportInput& input) {
  const std::vector<PolicyRun>& runs = input.runs;
  const ReportScale sc = ScaleOf(runs);
  std::string html = PageHead(input.title);
  html += "<h1>tidepool simulation report</h1>\n";
  const Summary* first = runs.empty() ? nullptr : &runs.front().summary;
  html += fmt::format(
      "<p class=\"sub\">Trace: {} &#183; config: {} &#183; {} jobs &#183; {:.1f} simulated "
      "hours ({:.1f} days) &#183; {} {}</p>\n",
      HtmlEscape(input.title), HtmlEscape(input.config_name), first ? first->jobs : 0, sc.hours,
      sc.hours / 24, runs.size(), runs.size() == 1 ? "policy" : "policies");
  html += "<h2>Summary</h2>\n<div class=\"card\">\n" + SummaryTable(runs) + "</div>\n";
  html += NodesSection(runs, sc);
  html += PendingSection(runs, sc);
  html += CostSection(runs, sc);
  html += WaitSection(runs, sc);
  html += FrontierSection(runs);
  html += "<p class=\"sub\">Generated by <code>tidepool simulate</code>.</p>\n";
  html += "</main>\n</body>\n</html>\n";
  return html;
}

Result<void> WriteHtmlReport(const ReportInput& input, const std::string& path) {
  return WriteTextFile(path, RenderHtmlReport(input), "report");
}

}  // namespace tidepool::sim
