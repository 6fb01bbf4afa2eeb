#include "cli/run_command.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <expected>
#include <functional>
#include <memory>
#include <optional>

#include "base/kill_point.h"
#include "base/logging.h"
#include "cloud/azure/azure_provider.h"
#include "cloud/clusterapi/connect.h"
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

// A failure of `run`: the exit code and what to print.
struct Exit {
  int code;
  Error error;
};

template <typename T>
using Or = std::expected<T, Exit>;

std::unexpected<Exit> Failed(int code, Error e) {
  return std::unexpected(Exit{code, std::move(e)});
}

// The Lease settings from the flags, validated when leader election is on.
Or<kube::LeaderElectionConfig> LeaseFromFlags(const RunFlags& f) {
  kube::LeaderElectionConfig lease;
  lease.namespace_ = f.ns.empty() ? DefaultNamespace() : f.ns;
  lease.name = f.lease_name;
  lease.identity = f.identity.empty() ? DefaultIdentity() : f.identity;
  for (auto [flag, text, out] :
       {std::tuple{"--lease-duration", &f.lease_duration, &lease.lease_duration},
        std::tuple{"--renew-deadline", &f.renew_deadline, &lease.renew_deadline},
        std::tuple{"--retry-period", &f.retry_period, &lease.retry_period}}) {
    auto d = ParseDuration(*text);
    if (!d) return Failed(kExitBadInput, d.error().Wrap(flag));
    *out = *d;
  }
  if (f.leader_elect) {
    if (auto ok = kube::ValidateLeaderElectionConfig(lease); !ok) {
      return Failed(kExitBadInput, ok.error());
    }
  }
  return lease;
}

// Whether a node with this provider ID (compared without case) has registered.
std::function<bool(std::string_view)> NodeJoined(controller::InformerClusterReader& reader) {
  return [&reader](std::string_view provider_id) {
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
}

// What RunRunCommand owns and the parts it builds read.
struct RunContext {
  const RunFlags& flags;
  const model::AutoscalerConfig& config;
  const kube::LeaderElectionConfig& lease;
  RealClock& clock;
  kube::ApiClient& api;
  ops::Registry& registry;
  ops::TidepoolMetrics& metrics;
  controller::InformerClusterReader& reader;
  cloud::clusterapi::Connection* capi;  // provider type clusterapi: connected at startup
};

Or<std::unique_ptr<cloud::CloudProvider>> MakeProvider(const RunContext& d) {
  const std::string& type = d.config.provider.type;
  if (type == "azure-vmss" || type == "aks" || type == "azure-vms") {
    cloud::azure::Options o;
    o.clock = &d.clock;
    o.node_joined = NodeJoined(d.reader);
    o.arm_observer = [&metrics = d.metrics, type](const cloud::azure::ArmRequestRecord& r) {
      metrics.RecordCloudRequest(type, r.operation, r.status, r.seconds);
    };
    auto p = cloud::azure::MakeAzureProvider(d.config, std::move(o));
    if (!p) return Failed(kExitBadInput, p.error().Wrap(d.flags.config_path));
    return std::move(*p);
  }
  if (type == "clusterapi") {
    return std::unique_ptr<cloud::CloudProvider>(std::move(d.capi->provider));
  }
  if (type == "kwok") {
    auto p = cloud::kwok::KwokProvider::Create(
        d.config, d.api, d.clock,
        {.state_namespace = d.lease.namespace_,
         .list_nodes = [&reader = d.reader] { return reader.nodes().Snapshot(); }});
    if (!p) return Failed(kExitFailed, p.error());
    return std::unique_ptr<cloud::CloudProvider>(std::move(*p));
  }
  return Failed(kExitBadInput, Error(Error::Code::kInvalidArgument,
                                     fmt::format("{}: provider.type {}: not supported by `run` yet",
                                                 d.flags.config_path, type)));
}

// What the ops server reads: the run and its controller.
struct OpsDeps {
  const RunContext& run;
  controller::Controller& ctl;
  const kube::LeaderElector* elector;  // null without leader election
};

// The /status page: the loop's status and who leads, with the last pass's error.
std::function<std::string()> StatusPage(const OpsDeps& d) {
  return [d]() {
    ops::StatusPageExtras x;
    x.now = d.run.clock.Now();
    x.version = TIDEPOOL_VERSION;
    x.provider = d.run.config.provider.type;
    x.identity = d.run.lease.identity;
    x.is_leader = !d.elector || d.elector->IsLeader();
    x.leader = d.elector ? d.elector->Holder() : d.run.lease.identity;
    x.config = &d.run.config;
    controller::PassReport last = d.ctl.LastPass();
    if (last.skip != controller::SkipReason::kNone &&
        last.skip != controller::SkipReason::kNotLeader) {
      x.last_error = last.skipped_because;
      x.last_error_time = last.time;
    }
    return ops::RenderStatusPage(d.ctl.Status().value_or(autoscaler::Status{}), x);
  };
}

// The /healthz /readyz /metrics /status server on `listen`, started.
Or<std::unique_ptr<ops::OpsServer>> StartOpsServer(const std::string& listen, const OpsDeps& d) {
  ops::OpsServerOptions so;
  so.listen = listen;
  so.registry = &d.run.registry;
  so.not_ready_reason = [&reader = d.run.reader, &ctl = d.ctl]() -> std::optional<std::string> {
    if (!reader.HasSynced()) return "the cluster caches have not finished listing";
    controller::PassReport last = ctl.LastPass();
    if (last.skip == controller::SkipReason::kProviderRefreshFailed) return last.skipped_because;
    return std::nullopt;
  };
  so.status_page = StatusPage(d);
  auto server = std::make_unique<ops::OpsServer>(std::move(so));
  if (auto ok = server->Start(); !ok) return Failed(kExitBadInput, ok.error().Wrap("--listen"));
  spdlog::info("serving /healthz /readyz /metrics /status on {}", listen);
  return server;
}

// --cluster-model, checked by CLI11 to be one of on, off, verify.
controller::ModelUse ModelUseOf(const std::string& flag) {
  if (flag == "off") return controller::ModelUse::kOff;
  if (flag == "verify") return controller::ModelUse::kVerify;
  return controller::ModelUse::kOn;
}

void StartElector(kube::LeaderElector& elector, const kube::LeaderElectionConfig& lease,
                  controller::Controller& ctl) {
  elector.Start(
      [&] {
        spdlog::info("became leader ({} in Lease {}/{})", lease.identity, lease.namespace_,
                     lease.name);
        ctl.Notify();
      },
      [&] {
        spdlog::warn("lost the Lease {}/{}: stopped acting", lease.namespace_, lease.name);
        ctl.Notify();
      });
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
  run->add_option("--cluster-model", f.cluster_model,
                  "Keep a cluster model from the informers and plan on it (on); "
                  "build a snapshot every pass instead (off); or do both and stop the process "
                  "on any difference (verify, for debugging)")
      ->check(CLI::IsMember({"on", "off", "verify"}));
  run->add_flag("--skip-unchanged,!--no-skip-unchanged", f.skip_unchanged,
                "Skip a pass's planning when nothing it reads (cluster objects, the provider's "
                "pool sizes and node mapping) changed since a pass that decided nothing and no "
                "timer is due (default); --no-skip-unchanged plans at every pass");
  return run;
}

int RunRunCommand(const RunFlags& f) {
  auto format = ParseLogFormat(f.log_format);
  if (!format) return Fail(kExitBadInput, format.error());
  SetupLogging(*format, f.log_level);
  // Tests only (tests/e2e/kill_points_test.sh): inert unless TIDEPOOL_KILL_AT is set.
  if (auto armed = ArmKillPointFromEnv(); !armed) return Fail(kExitBadInput, armed.error());

  auto config = kube::config::LoadAutoscalerConfig(f.config_path);
  if (!config) return Fail(kExitBadInput, config.error());
  auto client_config = kube::ResolveClientConfig(f.kubeconfig, f.context);
  if (!client_config) return Fail(kExitBadInput, client_config.error());
  auto lease = LeaseFromFlags(f);
  if (!lease) return Fail(lease.error().code, lease.error().error);

  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);

  RealClock clock;
  kube::ApiClient api(*client_config);
  ops::Registry registry;
  ops::TidepoolMetrics metrics(registry, TIDEPOOL_VERSION);
  api.SetObserver([&metrics](const kube::RequestRecord& r) {
    metrics.RecordKubeRequest(r.verb, r.resource, r.status, r.seconds);
  });
  // Cluster API: the pools are the node groups found on the management cluster.
  std::optional<cloud::clusterapi::Connection> capi;
  if (config->provider.type == "clusterapi") {
    auto c = cloud::clusterapi::Connect(*config, api);
    if (!c) {
      bool bad_input = c.error().code() == Error::Code::kInvalidArgument;
      return Fail(bad_input ? kExitBadInput : kExitFailed, c.error().Wrap(f.config_path));
    }
    for (const std::string& p : c->problems) spdlog::warn("node group left out: {}", p);
    for (const auto& p : c->config.pools) {
      spdlog::info("pool {}: node group min {} max {}", p.name, p.min, p.max);
    }
    *config = c->config;
    capi = std::move(*c);
  }

  spdlog::info("tidepool {} starting: API server {} ({}), provider {}, {} pools{}",
               TIDEPOOL_VERSION, client_config->server, client_config->source,
               config->provider.type, config->pools.size(), f.dry_run ? ", dry run" : "");

  controller::InformerClusterReader reader(api, {}, ModelUseOf(f.cluster_model));
  RunContext run{
      f, *config, *lease, clock, api, registry, metrics, reader, capi ? &*capi : nullptr};
  auto provider = MakeProvider(run);
  if (!provider) return Fail(provider.error().code, provider.error().error);

  controller::ApiClusterWriter writer(
      api, clock, {.status_namespace = lease->namespace_, .reporting_instance = lease->identity});

  std::unique_ptr<kube::LeaderElector> elector;
  controller::ControllerOptions options;
  options.dry_run = f.dry_run;
  if (f.leader_elect) {
    elector = std::make_unique<kube::LeaderElector>(api, *lease, clock);
    options.is_leader = [e = elector.get()] { return e->IsLeader(); };
  }
  options.metrics = &metrics;
  options.loop.skip_unchanged = f.skip_unchanged;
  controller::Controller ctl(*config, reader, writer, **provider, clock, options);

  std::unique_ptr<ops::OpsServer> server;
  if (!f.listen.empty()) {
    auto started = StartOpsServer(f.listen, {run, ctl, elector.get()});
    if (!started) return Fail(started.error().code, started.error().error);
    server = std::move(*started);
  }

  reader.Start();
  if (elector) StartElector(*elector, *lease, ctl);
  auto result = ctl.Run(g_stop);
  spdlog::info("stopping");
  if (elector) elector->Stop();
  if (server) server->Stop();
  reader.Stop();
  if (auto* kwok = dynamic_cast<cloud::kwok::KwokProvider*>(provider->get())) kwok->Stop();
  if (!result) return Fail(kExitFailed, result.error());
  return 0;
}

}  // namespace tidepool::cli
