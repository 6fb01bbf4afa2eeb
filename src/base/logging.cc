#include "base/logging.h"

#include <spdlog/formatter.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <memory>

#include "base/time.h"

namespace tidepool {
namespace {

void AppendJsonString(std::string& out, std::string_view s) {
  out.push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          out += fmt::format("\\u{:04x}", c);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out.push_back('"');
}

class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    std::string time = FormatRfc3339(std::chrono::time_point_cast<Duration>(
        std::chrono::sys_time<std::chrono::nanoseconds>(msg.time.time_since_epoch())));
    auto level = spdlog::level::to_string_view(msg.level);
    std::string line =
        FormatJsonLogLine(time, std::string_view(level.data(), level.size()),
                          std::string_view(msg.logger_name.data(), msg.logger_name.size()),
                          std::string_view(msg.payload.data(), msg.payload.size()));
    line.push_back('\n');
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }
};

}  // namespace

Result<LogFormat> ParseLogFormat(std::string_view text) {
  if (text == "text") return LogFormat::kText;
  if (text == "json") return LogFormat::kJson;
  return InvalidArgument("--log-format \"{}\": expected text or json", text);
}

std::string FormatJsonLogLine(std::string_view time, std::string_view level,
                              std::string_view logger, std::string_view message) {
  std::string out = "{\"time\":";
  AppendJsonString(out, time);
  out += ",\"level\":";
  AppendJsonString(out, level);
  if (!logger.empty()) {
    out += ",\"logger\":";
    AppendJsonString(out, logger);
  }
  out += ",\"msg\":";
  AppendJsonString(out, message);
  out.push_back('}');
  return out;
}

void SetupLogging(LogFormat format, std::string_view level) {
  auto logger =
      std::make_shared<spdlog::logger>("", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  if (format == LogFormat::kJson) {
    logger->set_formatter(std::make_unique<JsonFormatter>());
  } else {
    logger->set_formatter(std::make_unique<spdlog::pattern_formatter>(
        "%Y-%m-%dT%H:%M:%S.%eZ %L %v", spdlog::pattern_time_type::utc));
  }
  logger->set_level(spdlog::level::from_str(std::string(level)));
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(std::move(logger));
}

}  // namespace tidepool
