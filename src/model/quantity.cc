#include "model/quantity.h"

#include <algorithm>
#include <array>
#include <limits>

#include "base/check.h"

namespace tidepool::model {
namespace {

using i128 = __int128;

constexpr i128 kNanosPerUnit = 1'000'000'000;
// Kubernetes documents 2^63-1 as the largest magnitude a quantity may have.
constexpr i128 kMaxUnits = std::numeric_limits<int64_t>::max();
constexpr i128 kMaxNanos = kMaxUnits * kNanosPerUnit;

i128 Pow10(int n) {
  i128 r = 1;
  for (int i = 0; i < n; ++i) r *= 10;
  return r;
}

// Multiplies with an overflow check against kMaxNanos.
bool MulChecked(i128 a, i128 b, i128& out) {
  if (a == 0 || b == 0) {
    out = 0;
    return true;
  }
  if (a > kMaxNanos / b) return false;
  out = a * b;
  return out <= kMaxNanos;
}

struct Suffix {
  std::string_view text;
  int base;      // 10 or 2
  int exponent;  // power of `base`
};

constexpr std::array<Suffix, 16> kSuffixes = {{
    {"n", 10, -9},
    {"u", 10, -6},
    {"m", 10, -3},
    {"", 10, 0},
    {"k", 10, 3},
    {"M", 10, 6},
    {"G", 10, 9},
    {"T", 10, 12},
    {"P", 10, 15},
    {"E", 10, 18},
    {"Ki", 2, 10},
    {"Mi", 2, 20},
    {"Gi", 2, 30},
    {"Ti", 2, 40},
    {"Pi", 2, 50},
    {"Ei", 2, 60},
}};

std::string Int128ToString(i128 v) {
  if (v == 0) return "0";
  bool neg = v < 0;
  if (neg) v = -v;
  std::string s;
  while (v > 0) {
    s.push_back(static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  }
  if (neg) s.push_back('-');
  std::reverse(s.begin(), s.end());
  return s;
}

// Divides rounding away from zero, as Kubernetes rounds values it cannot hold exactly.
i128 DivRoundUp(i128 a, i128 b) {
  i128 q = a / b;
  if (a % b != 0) q += (a < 0) ? -1 : 1;
  return q;
}

int64_t Saturate(i128 v) {
  if (v > std::numeric_limits<int64_t>::max()) return std::numeric_limits<int64_t>::max();
  if (v < std::numeric_limits<int64_t>::min()) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

using Format = Quantity::Format;

// The error for `text`, saying why it is not a quantity.
std::unexpected<Error> Bad(std::string_view text, std::string_view why) {
  return InvalidArgument("invalid quantity \"{}\": {}", text, why);
}

constexpr std::string_view kTooLarge = "too large (more than 2^63-1)";

// The number before the suffix, as an integer and the count of its digits after the point.
struct Mantissa {
  i128 value = 0;
  int fraction_digits = 0;
  bool too_precise = false;  // digits beyond what the mantissa can hold (only fraction ones)
};

// Reads digits with at most one '.', at least one digit, from `pos`; leaves `pos` after them.
Result<Mantissa> ReadMantissa(std::string_view text, size_t& pos) {
  Mantissa m;
  int digits = 0;
  int significant = 0;
  bool seen_dot = false;
  for (; pos < text.size(); ++pos) {
    char c = text[pos];
    if (c == '.') {
      if (seen_dot) return Bad(text, "more than one decimal point");
      seen_dot = true;
      continue;
    }
    if (c < '0' || c > '9') break;
    ++digits;
    if (m.value == 0 && c == '0') {
      if (seen_dot) ++m.fraction_digits;
      continue;
    }
    if (significant >= 36) {
      // More significant digits than an exact nano amount below the 2^63 unit bound can have.
      if (!seen_dot) return Bad(text, kTooLarge);
      if (c != '0') m.too_precise = true;
      continue;
    }
    m.value = m.value * 10 + (c - '0');
    ++significant;
    if (seen_dot) ++m.fraction_digits;
  }
  if (digits == 0) {
    return Bad(text, "no digits (expected a number with an optional suffix, e.g. 500m, 2Gi)");
  }
  return m;
}

// What the suffix multiplies by: 10^decimal * 2^binary, and the format it implies.
struct Scale {
  Format format = Format::kDecimalSI;
  int decimal_exponent = 0;
  int binary_exponent = 0;
};

// An exponent suffix such as "e3" or "E-2" (at most four digits).
Result<Scale> ReadExponent(std::string_view text, std::string_view suffix) {
  std::string_view exp = suffix.substr(1);
  bool exp_negative = false;
  if (exp[0] == '+' || exp[0] == '-') {
    exp_negative = exp[0] == '-';
    exp.remove_prefix(1);
  }
  if (exp.empty() || exp.size() > 4 ||
      !std::all_of(exp.begin(), exp.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return Bad(text, fmt::format("malformed exponent \"{}\"", suffix));
  }
  int e = 0;
  for (char c : exp) e = e * 10 + (c - '0');
  return Scale{Format::kDecimalExponent, exp_negative ? -e : e, 0};
}

// Suffix: SI, binary SI, or an exponent.
Result<Scale> ReadSuffix(std::string_view text, std::string_view suffix) {
  for (const auto& s : kSuffixes) {
    if (s.text != suffix) continue;
    if (s.base == 10) return Scale{Format::kDecimalSI, s.exponent, 0};
    return Scale{Format::kBinarySI, 0, s.exponent};
  }
  if (suffix.size() >= 2 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    return ReadExponent(text, suffix);
  }
  if (suffix.find(' ') != std::string_view::npos || suffix.find('\t') != std::string_view::npos) {
    return Bad(text, "contains white space");
  }
  return Bad(text,
             fmt::format("unknown suffix \"{}\" (expected one of n u m k M G T P E, Ki Mi Gi Ti "
                         "Pi Ei, or an exponent such as e3)",
                         suffix));
}

// nanos = mantissa * 10^(9 - fraction_digits + decimal_exponent) * 2^binary_exponent, rounded
// up when digits below a nano are dropped.
Result<i128> ToNanos(std::string_view text, const Mantissa& m, const Scale& s) {
  i128 value = m.value;
  if (s.binary_exponent > 0 && !MulChecked(value, i128(1) << s.binary_exponent, value)) {
    return Bad(text, kTooLarge);
  }
  int scale = 9 - m.fraction_digits + s.decimal_exponent;
  if (scale >= 0) {
    if (scale > 38 && value != 0) return Bad(text, kTooLarge);
    if (value != 0 && !MulChecked(value, Pow10(scale), value)) return Bad(text, kTooLarge);
    if (m.too_precise) value += 1;  // dropped non-zero digits below nano: round up
  } else {
    int down = -scale;
    if (down > 38) {
      value = value != 0 || m.too_precise ? 1 : 0;
    } else {
      i128 divisor = Pow10(down);
      i128 q = value / divisor;
      if (value % divisor != 0 || m.too_precise) q += 1;
      value = q;
    }
  }
  if (value > kMaxNanos) return Bad(text, kTooLarge);
  return value;
}

}  // namespace

Result<Quantity> Quantity::Parse(std::string_view text) {
  if (text.empty()) {
    return Bad(text, "empty string (expected a number with an optional suffix, e.g. 500m, 2Gi)");
  }
  size_t pos = 0;
  bool negative = false;
  if (text[0] == '+' || text[0] == '-') {
    negative = text[0] == '-';
    pos = 1;
  }
  TIDEPOOL_ASSIGN_OR_RETURN(Mantissa m, ReadMantissa(text, pos));
  TIDEPOOL_ASSIGN_OR_RETURN(Scale s, ReadSuffix(text, text.substr(pos)));
  TIDEPOOL_ASSIGN_OR_RETURN(i128 value, ToNanos(text, m, s));
  return Quantity(negative ? -value : value, s.format);
}

Quantity Quantity::FromMilli(int64_t milli, Format format) {
  return Quantity(i128(milli) * 1'000'000, format);
}

Quantity Quantity::FromUnits(int64_t units, Format format) {
  return Quantity(i128(units) * kNanosPerUnit, format);
}

int64_t Quantity::MilliValue() const { return Saturate(DivRoundUp(nanos_, 1'000'000)); }

int64_t Quantity::Value() const { return Saturate(DivRoundUp(nanos_, kNanosPerUnit)); }

std::string Quantity::ToString() const {
  if (nanos_ == 0) return "0";
  Format format = format_;
  if (format == Format::kBinarySI) {
    bool small = nanos_ > -1024 * kNanosPerUnit && nanos_ < 1024 * kNanosPerUnit;
    bool integral = nanos_ % kNanosPerUnit == 0;
    if (small || !integral) format = Format::kDecimalSI;
  }
  if (format == Format::kBinarySI) {
    i128 units = nanos_ / kNanosPerUnit;
    int exponent = 0;
    while (exponent < 60 && units % 1024 == 0) {
      units /= 1024;
      exponent += 10;
    }
    std::string_view suffix;
    for (const auto& s : kSuffixes)
      if (s.base == 2 && s.exponent == exponent) suffix = s.text;
    return Int128ToString(units) + std::string(suffix);
  }
  // Decimal: strip factors of ten, then lower the exponent to a multiple of three.
  i128 mantissa = nanos_;
  int exponent = -9;
  while (mantissa % 10 == 0) {
    mantissa /= 10;
    ++exponent;
  }
  int rem = ((exponent % 3) + 3) % 3;
  for (int i = 0; i < rem; ++i) mantissa *= 10;
  exponent -= rem;
  if (format == Format::kDecimalExponent) {
    return Int128ToString(mantissa) + (exponent == 0 ? "" : fmt::format("e{}", exponent));
  }
  if (exponent > 18) {  // beyond E: cannot happen below the 2^63 bound, kept for safety
    for (; exponent > 18; exponent -= 3) mantissa *= 1000;
  }
  std::string_view suffix;
  for (const auto& s : kSuffixes)
    if (s.base == 10 && s.exponent == exponent) suffix = s.text;
  return Int128ToString(mantissa) + std::string(suffix);
}

Quantity& Quantity::operator+=(const Quantity& other) {
  if (nanos_ == 0) format_ = other.format_;
  nanos_ += other.nanos_;
  TIDEPOOL_CHECK(nanos_ <= kMaxNanos * 4 && nanos_ >= -kMaxNanos * 4);
  return *this;
}

Quantity& Quantity::operator-=(const Quantity& other) {
  if (nanos_ == 0) format_ = other.format_;
  nanos_ -= other.nanos_;
  TIDEPOOL_CHECK(nanos_ <= kMaxNanos * 4 && nanos_ >= -kMaxNanos * 4);
  return *this;
}

}  // namespace tidepool::model
