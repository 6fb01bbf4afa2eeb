// Rendering a simulation Summary: the JSON whose keys docs/simulator.md fixes, and a readable
// table.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sim/simulator.h"

namespace tidepool::sim {

// The keys of docs/simulator.md (cost, lowerBoundCost, nodeHours, gpuHoursPaid, gpuHoursUsed,
// waitP50, waitP95, waitMax, jobsCompleted, jobsUnfinished, evictions, scaleUps, scaleDowns) and
// more. Money and hours are rounded to 1e-6 so the output is stable text.
nlohmann::ordered_json SummaryToJson(const Summary& s);

// A human-readable table of the same numbers.
std::string SummaryToText(const Summary& s);

// A duration in seconds for people: "45s", "3m05s", "2h00m10s".
std::string FormatSeconds(double seconds);

// Cost over the lower bound for tables: "1.43x", or "-" without a bound.
std::string FormatBoundRatio(const Summary& s);

}  // namespace tidepool::sim
