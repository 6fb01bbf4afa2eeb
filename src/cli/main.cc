// tidepool command-line entry point: run, plan, explain, simulate, version (docs/architecture.md).
// Bad configuration or state input prints a clear error and exits with code 2.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "autoscaler/loop.h"
#include "base/time.h"
#include "cli/allocator.h"
#include "cli/explain_cluster.h"
#include "cli/explain_provreq.h"
#include "cli/plan_text.h"
#include "cli/read_progress.h"
#include "cli/run_command.h"
#include "cli/simulate_command.h"
#include "kube/codec/objects.h"
#include "kube/config/autoscaler_config.h"
#include "planner/cluster.h"
#include "planner/plan_json.h"
#include "planner/scale_down.h"
#include "planner/scale_up.h"

namespace tidepool::cli {
namespace {

constexpr int kExitBadInput = 2;
// `explain provreq/NS/NAME` explains a ProvisioningRequest ("provreq/NAME" stays a pod of the
// namespace provreq).
constexpr std::string_view kProvreqPrefix = "provreq/";

int Fail(const Error& e) {
  std::fprintf(stderr, "tidepool: %s\n", e.message().c_str());
  return kExitBadInput;
}

// What `plan` and `explain` read: the config, the cluster state and the time.
struct Inputs {
  model::AutoscalerConfig config;
  kube::codec::ClusterState state;
  planner::PlannerInput planner;
};

// Parses repeated POOL=VALUE flags (--upcoming, --backoff) into the planner input.
Result<void> ApplyPoolFlags(const std::vector<std::string>& upcoming,
                            const std::vector<std::string>& backoff, Inputs& in) {
  for (const auto& [flag, values] : {std::pair{"--upcoming", &upcoming}, {"--backoff", &backoff}}) {
    for (const std::string& v : *values) {
      auto eq = v.find('=');
      std::string pool = v.substr(0, eq);
      if (eq == std::string::npos || in.config.FindPool(pool) == nullptr) {
        return InvalidArgument("{} \"{}\": expected POOL=VALUE with a pool of the config", flag, v);
      }
      std::string value = v.substr(eq + 1);
      if (std::string_view(flag) == "--upcoming") {
        int n = 0;
        auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
        if (ec != std::errc() || ptr != value.data() + value.size() || n < 0) {
          return InvalidArgument("--upcoming \"{}\": expected a non-negative node count", v);
        }
        in.planner.upcoming[pool] = n;
      } else {
        auto t = ParseRfc3339(value);
        if (!t) return std::unexpected(t.error().Wrap("--backoff"));
        in.planner.backoff_until[pool] = *t;
      }
    }
  }
  return {};
}

// `progress`: "auto" (a line on stderr while the state is read, when stderr is a terminal),
// "always" or "never".
// `threads`: 2 decodes the state beside parsing it (kube/codec/decode_pipeline.h).
Result<void> LoadInputs(const std::string& config_path, const std::string& state_path,
                        const std::string& now_text, const std::string& progress, int threads,
                        Inputs& in) {
  TIDEPOOL_ASSIGN_OR_RETURN(in.config, kube::config::LoadAutoscalerConfig(config_path));
  TIDEPOOL_RETURN_IF_ERROR(
      kube::config::RequirePoolsInFile(in.config, config_path, "plan/explain"));
  ReadProgressLine line(stderr, TerminalLine::DelayFor(progress));
  kube::codec::OnListProgress show;
  if (progress == "always" || (progress == "auto" && isatty(STDERR_FILENO))) {
    show = [&line](const kube::codec::ListProgress& p) { line.Show(p); };
  }
  auto state = kube::codec::LoadStatePath(state_path, show, threads);
  line.End();
  if (!state) return std::unexpected(state.error());
  in.state = std::move(*state);
  Time now = RealClock().Now();
  if (!now_text.empty()) {
    auto t = ParseRfc3339(now_text);
    if (!t) return std::unexpected(t.error().Wrap("--now"));
    now = *t;
  }
  planner::PlannerInput& p = in.planner;
  p.config = &in.config;
  p.now = now;
  for (const auto& n : in.state.nodes) p.nodes.push_back(&n);
  for (const auto& x : in.state.pods) p.pods.push_back(&x);
  for (const auto& x : in.state.pdbs) p.pdbs.push_back(&x);
  for (const auto& x : in.state.daemon_sets) p.daemon_sets.push_back(&x);
  if (!in.state.dra.empty()) p.dra = &in.state.dra;
  return {};
}

// `explain --pool`, CapacityBuffers: each served buffer as the pass resolved it, and the nodes
// of the pool a scale-up would add for its copies.
void ExplainBuffers(const autoscaler::Status& status,
                    const std::vector<autoscaler::Action>& actions, const std::string& pool_name) {
  if (status.buffers.empty()) {
    std::cout << "no capacity buffers served\n";
    return;
  }
  for (const autoscaler::BufferStatusLine& b : status.buffers) {
    std::cout << "capacity " << autoscaler::FormatBuffer(b) << "\n";
    // Its copies are named "<buffer>:buffer-<i>" in the buffer's namespace.
    const std::string prefix = b.buffer + ":buffer-";
    for (const autoscaler::Action& action : actions) {
      const auto* a = std::get_if<autoscaler::IncreasePool>(&action);
      if (a == nullptr || a->pool != pool_name) continue;
      long n = std::count_if(a->pods.begin(), a->pods.end(),
                             [&](const std::string& p) { return p.starts_with(prefix); });
      if (n > 0) {
        std::cout << fmt::format(
            "  would add {} node(s) of pool {} ({} of its pod(s) among them)\n", a->count,
            pool_name, n);
      }
    }
  }
}

// `explain --pool`: one decision pass of the loop on the state (with the learned warm state when
// given) and what it says about the pool's warm capacity and the CapacityBuffers.
int ExplainPool(const Inputs& in, const std::string& pool_name,
                const std::string& warm_state_path) {
  const model::Pool* pool = in.config.FindPool(pool_name);
  if (pool == nullptr) {
    return Fail(InvalidArgument("explain --pool {}: not a pool of the config", pool_name).error());
  }
  autoscaler::Autoscaler loop(in.config);
  if (!warm_state_path.empty()) {
    std::ifstream f(warm_state_path);
    if (!f) {
      return Fail(Error(Error::Code::kNotFound,
                        fmt::format("--warm-state {}: cannot be read", warm_state_path)));
    }
    std::stringstream text;
    text << f.rdbuf();
    if (auto ok = loop.ImportWarmState(text.str()); !ok) {
      return Fail(ok.error().Wrap("--warm-state " + warm_state_path));
    }
  }
  const autoscaler::Observation obs = ObservationOf(in.state);
  // Two passes: the first only opens a batch for pods that turned pending.
  std::vector<autoscaler::Action> actions = loop.Step(obs, in.planner.now);
  for (auto& a : loop.Step(obs, in.planner.now + in.config.scale_up.batch_max))
    actions.push_back(std::move(a));
  autoscaler::Status status = loop.GetStatus();
  for (const autoscaler::PoolStatus& p : status.pools) {
    if (p.name != pool_name) continue;
    std::cout << fmt::format("pool {}: min {} max {}, {} registered, {} ready\n", p.name, p.min,
                             p.max, p.registered, p.ready);
    if (p.deallocate) {
      std::cout << fmt::format(
          "scale-down: deallocate; a removed node is stopped while fewer than maxStopped {} are "
          "(the state file does not say how many are stopped now: {} assumed)\n",
          p.max_stopped, p.stopped);
    }
    ExplainBuffers(status, actions, pool_name);
    if (!p.warm) {
      std::cout << "no warm capacity configured (pools[].warm: spareNodes, headroom, "
                   "predictive)\n";
      return 0;
    }
    std::cout << "warm: " << autoscaler::FormatWarm(p) << "\n";
  }
  bool any = false;
  for (const autoscaler::Action& action : actions) {
    const auto* a = std::get_if<autoscaler::IncreasePool>(&action);
    // Increases made for warm capacity alone (pods' own scale-ups are not this pool's warmth).
    if (a == nullptr || a->pool != pool_name || a->warm == 0 || a->warm != a->count) continue;
    std::cout << "would add " << a->count << " node(s): " << a->reason << "\n";
    any = true;
  }
  if (!any) std::cout << "would add no node for warm capacity now\n";
  if (warm_state_path.empty() && pool->warm.predictive.enabled) {
    std::cout << "(nothing learned: pass --warm-state with the tidepool-warm-state ConfigMap's "
                 "data.state for the predictions)\n";
  }
  return 0;
}

// The flags of `plan` and `explain`.
struct PlanFlags {
  std::string config_path, state_path, now_text, output = "text";
  std::vector<std::string> upcoming, backoff;
  std::string progress = "auto";  // reading the state: auto | always | never
  int threads = std::thread::hardware_concurrency() >= 2 ? 2 : 1;  // reading the state
  // explain only
  std::string pod_key, node_name, pool_name, warm_state_path;
  bool cluster = false;
};

// How the state is read: --progress and --threads.
void AddReadOptions(CLI::App& cmd, PlanFlags& f) {
  cmd.add_option("--progress", f.progress,
                 "A progress line on stderr while a large state is read (a JSON List): auto "
                 "shows it when stderr is a terminal and reading takes over half a second, "
                 "always shows it at once on any stderr")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  cmd.add_option("--threads", f.threads,
                 "Threads for reading the state: 2 decodes a JSON List's objects while the "
                 "next ones are parsed; the plan is the same with 1 (default: 2 on a machine "
                 "with two cores or more)")
      ->check(CLI::Range(1, 2))
      ->capture_default_str();
}

CLI::App* AddPlanCommand(CLI::App& app, PlanFlags& f) {
  auto* plan = app.add_subcommand(
      "plan", "One snapshot, one decision: what tidepool would scale up and down now");
  plan->add_option("--config", f.config_path, "AutoscalerConfig YAML file")->required();
  plan->add_option("--state", f.state_path,
                   "Cluster state: output of `kubectl get nodes,pods,pdb,ds -A -o yaml|json`, "
                   "a file or a directory of files")
      ->required();
  plan->add_option("--now", f.now_text,
                   "Current time (RFC 3339) for delayAfterAdd; default: the system clock");
  plan->add_option("-o,--output", f.output, "Output format")
      ->check(CLI::IsMember({"json", "text"}));
  plan->add_option("--upcoming", f.upcoming,
                   "POOL=N: nodes requested from the provider and not registered yet");
  plan->add_option("--backoff", f.backoff,
                   "POOL=TIME: the pool may not grow before TIME (RFC 3339)");
  AddReadOptions(*plan, f);
  return plan;
}

CLI::App* AddExplainCommand(CLI::App& app, PlanFlags& f) {
  auto* explain = app.add_subcommand(
      "explain",
      "Why a pending pod does (not) trigger a scale-up, why a node stays, or what the "
      "scheduler's scoring costs (--cluster)");
  explain->add_option("pod", f.pod_key,
                      "The pod, as namespace/name (or name in default), or a "
                      "ProvisioningRequest as provreq/namespace/name");
  explain->add_option("--node", f.node_name, "Explain this node's scale-down instead");
  explain->add_option(
      "--pool", f.pool_name,
      "Explain this pool's warm capacity (spare nodes, headroom, pre-warming) and the "
      "CapacityBuffers");
  explain->add_flag("--cluster", f.cluster,
                    "What a MostAllocated kube-scheduler profile would save: the state's pods "
                    "replayed from an empty cluster on the config's pools with least- and "
                    "most-allocated scoring");
  explain->add_option("--warm-state", f.warm_state_path,
                      "With --pool: the learned state, i.e. the data.state of the "
                      "tidepool-warm-state ConfigMap");
  explain->add_option("--config", f.config_path, "AutoscalerConfig YAML file")->required();
  explain->add_option("--state", f.state_path, "Cluster state (as for plan)")->required();
  explain->add_option("--now", f.now_text, "Current time (RFC 3339)");
  explain->add_option("-o,--output", f.output, "Output format")
      ->check(CLI::IsMember({"json", "text"}));
  explain->add_option("--upcoming", f.upcoming, "POOL=N, as for plan");
  explain->add_option("--backoff", f.backoff, "POOL=TIME, as for plan");
  AddReadOptions(*explain, f);
  return explain;
}

int RunPlan(const Inputs& in, const std::string& output) {
  planner::ScaleUpPlan up = planner::ScaleUpPlanner().Plan(in.planner);
  planner::ScaleDownPlan down = planner::ScaleDownPlanner().Plan(in.planner);
  if (output == "json") {
    std::cout << planner::PlanToJson(up, down).dump(2) << "\n";
  } else {
    std::cout << PlanToText(up, down);
  }
  return 0;
}

int RunExplain(const Inputs& in, PlanFlags& f) {
  if (f.cluster) {
    if (!f.pod_key.empty() || !f.node_name.empty() || !f.pool_name.empty()) {
      return Fail(Error(Error::Code::kInvalidArgument,
                        "explain --cluster: explains the whole state; give it no pod, --node or "
                        "--pool"));
    }
    auto settings = LoadSimSettings(f.config_path, "", "explain --cluster");
    if (!settings) return Fail(settings.error());
    return ExplainCluster(*settings, in.state, in.planner.now, f.output);
  }
  if (!f.pool_name.empty()) return ExplainPool(in, f.pool_name, f.warm_state_path);
  if (!f.node_name.empty()) {
    std::cout << planner::ScaleDownPlanner().Explain(in.planner, f.node_name) << "\n";
    return 0;
  }
  if (f.pod_key.empty()) {
    return Fail(Error(Error::Code::kInvalidArgument,
                      "explain: name a pod (namespace/name), a ProvisioningRequest "
                      "(provreq/namespace/name) or a node with --node"));
  }
  if (std::string_view key = f.pod_key;
      key.starts_with(kProvreqPrefix) && key.find('/', kProvreqPrefix.size()) != key.npos) {
    key.remove_prefix(kProvreqPrefix.size());
    return ExplainProvisioningRequest(in.config, in.state, in.planner.now, key);
  }
  if (f.pod_key.find('/') == std::string::npos) f.pod_key = "default/" + f.pod_key;
  planner::PodExplanation ex = planner::ScaleUpPlanner().Explain(in.planner, f.pod_key);
  if (f.output == "json") {
    std::cout << planner::ExplanationToJson(ex).dump(2) << "\n";
  } else {
    std::cout << ExplanationToText(ex);
  }
  return ex.found ? 0 : 1;
}

}  // namespace

int Main(int argc, char** argv) {
  CLI::App app{"tidepool: a Kubernetes cluster autoscaler for machine-learning training"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for every command");

  auto* version = app.add_subcommand("version", "Print the version");
  PlanFlags plan_flags;
  auto* plan = AddPlanCommand(app, plan_flags);
  auto* explain = AddExplainCommand(app, plan_flags);
  RunFlags run_flags;
  auto* run = AddRunCommand(app, run_flags);
  SimulateFlags simulate_flags;
  auto* simulate = AddSimulateCommand(app, simulate_flags);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitBadInput;
  }

  if (*version) {
    std::printf("tidepool %s\nallocator: %s\n", TIDEPOOL_VERSION, AllocatorName().c_str());
    return 0;
  }
  if (*simulate) return RunSimulateCommand(simulate_flags);
  if (*run) return RunRunCommand(run_flags);

  const PlanFlags& f = plan_flags;
  Inputs in;
  if (auto ok = LoadInputs(f.config_path, f.state_path, f.now_text, f.progress, f.threads, in);
      !ok) {
    return Fail(ok.error());
  }
  if (auto ok = ApplyPoolFlags(f.upcoming, f.backoff, in); !ok) return Fail(ok.error());
  if (*plan) return RunPlan(in, f.output);
  if (*explain) return RunExplain(in, plan_flags);
  return 0;
}

}  // namespace tidepool::cli

int main(int argc, char** argv) { return tidepool::cli::Main(argc, argv); }
