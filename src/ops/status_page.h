// The HTML status page served on /status: pools, pending pods and why, removals, unneeded nodes,
// last decisions and backoffs, rendered from the loop's Status plus what the controller knows.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "autoscaler/status.h"
#include "base/html.h"
#include "base/time.h"
#include "model/pool.h"
#include "planner/decision.h"

namespace tidepool::ops {

// What the page shows beyond autoscaler::Status; the controller fills it in.
struct StatusPageExtras {
  Time now{};            // the time the page is rendered at, for ages ("3m ago")
  std::string version;   // tidepool's version
  std::string provider;  // provider type, e.g. "kwok", "aks"
  std::string identity;  // this replica (leader election identity, usually the pod name)
  std::string leader;    // the current leader's identity; "" when unknown
  bool is_leader = false;
  std::string last_error;  // the controller's last error; "" when none
  std::optional<Time> last_error_time;
  // Optional: capacity type, instance type and price per pool. Borrowed for the call only.
  const model::AutoscalerConfig* config = nullptr;
  // Longer lists are cut to this many rows with a "... and N more" line.
  size_t max_rows = 200;
};

// A complete, self-contained HTML document (inline CSS, no scripts, no external assets; every
// piece of text from the cluster is HTML-escaped). Pure function: no I/O, no clock.
std::string RenderStatusPage(const autoscaler::Status& status, const StatusPageExtras& extras);

// Kept under ops:: for its callers; one implementation in base/html.h.
using ::tidepool::HtmlEscape;

// A compact age or duration: "0s", "45s", "3m12s", "2h05m", "3d04h". Negative durations are
// shown as "in <duration>".
std::string FormatAge(Duration d);

}  // namespace tidepool::ops
