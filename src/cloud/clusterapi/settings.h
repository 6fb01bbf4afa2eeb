// The clusterapi provider's settings (`provider:` keys beside `type: clusterapi`): where the
// management cluster is and which node groups are tidepool's. Validated once at startup.
#pragma once

#include <map>
#include <string>

#include "base/error.h"

namespace tidepool::cloud::clusterapi {

// The Cluster API group; its version is chosen per management cluster (ApiVersion).
inline constexpr std::string_view kGroup = "cluster.x-k8s.io";

struct Settings {
  // The management cluster (where MachineDeployments live): a kubeconfig file and context; empty
  // means the cluster tidepool watches (management and workload cluster are the same).
  std::string management_kubeconfig;
  std::string management_context;
  std::string namespace_;      // only node groups in this namespace ("" = every namespace)
  std::string label_selector;  // only node groups with these labels ("" = every one)
  std::string cluster_name;    // only node groups of this Cluster (spec.clusterName)
  std::string api_version;     // "v1beta2" or "v1beta1"; "" = the preferred one served
};

// Reads provider.settings (the config loader keeps the keys it does not know as text); an unknown
// key is an error naming it and the expected keys.
Result<Settings> ParseSettings(const std::map<std::string, std::string>& settings);

}  // namespace tidepool::cloud::clusterapi
