// Quantity: an exact decimal amount as Kubernetes' resource.Quantity parses and prints it.
// Held as an integer count of nano-units, so sums like 0.1 + 0.2 cpu are exactly 300m.
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/error.h"

namespace tidepool::model {

class Quantity {
 public:
  // How the quantity prints itself; kept from the parsed text as Kubernetes does.
  enum class Format { kDecimalSI, kBinarySI, kDecimalExponent };

  Quantity() = default;

  // Parses Kubernetes quantity syntax: an optional sign, digits with an optional fraction
  // ("1", "0.1", ".5", "1.5"), then one suffix: decimal SI (n u m "" k M G T P E), binary SI
  // (Ki Mi Gi Ti Pi Ei) or an exponent (e3, E-3, e+2). Precision finer than 1n is rounded up
  // (away from zero). Magnitudes above 2^63-1 units, empty text, spaces, unknown suffixes and
  // anything else malformed are errors quoting the input.
  static Result<Quantity> Parse(std::string_view text);

  static Quantity FromMilli(int64_t milli, Format format = Format::kDecimalSI);
  static Quantity FromUnits(int64_t units, Format format = Format::kDecimalSI);

  // Value in milli-units, rounded up (away from zero), saturating at int64 bounds. This is how
  // the scheduler reads cpu.
  int64_t MilliValue() const;
  // Value in whole units, rounded up (away from zero). This is how the scheduler reads memory,
  // pods and extended resources.
  int64_t Value() const;
  __int128 nanos() const { return nanos_; }
  Format format() const { return format_; }
  bool IsZero() const { return nanos_ == 0; }
  int Sign() const { return nanos_ > 0 ? 1 : nanos_ < 0 ? -1 : 0; }

  // Canonical form as Kubernetes serializes it: "1500m" for 1.5, "1536Mi" for 1.5Gi, "1k" for
  // 1000 in DecimalSI, "1e3" in DecimalExponent. BinarySI values that are fractional or within
  // (-1024, 1024) print as DecimalSI.
  std::string ToString() const;

  // Exact arithmetic. The result keeps the left operand's format unless it is zero, in which
  // case it takes the right one's (as Kubernetes' Add does). Overflow of the 2^63-1 unit bound is
  // a checked invariant (callers add bounded resource amounts).
  Quantity& operator+=(const Quantity& other);
  Quantity& operator-=(const Quantity& other);
  friend Quantity operator+(Quantity a, const Quantity& b) { return a += b; }
  friend Quantity operator-(Quantity a, const Quantity& b) { return a -= b; }

  // Compares values only; the format does not matter (1Gi == 1073741824).
  friend bool operator==(const Quantity& a, const Quantity& b) { return a.nanos_ == b.nanos_; }
  friend std::strong_ordering operator<=>(const Quantity& a, const Quantity& b) {
    return a.nanos_ <=> b.nanos_;
  }

 private:
  Quantity(__int128 nanos, Format format) : nanos_(nanos), format_(format) {}

  __int128 nanos_ = 0;
  Format format_ = Format::kDecimalSI;
};

}  // namespace tidepool::model
