// `simulate --report FILE.html`: one self-contained HTML page with inline SVG charts (nodes per
// pool, pending pods, cumulative cost, wait-time CDF) and a summary table; no scripts, no network.
#pragma once

#include <string>
#include <vector>

#include "base/error.h"
#include "sim/compare.h"

namespace tidepool::sim {

struct ReportInput {
  std::string title;        // e.g. the trace's file name or "built-in scenario"
  std::string config_name;  // the config file, as given
  // One run (plain `simulate`) or several (`--compare`); each Summary needs its timeline
  // (SimInput::record_timeline). The first run's pools name the chart legends.
  std::vector<PolicyRun> runs;
};

// The page as text: well-formed XHTML-style markup (every element closed, attributes quoted,
// text escaped), charts as inline <svg>, styles inline, and no reference to any URL.
std::string RenderHtmlReport(const ReportInput& input);

// Renders and writes the page to `path`. Errors: the file cannot be written (kInvalidArgument).
Result<void> WriteHtmlReport(const ReportInput& input, const std::string& path);

}  // namespace tidepool::sim
