// Starting the clusterapi provider: the management cluster's client, the node groups found there
// turned into the pools the rest of tidepool runs on, and the provider over them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cloud/clusterapi/clusterapi_provider.h"
#include "kube/client/api_client.h"
#include "model/pool.h"

namespace tidepool::cloud::clusterapi {

struct Connection {
  model::AutoscalerConfig config;     // the loaded config with one pool per usable node group
  std::vector<std::string> problems;  // node groups left out, each named with why
  std::unique_ptr<kube::ApiClient> management;  // set when it is not the workload cluster
  std::unique_ptr<ClusterApiProvider> provider;
};

// `workload` is the cluster tidepool watches; provider.managementKubeconfig names another one.
// Errors: bad settings, the management cluster unreachable or without Cluster API, no usable
// node group at all (the problems say why each was left out).
Result<Connection> Connect(const model::AutoscalerConfig& config, kube::ApiClient& workload);

}  // namespace tidepool::cloud::clusterapi
