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
inline constexpr std::string_view kDefaultNetworkApiVersion = "2024-05-01";

// azure-vms: what a new VM of a pool is made from when the pool has no VM to clone
// (`provider.models.<pool>.*`), and the parts that override a clone (customDataFile, vmSize).
// Files are read when a VM is created, not at startup.
struct VmModel {
  std::string vm_size;          // vmSize; default the pool's instanceType
  std::string location;         // location; default the availability set's
  std::string image_publisher;  // imageReference.publisher / offer / sku / version
  std::string image_offer;
  std::string image_sku;
  std::string image_version;        // default "latest"
  std::string image_id;             // imageReference.id (a custom or gallery image)
  std::string subnet_id;            // subnetId: the NIC's subnet
  std::string availability_set_id;  // availabilitySetId
  std::string admin_username;       // adminUsername
  std::string ssh_public_key_file;  // sshPublicKeyFile: an OpenSSH public key
  std::string custom_data_file;     // customDataFile: cloud-init / bootstrap, sent base64-encoded
  std::string os_disk_type = "Standard_LRS";  // osDiskType: managed disk storageAccountType
  bool ip_forwarding = false;                 // enableIpForwarding on the NIC (kubenet needs it)
  bool has_image() const { return !image_id.empty() || !image_publisher.empty(); }
};

struct AzureSettings {
  std::string type;  // "azure-vmss", "aks" or "azure-vms"
  std::string subscription_id;
  // The scale sets' (azure-vmss), the managed cluster's (aks) or the VMs' (azure-vms).
  std::string resource_group;
  std::string arm_endpoint = "https://management.azure.com";
  std::string compute_api_version = std::string(kDefaultComputeApiVersion);
  std::string aks_api_version = std::string(kDefaultAksApiVersion);
  std::string network_api_version = std::string(kDefaultNetworkApiVersion);
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

  // azure-vms: the cluster's name suffix (acs-engine / aks-engine `resourceNameSuffix`, the
  // 12345678 in k8s-agentpool1-12345678-0); pool -> agent pool name in VM names (default the
  // pool's own name); pool -> model; how often leftover NICs and disks are looked for.
  std::string cluster_id;
  std::map<std::string, std::string> vm_pools;
  std::map<std::string, VmModel> vm_models;
  Duration sweep_interval = std::chrono::minutes(5);
  // Hosts whose VHD blobs (unmanaged OS disks) may be deleted: <account>.<suffix>.
  std::string storage_endpoint_suffix = "blob.core.windows.net";
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
