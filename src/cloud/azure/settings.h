// The Azure providers' settings: the flattened `provider:` keys of the config (ProviderConfig::
// settings) validated into one struct, with errors that name the key ("provider.subscriptionId").
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/time.h"
#include "cloud/azure/auth.h"
#include "model/pool.h"

namespace tidepool::cloud::azure {

inline constexpr std::string_view kDefaultComputeApiVersion = "2025-04-01";
inline constexpr std::string_view kDefaultAksApiVersion = "2026-08-01";

struct AzureSettings {
  std::string type;  // "azure-vmss" or "aks"
  std::string subscription_id;
  std::string resource_group;  // the scale sets' (azure-vmss) or the managed cluster's (aks)
  std::string arm_endpoint = "https://management.azure.com";
  std::string compute_api_version = std::string(kDefaultComputeApiVersion);
  std::string aks_api_version = std::string(kDefaultAksApiVersion);
  AuthConfig auth;
  Duration request_timeout = std::chrono::seconds(30);
  Duration operation_timeout = std::chrono::minutes(30);
  // How long a stockout seen once (failed instances, a failed operation, a quota error) is still
  // reported in Refresh, so the loop's backoff sees it even if the failed instances are gone.
  Duration stockout_hold = std::chrono::minutes(3);
  bool force_deletion = false;  // VMSS delete with forceDeletion=true

  // azure-vmss: pool -> scale set name, given in the config.
  std::map<std::string, std::string> scale_sets;
  // azure-vmss discovery: scale sets tagged k8s.io_cluster-autoscaler_enabled and
  // k8s.io_cluster-autoscaler_<cluster> (when cluster set), or carrying aks-engine's poolName
  // tag (when pool_name_tag).
  std::string discovery_cluster;
  bool discovery_pool_name_tag = false;
  bool discovery() const { return !discovery_cluster.empty() || discovery_pool_name_tag; }

  // aks: the managed cluster and pool -> agent pool name (default: the pool's own name).
  std::string cluster_name;
  std::map<std::string, std::string> agent_pools;
};

// Validates `provider` for the Azure provider types against the configured pools. Unknown keys,
// missing required keys, inline secrets, malformed durations and references to unknown pools
// are kInvalidArgument errors naming the key and what was expected; a secret's value never
// appears in an error. Environment fallbacks (AZURE_TENANT_ID, AZURE_CLIENT_ID,
// AZURE_FEDERATED_TOKEN_FILE, AZURE_AUTHORITY_HOST for workload identity) come from `env`.
Result<AzureSettings> ParseAzureSettings(const model::ProviderConfig& provider,
                                         const std::vector<model::Pool>& pools,
                                         const EnvLookup& env);

}  // namespace tidepool::cloud::azure
