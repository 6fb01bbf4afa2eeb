#include "cli/simulate_command.h"

#include <chrono>
#include <cstdio>
#include <iostream>

#include "kube/config/autoscaler_config.h"
#include "sim/scenario.h"
#include "sim/simulator.h"
#include "sim/summary.h"

namespace tidepool::cli {

CLI::App* AddSimulateCommand(CLI::App& app, SimulateFlags& flags) {
  auto* cmd = app.add_subcommand(
      "simulate", "Replay a training trace through the decision loop: cost and waiting times");
  cmd->add_option("--trace", flags.trace,
                  "Trace CSV (native or the Alibaba GPU trace); default: the built-in scenario");
  cmd->add_option("--config", flags.config, "AutoscalerConfig YAML file")->capture_default_str();
  cmd->add_option("--sim-config", flags.sim_config,
                  "Simulation settings YAML (seed, bootDelay, pools, scheduler, checkpointEvery)");
  cmd->add_option("--seed", flags.seed, "Random seed (overrides the sim config's seed)")
      ->each([&flags](const std::string&) { flags.seed_set = true; });
  cmd->add_option("-o,--output", flags.output, "Output format")
      ->check(CLI::IsMember({"json", "text"}));
  cmd->add_flag("--check-invariants", flags.check_invariants,
                "Check the simulator's invariants after every event (slower)");
  return cmd;
}

int RunSimulateCommand(const SimulateFlags& flags) {
  auto fail = [](const Error& e) {
    std::fprintf(stderr, "tidepool: %s\n", e.message().c_str());
    return 2;
  };
  sim::SimInput in;
  auto config = kube::config::LoadAutoscalerConfig(flags.config);
  if (!config) return fail(config.error());
  in.config = std::move(*config);
  if (!flags.sim_config.empty()) {
    auto sc = sim::LoadSimConfig(flags.sim_config);
    if (!sc) return fail(sc.error());
    in.sim = std::move(*sc);
  }
  if (flags.seed_set || flags.sim_config.empty()) in.sim.seed = flags.seed;
  in.sim.check_invariants = flags.check_invariants;
  if (flags.trace.empty()) {
    in.jobs = sim::BuiltinScenario(in.sim.seed);
  } else {
    auto jobs = sim::LoadTrace(flags.trace);
    if (!jobs) return fail(jobs.error());
    in.jobs = std::move(*jobs);
  }
  auto summary = sim::RunSimulation(in);
  if (!summary) return fail(summary.error());
  if (flags.output == "json") {
    std::cout << sim::SummaryToJson(*summary).dump(2) << "\n";
  } else {
    std::cout << sim::SummaryToText(*summary);
  }
  return 0;
}

}  // namespace tidepool::cli
