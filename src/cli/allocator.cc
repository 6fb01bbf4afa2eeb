#include "cli/allocator.h"

#include <fmt/format.h>

#ifdef TIDEPOOL_TCMALLOC
#include <gperftools/tcmalloc.h>
#endif

namespace tidepool::cli {

std::string AllocatorName() {
#ifdef TIDEPOOL_TCMALLOC
  int major = 0;
  int minor = 0;
  const char* patch = nullptr;
  tc_version(&major, &minor, &patch);
  return fmt::format("tcmalloc (gperftools {}.{}{})", major, minor, patch ? patch : "");
#else
  return "system (glibc malloc)";
#endif
}

}  // namespace tidepool::cli
