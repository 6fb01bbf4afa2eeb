// Writing a whole text file the commands produce (a report, a CSV), with an error that names the
// file and what it was for.
#pragma once

#include <string>
#include <string_view>

#include "base/error.h"

namespace tidepool {

// Writes `text` to `path`, replacing it. Error: "PATH: cannot write the WHAT".
Result<void> WriteTextFile(const std::string& path, std::string_view text, std::string_view what);

}  // namespace tidepool
