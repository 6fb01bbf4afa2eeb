// TIDEPOOL_CHECK: invariants that must hold whatever the input; a failure is a bug, so it aborts
// with the file, line and condition instead of limping on with corrupt state.
#pragma once

#include <cstdio>
#include <cstdlib>

namespace tidepool::internal {
[[noreturn]] inline void CheckFailed(const char* file, int line, const char* cond,
                                     const char* msg) {
  std::fprintf(stderr, "%s:%d: check failed: %s%s%s\n", file, line, cond, msg[0] ? ": " : "", msg);
  std::abort();
}
}  // namespace tidepool::internal

#define TIDEPOOL_CHECK(cond)                                                       \
  do {                                                                             \
    if (!(cond)) ::tidepool::internal::CheckFailed(__FILE__, __LINE__, #cond, ""); \
  } while (0)

#define TIDEPOOL_CHECK_MSG(cond, msg)                                               \
  do {                                                                              \
    if (!(cond)) ::tidepool::internal::CheckFailed(__FILE__, __LINE__, #cond, msg); \
  } while (0)
