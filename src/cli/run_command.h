// `tidepool run`: the live controller against a real API server and cloud provider, with leader
// election, until SIGTERM or SIGINT.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "base/time.h"

namespace tidepool::cli {

struct RunFlags {
  std::string config_path;
  std::string kubeconfig;
  std::string context;
  bool dry_run = false;
  std::string log_format = "text";
  std::string log_level = "info";
  // Where tidepool keeps its status ConfigMap, its Lease and (kwok) its provider state.
  std::string ns;
  bool leader_elect = true;
  std::string identity;
  std::string lease_name = "tidepool";
  std::string lease_duration = "15s";
  std::string renew_deadline = "10s";
  std::string retry_period = "2s";
  // /healthz, /readyz, /metrics and /status; "" turns the server off.
  std::string listen = ":8085";
  std::string cluster_model = "on";  // on, off or verify (controller::ModelUse)
  // Skip the loop's Step when nothing it reads changed since a Step that decided nothing
  // (autoscaler::LoopOptions::skip_unchanged); off plans at every pass, for debugging.
  bool skip_unchanged = true;
};

CLI::App* AddRunCommand(CLI::App& app, RunFlags& flags);

// Returns the exit code: 0 after a clean stop, 2 for bad input (config, kubeconfig, flags),
// 1 when the controller could not start (API server unreachable, caches never synced).
int RunRunCommand(const RunFlags& flags);

}  // namespace tidepool::cli
