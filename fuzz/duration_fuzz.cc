// Fuzz target for the time parsers of base/time.h: ParseDuration (Go-style "1h30m") and
// ParseRfc3339. Both parse the same input. Besides not crashing: a parsed duration formats
// (FormatDuration) as text that parses back to the same duration, and a parsed timestamp in
// years 0000-9999 formats (FormatRfc3339) as text that parses back to the same instant.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/time.h"
#include "fuzz_check.h"

using tidepool::fuzz::Printable;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);

  if (auto d = tidepool::ParseDuration(text)) {
    std::string printed = tidepool::FormatDuration(*d);
    auto again = tidepool::ParseDuration(printed);
    FUZZ_EXPECT(again.has_value(),
                "duration \"" + Printable(text) + "\" formats as \"" + printed +
                    "\", which does not parse: " + (again ? "" : again.error().message()));
    FUZZ_EXPECT(*again == *d, "duration \"" + Printable(text) + "\" (" +
                                  std::to_string(d->count()) + " ms) formats as \"" + printed +
                                  "\", which parses to " + std::to_string(again->count()) + " ms");
  }

  if (auto t = tidepool::ParseRfc3339(text)) {
    using namespace std::chrono;
    // FormatRfc3339 writes four-digit years only; an offset can move year 0000 or 9999 out.
    const auto lo = sys_days(year(0) / January / 1);
    const auto hi = sys_days(year(10000) / January / 1);
    if (*t >= lo && *t < hi) {
      std::string printed = tidepool::FormatRfc3339(*t);
      auto again = tidepool::ParseRfc3339(printed);
      FUZZ_EXPECT(again.has_value(),
                  "timestamp \"" + Printable(text) + "\" formats as \"" + printed +
                      "\", which does not parse: " + (again ? "" : again.error().message()));
      FUZZ_EXPECT(*again == *t, "timestamp \"" + Printable(text) + "\" formats as \"" + printed +
                                    "\", which parses to " + tidepool::FormatRfc3339(*again));
    }
  }
  return 0;
}
