// The memory allocator this binary runs on (CMake's TIDEPOOL_ALLOCATOR), for `tidepool version`.
#pragma once

#include <string>

namespace tidepool::cli {

// "tcmalloc (gperftools 2.10)", as the linked library reports itself, or "system (glibc malloc)".
std::string AllocatorName();

}  // namespace tidepool::cli
