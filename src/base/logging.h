// Logging setup for the long-running commands: readable lines by default, one JSON object per
// line for log collectors (`--log-format json`). Everything logs through spdlog's default logger.
#pragma once

#include <string>
#include <string_view>

#include "base/error.h"

namespace tidepool {

enum class LogFormat { kText, kJson };

Result<LogFormat> ParseLogFormat(std::string_view text);

// Installs the format on spdlog's default logger (stderr). JSON lines carry "time" (RFC 3339
// with milliseconds, UTC), "level", "logger" and "msg", with the message escaped as JSON.
void SetupLogging(LogFormat format, std::string_view level = "info");

// The JSON line for one message (exposed for tests).
std::string FormatJsonLogLine(std::string_view time, std::string_view level,
                              std::string_view logger, std::string_view message);

}  // namespace tidepool
