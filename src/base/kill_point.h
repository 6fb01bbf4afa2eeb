// Kill points: named places between two steps of a cloud request where a test can have the
// process SIGKILLed, deterministically, to check what a restarted tidepool makes of the half-done
// request (docs/reliability.md, "Kill points"). Compiled in, inert unless armed from the
// environment.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "base/error.h"

namespace tidepool {

// Every kill point, in the order a scale-up reaches them (docs/reliability.md has the model).
enum class KillPoint {
  kScaleUpDecided,       // the actuator has the loop's IncreasePool, the provider not yet
  kKwokBeforeSave,       // kwok: machines named, the state ConfigMap not yet written
  kKwokSaved,            // kwok: the state write acknowledged (the cloud has the request)
  kScaleUpAcknowledged,  // the provider returned; the loop not yet told
  kKwokNodeCreated,      // kwok: a due machine's Node created, the state not yet rewritten
  kNodeTainted,          // scale-down: the ToBeDeleted taint is on, nothing evicted yet
  kMachineDeleted,       // scale-down: the provider deleted the machine, the Node object left
  kCapiMachineMarked,    // clusterapi: the Machine marked for deletion, replicas not yet lowered
  kKwokStopSaved,        // kwok: a stopped node recorded in the state, its Node not yet deleted
};
inline constexpr std::array<std::string_view, 9> kKillPointNames = {
    "scale-up-decided",      "kwok-before-save",    "kwok-saved",
    "scale-up-acknowledged", "kwok-node-created",   "node-tainted",
    "machine-deleted",       "capi-machine-marked", "kwok-stop-saved",
};

// What TIDEPOOL_KILL_AT asks for: "NAME" (the first time the point is reached) or "NAME:N"
// (the Nth time, N >= 1).
struct KillPlan {
  KillPoint point;
  int nth = 1;
};
// Parses the variable's value; errors name the value, what was expected and the known names.
Result<KillPlan> ParseKillPlan(std::string_view value);

// Reads TIDEPOOL_KILL_AT once (call at startup, before any thread reaches a point): unset or
// empty leaves every point inert; a bad value is an error for the caller to report.
Result<void> ArmKillPointFromEnv();

// At the armed point's Nth visit: one line on stderr ("kill point NAME reached (visit N):
// SIGKILL") and SIGKILL to the process. Otherwise, and when nothing is armed, nothing.
// Thread-safe.
void ReachKillPoint(KillPoint point);

}  // namespace tidepool
