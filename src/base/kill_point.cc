#include "base/kill_point.h"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>

namespace tidepool {

namespace {

constexpr int kDisarmed = -1;
std::atomic<int> armed_point{kDisarmed};
std::atomic<int> armed_nth{1};
std::atomic<int> visits{0};

std::string KnownNames() {
  std::string out;
  for (std::string_view n : kKillPointNames) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

}  // namespace

Result<KillPlan> ParseKillPlan(std::string_view value) {
  std::string_view name = value;
  int nth = 1;
  if (auto colon = value.find(':'); colon != std::string_view::npos) {
    name = value.substr(0, colon);
    std::string count(value.substr(colon + 1));
    char* end = nullptr;
    long n = std::strtol(count.c_str(), &end, 10);
    if (count.empty() || *end != '\0' || n < 1 || n > 1000000) {
      return Fail(Error::Code::kInvalidArgument,
                  "TIDEPOOL_KILL_AT={}: expected NAME or NAME:N with N a positive count, got "
                  "count '{}'",
                  value, count);
    }
    nth = static_cast<int>(n);
  }
  for (size_t i = 0; i < kKillPointNames.size(); ++i) {
    if (kKillPointNames[i] == name) return KillPlan{static_cast<KillPoint>(i), nth};
  }
  return Fail(Error::Code::kInvalidArgument,
              "TIDEPOOL_KILL_AT={}: unknown kill point '{}'; expected one of: {}", value, name,
              KnownNames());
}

Result<void> ArmKillPointFromEnv() {
  const char* value = std::getenv("TIDEPOOL_KILL_AT");
  if (value == nullptr || *value == '\0') return {};
  auto plan = ParseKillPlan(value);
  if (!plan) return std::unexpected(plan.error());
  armed_nth.store(plan->nth);
  visits.store(0);
  armed_point.store(static_cast<int>(plan->point));
  std::fprintf(stderr, "kill point %s armed (visit %d)\n",
               std::string(kKillPointNames[static_cast<size_t>(plan->point)]).c_str(), plan->nth);
  return {};
}

void ReachKillPoint(KillPoint point) {
  if (armed_point.load(std::memory_order_relaxed) != static_cast<int>(point)) return;
  int visit = visits.fetch_add(1) + 1;
  if (visit != armed_nth.load()) return;
  std::fprintf(stderr, "kill point %s reached (visit %d): SIGKILL\n",
               std::string(kKillPointNames[static_cast<size_t>(point)]).c_str(), visit);
  std::fflush(stderr);
  std::raise(SIGKILL);
}

}  // namespace tidepool
