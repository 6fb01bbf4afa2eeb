// `tidepool simulate`: replays a trace (or the built-in scenario) through the decision loop in the
// discrete-event simulator and prints the cost and waiting-time summary (docs/architecture.md).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/error.h"
#include "sim/simulator.h"

namespace tidepool::cli {

struct SimulateFlags {
  std::string trace;  // empty: the built-in scenario
  std::string config = "examples/seed/config.yaml";
  std::string sim_config;  // optional
  uint64_t seed = 1;
  bool seed_set = false;
  std::string output = "text";
  bool check_invariants = false;
  bool compare = false;         // run tidepool, ca-like and static on the same trace
  bool queue_eval = false;      // gang jobs pending vs queued as Kueue queues them
  bool warm_eval = false;       // run the warm-capacity policies (off, spare, headroom, predictive)
  bool scheduler_eval = false;  // tidepool with least- and most-allocated scoring
  std::string scenario = "builtin";  // without --trace: builtin | periodic
  std::string report;                // write the HTML report here when set
  std::string losses;                // write every run's restarts here (CSV) when set
  std::string progress = "auto";     // auto (when stderr is a terminal) | always | never
};

// Registers the subcommand and its flags on `app`; the flags are written into `flags`.
CLI::App* AddSimulateCommand(CLI::App& app, SimulateFlags& flags);

// The config file's pools and its `simulation:` section, replaced as a whole by the file at
// `sim_config_path` when not empty; no jobs yet. Errors name the file and the key; `command`
// names the command in the error of a config whose pools come from a live cluster.
Result<sim::SimInput> LoadSimSettings(const std::string& config_path,
                                      const std::string& sim_config_path, std::string_view command);

// Runs it. The simulation settings come from the config file's `simulation:` section, replaced
// as a whole by --sim-config when given; --seed overrides either's seed. Returns the exit code:
// 0, or 2 for bad input (config, sim config, trace) or an unwritable report or losses file, printed
// to stderr as "tidepool: file:line: ...".
int RunSimulateCommand(const SimulateFlags& flags);

}  // namespace tidepool::cli
