#include "cloud/clusterapi/connect.h"

#include <fmt/format.h>

#include "kube/client/client_config.h"

namespace tidepool::cloud::clusterapi {

Result<Connection> Connect(const model::AutoscalerConfig& config, kube::ApiClient& workload) {
  TIDEPOOL_ASSIGN_OR_RETURN(Settings settings, ParseSettings(config.provider.settings));
  Connection c;
  kube::ApiClient* management = &workload;
  if (!settings.management_kubeconfig.empty()) {
    auto client_config =
        kube::ResolveClientConfig(settings.management_kubeconfig, settings.management_context);
    if (!client_config) {
      return std::unexpected(client_config.error().Wrap("provider.managementKubeconfig"));
    }
    c.management = std::make_unique<kube::ApiClient>(std::move(*client_config));
    management = c.management.get();
  }
  TIDEPOOL_ASSIGN_OR_RETURN(ClusterApi api, ClusterApi::Connect(*management, settings));
  TIDEPOOL_ASSIGN_OR_RETURN(Discovery d, Discover(api, config));
  if (d.config.pools.empty()) {
    std::string why;
    for (const auto& p : d.problems) why += "\n  " + p;
    return Fail(Error::Code::kInvalidArgument,
                "provider clusterapi: no usable node group on {} (expected a MachineDeployment, "
                "MachineSet or MachinePool annotated {} and {}{}){}",
                management->config().server, kMinSizeAnnotation, kMaxSizeAnnotation,
                settings.namespace_.empty() ? "" : " in namespace " + settings.namespace_,
                why.empty() ? "" : "; left out:" + why);
  }
  TIDEPOOL_ASSIGN_OR_RETURN(c.provider, ClusterApiProvider::Create(std::move(api), d.groups));
  c.config = std::move(d.config);
  c.problems = std::move(d.problems);
  return c;
}

}  // namespace tidepool::cloud::clusterapi
