#include "cli/simulate_command.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "cli/sim_progress.h"
#include "kube/config/autoscaler_config.h"
#include "sim/compare.h"
#include "sim/losses.h"
#include "sim/report.h"
#include "sim/scenario.h"
#include "sim/scheduler_eval.h"
#include "sim/simulator.h"
#include "sim/summary.h"

namespace tidepool::cli {

CLI::App* AddSimulateCommand(CLI::App& app, SimulateFlags& flags) {
  auto* cmd = app.add_subcommand(
      "simulate", "Replay a training trace through the decision loop: cost and waiting times");
  cmd->add_option("--trace", flags.trace,
                  "Trace CSV (native or the Alibaba GPU trace); default: the built-in scenario");
  cmd->add_option("--config", flags.config,
                  "AutoscalerConfig YAML file (its optional `simulation:` section sets the "
                  "simulated world)")
      ->capture_default_str();
  cmd->add_option("--sim-config", flags.sim_config,
                  "Simulation settings YAML (seed, bootDelay, pools, scheduler, checkpointEvery, "
                  "gpuSharing, queueGangs); replaces the config's `simulation:` section");
  cmd->add_option("--seed", flags.seed, "Random seed (overrides the simulation settings' seed)")
      ->each([&flags](const std::string&) { flags.seed_set = true; });
  cmd->add_option("-o,--output", flags.output, "Output format")
      ->check(CLI::IsMember({"json", "text"}));
  cmd->add_flag("--check-invariants", flags.check_invariants,
                "Check the simulator's invariants after every event, and every scale-down pass "
                "on the cluster model against one on a built snapshot (slower)");
  cmd->add_flag("--compare", flags.compare,
                "Run the same trace under tidepool's policy, a Cluster Autoscaler-like policy "
                "and a static cluster sized for the peak; print one table");
  cmd->add_flag(
      "--warm-eval", flags.warm_eval,
      "Run the same trace with the warm-capacity policies (off, spare, headroom, "
      "predictive) on the on-demand GPU pools; print one table (see docs/performance.md)");
  cmd->add_flag("--queue-eval", flags.queue_eval,
                "Run the same trace twice: gang jobs pending from their submit, and queued as "
                "Kueue queues them (admitted once provisioned); print one table");
  cmd->add_flag("--scheduler-eval", flags.scheduler_eval,
                "Run the same trace under tidepool's policy with the scheduler's least- and "
                "most-allocated scoring; print one table and what most-allocated saves");
  cmd->add_option("--scenario", flags.scenario,
                  "Without --trace: the built-in scenario, or `periodic` (daily GPU bursts)")
      ->check(CLI::IsMember({"builtin", "periodic"}));
  cmd->add_option("--report", flags.report,
                  "Write a self-contained HTML report (charts and summary) to this file");
  cmd->add_option("--losses", flags.losses,
                  "Write every restart an eviction caused, with the work it threw away, to this "
                  "CSV file (one row per restart, for every policy run)");
  cmd->add_option("--progress", flags.progress,
                  "A progress line on stderr (jobs done, simulated day, ETA): auto shows it when "
                  "stderr is a terminal and the run takes over half a second, always shows it "
                  "at once on any stderr")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  return cmd;
}

Result<sim::SimInput> LoadSimSettings(const std::string& config_path,
                                      const std::string& sim_config_path,
                                      std::string_view command) {
  sim::SimInput in;
  TIDEPOOL_ASSIGN_OR_RETURN(kube::config::ConfigFile file,
                            kube::config::LoadConfigFile(config_path));
  TIDEPOOL_RETURN_IF_ERROR(kube::config::RequirePoolsInFile(file.config, config_path, command));
  in.config = std::move(file.config);
  if (!sim_config_path.empty()) {
    TIDEPOOL_ASSIGN_OR_RETURN(in.sim, sim::LoadSimConfig(sim_config_path));
  } else if (file.simulation) {
    TIDEPOOL_ASSIGN_OR_RETURN(in.sim, sim::ParseSimSection(file.simulation->value()));
  }
  return in;
}

int RunSimulateCommand(const SimulateFlags& flags) {
  auto fail = [](const Error& e) {
    std::fprintf(stderr, "tidepool: %s\n", e.message().c_str());
    return 2;
  };
  auto loaded = LoadSimSettings(flags.config, flags.sim_config, "simulate");
  if (!loaded) return fail(loaded.error());
  sim::SimInput in = std::move(*loaded);
  if (flags.seed_set) in.sim.seed = flags.seed;
  in.sim.check_invariants = flags.check_invariants;
  in.record_timeline = !flags.report.empty();
  if (flags.trace.empty()) {
    in.jobs = flags.scenario == "periodic" ? sim::PeriodicGpuScenario(in.sim.seed)
                                           : sim::BuiltinScenario(in.sim.seed);
  } else {
    auto jobs = sim::LoadTrace(flags.trace, sim::TraceOptions{.gpu_sharing = in.sim.gpu_sharing});
    if (!jobs) return fail(jobs.error());
    in.jobs = std::move(*jobs);
  }

  ProgressLine progress(stderr, TerminalLine::DelayFor(flags.progress));
  if (flags.progress == "always" || (flags.progress == "auto" && isatty(STDERR_FILENO))) {
    in.on_progress = [&progress](const sim::Progress& p) { progress.Show(p); };
  }

  std::vector<sim::PolicyRun> runs;
  const bool evaluation =
      flags.compare || flags.warm_eval || flags.queue_eval || flags.scheduler_eval;
  if (int{flags.compare} + int{flags.warm_eval} + int{flags.queue_eval} +
          int{flags.scheduler_eval} >
      1) {
    return fail(Error(Error::Code::kInvalidArgument,
                      "--compare, --warm-eval, --queue-eval and --scheduler-eval are separate "
                      "evaluations; give one"));
  }
  if (flags.scheduler_eval) {
    auto r = sim::RunSchedulerEvaluation(in);
    if (!r) return fail(r.error());
    runs = std::move(*r);
  } else if (flags.queue_eval) {
    auto r = sim::RunQueueEvaluation(in);
    if (!r) return fail(r.error());
    runs = std::move(*r);
  } else if (flags.warm_eval) {
    auto r = sim::RunWarmEvaluation(in);
    if (!r) return fail(r.error());
    runs = std::move(*r);
  } else if (flags.compare) {
    auto r = sim::RunComparison(in);
    if (!r) return fail(r.error());
    runs = std::move(*r);
  } else {
    auto summary = sim::RunSimulation(in);
    if (!summary) return fail(summary.error());
    runs.push_back(
        {"tidepool", "tidepool's default policy (the config as written)", std::move(*summary)});
  }

  if (!flags.report.empty()) {
    sim::ReportInput report;
    report.title = flags.trace.empty()
                       ? (flags.scenario == "periodic" ? std::string("periodic GPU scenario")
                                                       : std::string("built-in scenario"))
                       : std::filesystem::path(flags.trace).filename().string();
    report.config_name = flags.config;
    report.runs = runs;
    if (auto ok = sim::WriteHtmlReport(report, flags.report); !ok) return fail(ok.error());
  }

  if (!flags.losses.empty()) {
    if (auto ok = sim::WriteLossesCsv(runs, flags.losses); !ok) return fail(ok.error());
  }

  if (flags.scheduler_eval) {
    std::cout << (flags.output == "json" ? sim::SchedulerEvaluationToJson(runs).dump(2) + "\n"
                                         : sim::SchedulerEvaluationToText(runs));
  } else if (evaluation) {
    if (flags.output == "json") {
      std::cout << sim::ComparisonToJson(runs).dump(2) << "\n";
    } else if (flags.queue_eval) {
      std::cout << sim::QueueEvaluationToText(runs);
    } else {
      std::cout << (flags.warm_eval ? sim::WarmEvaluationToText(runs)
                                    : sim::ComparisonToText(runs));
    }
  } else if (flags.output == "json") {
    std::cout << sim::SummaryToJson(runs.front().summary).dump(2) << "\n";
  } else {
    std::cout << sim::SummaryToText(runs.front().summary);
  }
  return 0;
}

}  // namespace tidepool::cli
