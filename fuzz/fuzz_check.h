// FUZZ_EXPECT: the invariants a fuzz target checks beyond "does not crash". A failure prints what
// broke and aborts, so libFuzzer (or the corpus replay in ctest) reports the input as a crash.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace tidepool::fuzz {

// Renders input for a failure message: printable ASCII as is, everything else as \xNN, cut at
// 200 bytes.
inline std::string Printable(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < 200; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  if (s.size() > 200) out += "...";
  return out;
}

[[noreturn]] inline void ExpectFailed(const char* file, int line, const char* cond,
                                      const std::string& detail) {
  std::fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n  %s\n", file, line, cond,
               detail.c_str());
  std::abort();
}

}  // namespace tidepool::fuzz

// FUZZ_EXPECT(cond, detail): `detail` (a std::string expression) is evaluated only on failure.
#define FUZZ_EXPECT(cond, detail)                                                     \
  do {                                                                                \
    if (!(cond)) ::tidepool::fuzz::ExpectFailed(__FILE__, __LINE__, #cond, (detail)); \
  } while (0)
