#include "cli/run_command.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cctype>

#include <spdlog/spdlog.h>

#include "base/logging.h"
#include "cloud/azure/azure_provider.h"
#include "cloud/kwok/kwok_provider.h"
#include "controller/controller.h"
#include "controller/kube_adapters.h"
#include "kube/client/client_config.h"
#include "kube/client/leader.h"
#include "kube/config/autoscaler_config.h"
#include "ops/http_server.h"
#include "ops/metrics.h"
#include "ops/status_page.h"
#include "ops/tidepool_metrics.h"

namespace tidepool::cli {
namespace {

constexpr int kExitBadInput = 2;
constexpr int kExitFailed = 1;

std::atomic<bool> g_stop{false};

extern "C" void OnSignal(int) { g_stop.store(true); }

int Fail(int code, const Error& e) {
  std::fprintf(stderr, "tidepool: %s\n", e.message().c_str());
  return code;
}

std::string DefaultNamespace() {
  if (const char* ns = std::getenv("POD_NAMESPACE"); ns != nullptr && *ns != '\0') return ns;
  return "kube-system";
}

std::string DefaultIdentity() {
  if (const char* pod = std::getenv("POD_NAME"); pod != nullptr && *pod != '\0') return pod;
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  return fmt::format("{}_{}", host, getpid());
}

}  // namespace

CLI::App* AddRunCommand(CLI::App& app, RunFlags& f) {
  auto* run = app.add_subcommand("run", "Run the autoscaler against a cluster until stopped");
  run->add_option("--config", f.config_path, "AutoscalerConfig YAML file")->required();
  run->add_option("--kubeconfig", f.kubeconfig,
                  "kubeconfig file; default: $KUBECONFIG, in-cluster, ~/.kube/config");
  run->add_option("--context", f.context, "kubeconfig context; default: the current one");
  run->add_flag("--dry-run", f.dry_run, "Decide and log, but change nothing");
  run->add_option("--log-format", f.log_format, "Log format")
      ->check(CLI::IsMember({"text", "json"}));
  run->add_option("--log-level", f.log_level, "Log level")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));
  run->add_option("--namespace", f.ns,
                  "Namespace of the status ConfigMap and the Lease; default: $POD_NAMESPACE or "
                  "kube-system");
  run->add_flag("--leader-elect,!--no-leader-elect", f.leader_elect,
                "Act only while holding the Lease (default on; run 2 replicas)");
  run->add_option("--identity", f.identity,
                  "This replica's name in the Lease; default: $POD_NAME or host_pid");
  run->add_option("--lease-name", f.lease_name, "Name of the Lease");
  run->add_option("--lease-duration", f.lease_duration, "Lease duration");
  run->add_option("--renew-deadline", f.renew_deadline, "Stop acting if not renewed within");
  run->add_option("--retry-period", f.retry_period, "Between acquire/renew attempts");
  run->add_option("--listen", f.listen,
                  "Address of /healthz, /readyz, /metrics and /status ([host]:port; \"\" = off)");
  return run;
}

int RunRunCommand(const RunFlags& f) {
  auto format = ParseLogFormat(f.log_format);
  if (!format) return Fail(kExitBadInput, format.error());
  SetupLogging(*format, f.log_level);

  auto config = kube::config::LoadAutoscalerConfig(f.config_path);
  if (!config) return Fail(kExitBadInput, config.error());
  auto client_config = kube::ResolveClientConfig(f.kubeconfig, f.context);
  if (!client_config) return Fail(kExitBadInput, client_config.error());

  kube::LeaderElectionConfig lease;
  lease.namespace_ = f.ns.empty() ? DefaultNamespace() : f.ns;
  lease.name = f.lease_name;
  lease.identity = f.identity.empty() ? DefaultIdentity() : f.identity;
  for (auto [flag, text, out] :
       {std::tuple{"--lease-duration", &f.lease_duration, &lease.lease_duration},
        std::tuple{"--renew-deadline", &f.renew_deadline, &lease.renew_deadline},
        std::tuple{"--retry-period", &f.retry_period, &lease.retry_period}}) {
    auto d = ParseDuration(*text);
    if (!d) return Fail(kExitBadInput, d.error().Wrap(flag));
    *out = *d;
  }
  if (f.leader_elect) {
    if (auto ok = kube::ValidateLeaderElectionConfig(lease); !ok) {
      return Fail(kExitBadInput, ok.error());
    }
  }

  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);

  RealClock clock;
  kube::ApiClient api(*client_config);
  ops::Registry registry;
  ops::TidepoolMetrics metrics(registry, TIDEPOOL_VERSION);
  api.SetObserver([&metrics](const kube::RequestRecord& r) {
    metrics.RecordKubeRequest(r.verb, r.resource, r.status, r.seconds);
  });
  spdlog::info("tidepool {} starting: API server {} ({}), provider {}, {} pools{}",
               TIDEPOOL_VERSION, client_config->server, client_config->source,
               config->provider.type, config->pools.size(), f.dry_run ? ", dry run" : "");

  controller::InformerClusterReader reader(api);

  std::unique_ptr<cloud::CloudProvider> provider;
  if (config->provider.type == "azure-vmss" || config->provider.type == "aks" ||
      config->provider.type == "azure-vms") {
    cloud::azure::Options o;
    o.clock = &clock;
    o.node_joined = [&reader](std::string_view provider_id) {
      auto same = [&](const std::string& id) {
        return id.size() == provider_id.size() &&
               std::equal(id.begin(), id.end(), provider_id.begin(), [](char a, char b) {
                 return std::tolower(static_cast<unsigned char>(a)) ==
                        std::tolower(static_cast<unsigned char>(b));
               });
      };
      for (const auto& n : reader.nodes().Snapshot()) {
        if (same(n->provider_id)) return true;
      }
      return false;
    };
    o.arm_observer = [&metrics, type = config->provider.type](
                         const cloud::azure::ArmRequestRecord& r) {
      metrics.RecordCloudRequest(type, r.operation, r.status, r.seconds);
    };
    auto p = cloud::azure::MakeAzureProvider(*config, std::move(o));
    if (!p) return Fail(kExitBadInput, p.error().Wrap(f.config_path));
    provider = std::move(*p);
  } else if (config->provider.type == "kwok") {
    auto p = cloud::kwok::KwokProvider::Create(
        *config, api, clock,
        {.state_namespace = lease.namespace_,
         .list_nodes = [&reader] { return reader.nodes().Snapshot(); }});
    if (!p) return Fail(kExitFailed, p.error());
    provider = std::move(*p);
  } else {
    return Fail(kExitBadInput,
                Error(Error::Code::kInvalidArgument,
                      fmt::format("{}: provider.type {}: not supported by `run` yet", f.config_path,
                                  config->provider.type)));
  }

  controller::ApiClusterWriter writer(
      api, clock, {.status_namespace = lease.namespace_, .reporting_instance = lease.identity});

  std::unique_ptr<kube::LeaderElector> elector;
  controller::ControllerOptions options;
  options.dry_run = f.dry_run;
  if (f.leader_elect) {
    elector = std::make_unique<kube::LeaderElector>(api, lease, clock);
    options.is_leader = [e = elector.get()] { return e->IsLeader(); };
  }
  options.metrics = &metrics;
  controller::Controller ctl(*config, reader, writer, *provider, clock, options);

  std::unique_ptr<ops::OpsServer> server;
  if (!f.listen.empty()) {
    ops::OpsServerOptions so;
    so.listen = f.listen;
    so.registry = &registry;
    so.not_ready_reason = [&]() -> std::optional<std::string> {
      if (!reader.HasSynced()) return "the cluster caches have not finished listing";
      controller::PassReport last = ctl.LastPass();
      if (last.skip == controller::SkipReason::kProviderRefreshFailed) return last.skipped_because;
      return std::nullopt;
    };
    so.status_page = [&]() {
      ops::StatusPageExtras x;
      x.now = clock.Now();
      x.version = TIDEPOOL_VERSION;
      x.provider = config->provider.type;
      x.identity = lease.identity;
      x.is_leader = !elector || elector->IsLeader();
      x.leader = elector ? elector->Holder() : lease.identity;
      x.config = &*config;
      controller::PassReport last = ctl.LastPass();
      if (last.skip != controller::SkipReason::kNone &&
          last.skip != controller::SkipReason::kNotLeader) {
        x.last_error = last.skipped_because;
        x.last_error_time = last.time;
      }
      return ops::RenderStatusPage(ctl.Status().value_or(autoscaler::Status{}), x);
    };
    server = std::make_unique<ops::OpsServer>(std::move(so));
    if (auto ok = server->Start(); !ok) return Fail(kExitBadInput, ok.error().Wrap("--listen"));
    spdlog::info("serving /healthz /readyz /metrics /status on {}", f.listen);
  }

  reader.Start();
  if (elector) {
    elector->Start([&] {
                     spdlog::info("became leader ({} in Lease {}/{})", lease.identity,
                                  lease.namespace_, lease.name);
                     ctl.Notify();
                   },
                   [&] {
                     spdlog::warn("lost the Lease {}/{}: stopped acting", lease.namespace_,
                                  lease.name);
                     ctl.Notify();
                   });
  }
  auto result = ctl.Run(g_stop);
  spdlog::info("stopping");
  if (elector) elector->Stop();
  if (server) server->Stop();
  reader.Stop();
  if (auto* kwok = dynamic_cast<cloud::kwok::KwokProvider*>(provider.get())) kwok->Stop();
  if (!result) return Fail(kExitFailed, result.error());
  return 0;
}

}  // namespace tidepool::cli
