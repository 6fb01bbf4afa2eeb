#include "base/time.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

namespace tidepool {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Reads exactly `n` digits at `pos`, advancing it.
bool ReadDigits(std::string_view s, size_t& pos, int n, int& out) {
  if (pos + n > s.size()) return false;
  out = 0;
  for (int i = 0; i < n; ++i) {
    char c = s[pos + i];
    if (!IsDigit(c)) return false;
    out = out * 10 + (c - '0');
  }
  pos += n;
  return true;
}

}  // namespace

Result<Duration> ParseDuration(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return InvalidArgument(
        "invalid duration \"{}\": {} (expected e.g. \"10m\", \"1h30m\", \"45s\")", text, why);
  };
  std::string_view s = text;
  if (s.empty()) return bad("empty");
  bool negative = false;
  if (s[0] == '-' || s[0] == '+') {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s == "0") return Duration(0);
  if (s.empty()) return bad("no number");
  double total_ms = 0;
  while (!s.empty()) {
    size_t i = 0;
    while (i < s.size() && (IsDigit(s[i]) || s[i] == '.')) ++i;
    if (i == 0) return bad("expected a number");
    double value = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + i, value);
    if (ec != std::errc() || ptr != s.data() + i) return bad("malformed number");
    s.remove_prefix(i);
    size_t j = 0;
    while (j < s.size() && !IsDigit(s[j]) && s[j] != '.') ++j;
    std::string_view unit = s.substr(0, j);
    s.remove_prefix(j);
    double scale;
    if (unit == "ms")
      scale = 1;
    else if (unit == "s")
      scale = 1000;
    else if (unit == "m")
      scale = 60'000;
    else if (unit == "h")
      scale = 3'600'000;
    else if (unit == "us" || unit == "µs")
      scale = 0.001;
    else if (unit == "ns")
      scale = 0.000001;
    else if (unit.empty())
      return bad("missing unit (ns, us, ms, s, m, h)");
    else
      return bad(fmt::format("unknown unit \"{}\"", unit));
    total_ms += value * scale;
  }
  if (total_ms > 9.0e15) return bad("too large");
  auto ms = static_cast<int64_t>(std::llround(total_ms));
  return Duration(negative ? -ms : ms);
}

std::string FormatDuration(Duration d) {
  int64_t ms = d.count();
  if (ms == 0) return "0s";
  std::string out;
  if (ms < 0) {
    out += '-';
    ms = -ms;
  }
  int64_t h = ms / 3'600'000, m = ms / 60'000 % 60, s = ms / 1000 % 60, rest = ms % 1000;
  if (h) out += fmt::format("{}h", h);
  if (m) out += fmt::format("{}m", m);
  if (s || (rest && (h || m))) {
    out += rest ? fmt::format("{}.{:03}s", s, rest) : fmt::format("{}s", s);
    // Trim trailing zeros of the fraction ("1.500s" -> "1.5s").
    if (rest) {
      out.pop_back();
      while (out.back() == '0') out.pop_back();
      out += 's';
    }
  } else if (rest) {
    out += fmt::format("{}ms", rest);
  }
  return out;
}

Result<Time> ParseRfc3339(std::string_view text) {
  auto bad = [&] {
    return InvalidArgument(
        "invalid timestamp \"{}\" (expected RFC 3339, e.g. 2026-11-22T01:40:05Z)", text);
  };
  size_t pos = 0;
  int year, month, day, hour, minute, second;
  if (!ReadDigits(text, pos, 4, year) || pos >= text.size() || text[pos++] != '-' ||
      !ReadDigits(text, pos, 2, month) || pos >= text.size() || text[pos++] != '-' ||
      !ReadDigits(text, pos, 2, day) || pos >= text.size() ||
      (text[pos] != 'T' && text[pos] != 't' && text[pos] != ' ')) {
    return bad();
  }
  ++pos;
  if (!ReadDigits(text, pos, 2, hour) || pos >= text.size() || text[pos++] != ':' ||
      !ReadDigits(text, pos, 2, minute) || pos >= text.size() || text[pos++] != ':' ||
      !ReadDigits(text, pos, 2, second)) {
    return bad();
  }
  int64_t millis = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    int digits = 0;
    while (pos < text.size() && IsDigit(text[pos])) {
      if (digits < 3) millis = millis * 10 + (text[pos] - '0');
      ++digits;
      ++pos;
    }
    if (digits == 0) return bad();
    for (int i = digits; i < 3; ++i) millis *= 10;
  }
  int64_t offset_minutes = 0;
  if (pos >= text.size()) return bad();
  if (text[pos] == 'Z' || text[pos] == 'z') {
    ++pos;
  } else if (text[pos] == '+' || text[pos] == '-') {
    int sign = text[pos] == '-' ? -1 : 1;
    ++pos;
    int oh, om;
    if (!ReadDigits(text, pos, 2, oh) || pos >= text.size() || text[pos++] != ':' ||
        !ReadDigits(text, pos, 2, om)) {
      return bad();
    }
    offset_minutes = sign * (oh * 60 + om);
  } else {
    return bad();
  }
  if (pos != text.size()) return bad();
  std::chrono::year_month_day ymd{std::chrono::year(year), std::chrono::month(month),
                                  std::chrono::day(day)};
  if (!ymd.ok() || hour > 23 || minute > 59 || second > 60) return bad();
  auto days = std::chrono::sys_days(ymd);
  Time t = std::chrono::time_point_cast<Duration>(days) + std::chrono::hours(hour) +
           std::chrono::minutes(minute - offset_minutes) + std::chrono::seconds(second) +
           Duration(millis);
  return t;
}

std::string FormatRfc3339(Time t) {
  auto days = std::chrono::floor<std::chrono::days>(t);
  std::chrono::year_month_day ymd(days);
  std::chrono::hh_mm_ss hms(t - days);
  std::string out = fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", int(ymd.year()),
                                unsigned(ymd.month()), unsigned(ymd.day()), hms.hours().count(),
                                hms.minutes().count(), hms.seconds().count());
  if (auto ms = hms.subseconds().count()) out += fmt::format(".{:03}", ms);
  return out + "Z";
}

Time RealClock::Now() const {
  return std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
}

}  // namespace tidepool
