#include "cloud/azure/settings.h"

#include <algorithm>
#include <set>

#include "cloud/azure/url.h"

namespace tidepool::cloud::azure {
namespace {

constexpr std::string_view kCommonKeys[] = {
    "subscriptionId",   "resourceGroup",      "armEndpoint",    "authorityHost",
    "armResource",      "computeApiVersion",  "aksApiVersion",  "requestTimeout",
    "operationTimeout", "stockoutHold",       "auth.type",      "auth.tenantId",
    "auth.clientId",    "auth.clientSecretFile", "auth.clientSecretEnv", "auth.tokenFile",
    "auth.imdsEndpoint"};
constexpr std::string_view kVmssKeys[] = {"forceDeletion", "discovery.clusterName",
                                          "discovery.poolNameTag"};
constexpr std::string_view kVmssPrefixes[] = {"scaleSets."};
constexpr std::string_view kAksKeys[] = {"clusterName"};
constexpr std::string_view kAksPrefixes[] = {"agentPools."};
constexpr std::string_view kVmsKeys[] = {"clusterId", "networkApiVersion", "sweepInterval",
                                         "storageEndpointSuffix"};
constexpr std::string_view kVmsPrefixes[] = {"vmPools.", "models."};
// The keys of one azure-vms model, after "models.<pool>.".
constexpr std::string_view kVmModelKeys[] = {
    "vmSize",         "location",          "imageReference.publisher", "imageReference.offer",
    "imageReference.sku", "imageReference.version", "imageReference.id", "subnetId",
    "availabilitySetId",  "adminUsername",     "sshPublicKeyFile",        "customDataFile",
    "osDiskType",         "enableIpForwarding"};
constexpr std::string_view kAuthTypes[] = {"clientSecret", "managedIdentity", "workloadIdentity"};

template <typename Range>
bool Contains(const Range& r, std::string_view key) {
  return std::find(std::begin(r), std::end(r), key) != std::end(r);
}

std::string JoinKeys(const std::vector<std::string_view>& keys) {
  std::string out;
  for (auto k : keys) out += (out.empty() ? "" : ", ") + std::string(k);
  return out;
}

Result<bool> ReadBool(const std::string& key, const std::string& value) {
  if (value == "true") return true;
  if (value == "false") return false;
  return InvalidArgument("provider.{}: \"{}\" (expected true or false)", key, value);
}

Result<Duration> ReadDur(const std::string& key, const std::string& value) {
  auto d = ParseDuration(value);
  if (!d || *d <= Duration::zero()) {
    return InvalidArgument("provider.{}: \"{}\" (expected a positive duration such as 30s or 15m)",
                           key, value);
  }
  return *d;
}


// A value without blanks or quotes (ARM checks names and ids itself; this catches a pasted
// space or quote early).
bool PlainValue(std::string_view v) {
  for (char c : v) {
    if (c == ' ' || c == '"' || c == '\'' || c == '\n' || c == '\t') return false;
  }
  return true;
}

// The azure-vms keys: clusterId, networkApiVersion, sweepInterval, vmPools.<pool>,
// models.<pool>.<key>.
Result<void> ParseVmsSettings(const std::map<std::string, std::string>& kv,
                              const std::vector<model::Pool>& pools,
                              const std::string& known_pools, AzureSettings& s) {
  auto get = [&](std::string_view key) -> std::string {
    auto it = kv.find(std::string(key));
    return it == kv.end() ? std::string() : it->second;
  };
  s.cluster_id = get("clusterId");
  if (s.cluster_id.empty()) {
    return InvalidArgument(
        "provider.clusterId: required for azure-vms (the cluster's name suffix, e.g. 12345678 in "
        "the VM name k8s-agentpool1-12345678-0: acs-engine's resourceNameSuffix tag)");
  }
  if (!PlainValue(s.cluster_id) || s.cluster_id.find('-') != std::string::npos) {
    return InvalidArgument("provider.clusterId: \"{}\" (expected the suffix alone, without '-')",
                           s.cluster_id);
  }
  if (auto v = get("networkApiVersion"); !v.empty()) s.network_api_version = v;
  if (auto v = get("sweepInterval"); !v.empty()) {
    TIDEPOOL_ASSIGN_OR_RETURN(s.sweep_interval, ReadDur("sweepInterval", v));
  }
  if (auto v = get("storageEndpointSuffix"); !v.empty()) {
    bool ok = v.front() != '.' && v.back() != '.' && v.find('.') != std::string::npos &&
              std::all_of(v.begin(), v.end(), [](char c) {
                return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
              });
    if (!ok) {
      return InvalidArgument(
          "provider.storageEndpointSuffix: \"{}\" (expected a lower-case DNS suffix such as "
          "blob.core.windows.net, without the account name or a scheme)",
          v);
    }
    s.storage_endpoint_suffix = v;
  }
  std::set<std::string> pool_names;
  for (const auto& p : pools) {
    pool_names.insert(p.name);
    s.vm_pools[p.name] = p.name;
  }
  for (const auto& [key, value] : kv) {
    if (key.starts_with("vmPools.")) {
      std::string pool = key.substr(std::string_view("vmPools.").size());
      if (!pool_names.contains(pool)) {
        return InvalidArgument("provider.{}: no pool named \"{}\" (expected one of: {})", key,
                               pool, known_pools);
      }
      if (value.empty() || !PlainValue(value) || value.find('-') != std::string::npos) {
        return InvalidArgument(
            "provider.{}: \"{}\" (expected the agent pool's name as it appears in its VM names, "
            "e.g. agentpool1)",
            key, value);
      }
      s.vm_pools[pool] = value;
      continue;
    }
    if (!key.starts_with("models.")) continue;
    std::string rest = key.substr(std::string_view("models.").size());
    auto dot = rest.find('.');
    std::string pool = rest.substr(0, dot);
    if (!pool_names.contains(pool)) {
      return InvalidArgument("provider.{}: no pool named \"{}\" (expected one of: {})", key, pool,
                             known_pools);
    }
    std::string field = dot == std::string::npos ? "" : rest.substr(dot + 1);
    if (!Contains(kVmModelKeys, field)) {
      std::vector<std::string_view> expected(std::begin(kVmModelKeys), std::end(kVmModelKeys));
      return InvalidArgument("provider.{}: unknown model setting \"{}\" (expected one of: {})",
                             key, field, JoinKeys(expected));
    }
    if (value.empty()) return InvalidArgument("provider.{}: empty (expected a value)", key);
    VmModel& m = s.vm_models[pool];
    if (field == "vmSize") m.vm_size = value;
    if (field == "location") m.location = value;
    if (field == "imageReference.publisher") m.image_publisher = value;
    if (field == "imageReference.offer") m.image_offer = value;
    if (field == "imageReference.sku") m.image_sku = value;
    if (field == "imageReference.version") m.image_version = value;
    if (field == "imageReference.id") m.image_id = value;
    if (field == "subnetId") m.subnet_id = value;
    if (field == "availabilitySetId") m.availability_set_id = value;
    if (field == "adminUsername") m.admin_username = value;
    if (field == "sshPublicKeyFile") m.ssh_public_key_file = value;
    if (field == "customDataFile") m.custom_data_file = value;
    if (field == "osDiskType") m.os_disk_type = value;
    if (field == "enableIpForwarding") {
      TIDEPOOL_ASSIGN_OR_RETURN(m.ip_forwarding, ReadBool(key, value));
    }
    if ((field == "subnetId" || field == "availabilitySetId" || field == "imageReference.id") &&
        !value.starts_with("/subscriptions/")) {
      return InvalidArgument(
          "provider.{}: \"{}\" (expected an ARM resource id, /subscriptions/<s>/resourceGroups/"
          "<rg>/providers/...)",
          key, value);
    }
  }
  for (const auto& [pool, m] : s.vm_models) {
    const bool marketplace = !m.image_publisher.empty() || !m.image_offer.empty() ||
                             !m.image_sku.empty() || !m.image_version.empty();
    if (marketplace && !m.image_id.empty()) {
      return InvalidArgument(
          "provider.models.{}.imageReference: both id and publisher/offer/sku are given (expected "
          "one of them)",
          pool);
    }
    if (marketplace &&
        (m.image_publisher.empty() || m.image_offer.empty() || m.image_sku.empty())) {
      return InvalidArgument(
          "provider.models.{}.imageReference: publisher, offer and sku are all required for a "
          "marketplace image",
          pool);
    }
  }
  return {};
}

}  // namespace

Result<AzureSettings> ParseAzureSettings(const model::ProviderConfig& provider,
                                         const std::vector<model::Pool>& pools,
                                         const EnvLookup& env) {
  AzureSettings s;
  s.type = provider.type;
  const bool vmss = provider.type == "azure-vmss";
  const bool aks = provider.type == "aks";
  const bool vms = provider.type == "azure-vms";
  if (!vmss && !aks && !vms) {
    return InvalidArgument(
        "provider.type: \"{}\" is not served by the Azure providers (expected azure-vmss, aks or "
        "azure-vms)",
        provider.type);
  }
  const auto& kv = provider.settings;

  // Unknown keys first: a typo should not surface as "required key missing".
  for (const auto& [key, value] : kv) {
    if (Contains(kCommonKeys, key)) continue;
    if (vmss && (Contains(kVmssKeys, key) ||
                 std::any_of(std::begin(kVmssPrefixes), std::end(kVmssPrefixes),
                             [&](auto p) { return key.starts_with(p); }))) {
      continue;
    }
    if (aks && (Contains(kAksKeys, key) ||
                std::any_of(std::begin(kAksPrefixes), std::end(kAksPrefixes),
                            [&](auto p) { return key.starts_with(p); }))) {
      continue;
    }
    if (vms && (Contains(kVmsKeys, key) ||
                std::any_of(std::begin(kVmsPrefixes), std::end(kVmsPrefixes),
                            [&](auto p) { return key.starts_with(p); }))) {
      continue;
    }
    if (key == "auth.clientSecret" || key == "clientSecret" || key == "auth.secret") {
      // The value is deliberately not repeated.
      return InvalidArgument(
          "provider.{}: secrets are not accepted in the config file (expected "
          "auth.clientSecretFile: <path> or auth.clientSecretEnv: <variable name>)",
          key);
    }
    std::vector<std::string_view> expected(std::begin(kCommonKeys), std::end(kCommonKeys));
    if (vmss) {
      expected.insert(expected.end(), std::begin(kVmssKeys), std::end(kVmssKeys));
      expected.push_back("scaleSets.<pool>");
    } else if (vms) {
      expected.insert(expected.end(), std::begin(kVmsKeys), std::end(kVmsKeys));
      expected.push_back("vmPools.<pool>");
      expected.push_back("models.<pool>.<key>");
    } else {
      expected.insert(expected.end(), std::begin(kAksKeys), std::end(kAksKeys));
      expected.push_back("agentPools.<pool>");
    }
    return InvalidArgument("provider.{}: unknown setting for {} (expected one of: {})", key,
                           provider.type, JoinKeys(expected));
  }

  auto get = [&](std::string_view key) -> std::string {
    auto it = kv.find(std::string(key));
    return it == kv.end() ? std::string() : it->second;
  };
  auto envv = [&](std::string_view name) -> std::string {
    if (!env) return "";
    return env(name).value_or("");
  };

  s.subscription_id = get("subscriptionId");
  if (s.subscription_id.empty()) {
    return InvalidArgument("provider.subscriptionId: required for {} (the subscription's id)",
                           provider.type);
  }
  s.resource_group = get("resourceGroup");
  if (s.resource_group.empty()) {
    return InvalidArgument(
        "provider.resourceGroup: required for {} (the resource group of the {})", provider.type,
        vmss ? "scale sets" : (vms ? "VMs" : "managed cluster"));
  }
  if (auto v = get("armEndpoint"); !v.empty()) s.arm_endpoint = v;
  TIDEPOOL_RETURN_IF_ERROR(CheckCredentialEndpoint(s.arm_endpoint, "provider.armEndpoint"));
  if (auto v = get("computeApiVersion"); !v.empty()) s.compute_api_version = v;
  if (auto v = get("aksApiVersion"); !v.empty()) s.aks_api_version = v;
  if (auto v = get("requestTimeout"); !v.empty()) {
    TIDEPOOL_ASSIGN_OR_RETURN(s.request_timeout, ReadDur("requestTimeout", v));
  }
  if (auto v = get("operationTimeout"); !v.empty()) {
    TIDEPOOL_ASSIGN_OR_RETURN(s.operation_timeout, ReadDur("operationTimeout", v));
  }
  if (auto v = get("stockoutHold"); !v.empty()) {
    TIDEPOOL_ASSIGN_OR_RETURN(s.stockout_hold, ReadDur("stockoutHold", v));
  }

  // Auth.
  AuthConfig& a = s.auth;
  a.timeout = s.request_timeout;
  std::string type = get("auth.type");
  if (type.empty()) {
    return InvalidArgument(
        "provider.auth.type: required (expected clientSecret, managedIdentity or "
        "workloadIdentity)");
  }
  if (type == "clientSecret") {
    a.type = AuthType::kClientSecret;
  } else if (type == "managedIdentity") {
    a.type = AuthType::kManagedIdentity;
  } else if (type == "workloadIdentity") {
    a.type = AuthType::kWorkloadIdentity;
  } else {
    return InvalidArgument(
        "provider.auth.type: \"{}\" (expected clientSecret, managedIdentity or workloadIdentity)",
        type);
  }
  if (auto v = get("armResource"); !v.empty()) a.resource = v;
  a.tenant_id = get("auth.tenantId");
  a.client_id = get("auth.clientId");
  std::string authority = get("authorityHost");
  if (a.type == AuthType::kWorkloadIdentity) {
    // What the workload identity webhook injects into the pod.
    if (a.tenant_id.empty()) a.tenant_id = envv("AZURE_TENANT_ID");
    if (a.client_id.empty()) a.client_id = envv("AZURE_CLIENT_ID");
    if (authority.empty()) authority = envv("AZURE_AUTHORITY_HOST");
    a.token_file = get("auth.tokenFile");
    if (a.token_file.empty()) a.token_file = envv("AZURE_FEDERATED_TOKEN_FILE");
    if (a.token_file.empty()) {
      return InvalidArgument(
          "provider.auth.tokenFile: required for workloadIdentity (or the environment variable "
          "AZURE_FEDERATED_TOKEN_FILE)");
    }
  }
  if (!authority.empty()) a.authority_host = authority;
  if (a.type != AuthType::kManagedIdentity) {
    if (a.tenant_id.empty()) {
      return InvalidArgument("provider.auth.tenantId: required for {} (the Azure AD tenant)",
                             type);
    }
    if (a.client_id.empty()) {
      return InvalidArgument(
          "provider.auth.clientId: required for {} (the application's client id)", type);
    }
    TIDEPOOL_RETURN_IF_ERROR(CheckCredentialEndpoint(a.authority_host, "provider.authorityHost"));
  }
  if (a.type == AuthType::kClientSecret) {
    a.client_secret.file = get("auth.clientSecretFile");
    a.client_secret.env = get("auth.clientSecretEnv");
    if (!a.client_secret.file.empty() && !a.client_secret.env.empty()) {
      return InvalidArgument(
          "provider.auth: clientSecretFile and clientSecretEnv are both given (expected one)");
    }
    if (a.client_secret.file.empty() && a.client_secret.env.empty()) {
      a.client_secret.env = "AZURE_CLIENT_SECRET";
    }
  } else if (!get("auth.clientSecretFile").empty() || !get("auth.clientSecretEnv").empty()) {
    return InvalidArgument("provider.auth.clientSecret*: only used with auth.type clientSecret");
  }
  if (a.type == AuthType::kManagedIdentity) {
    if (auto v = get("auth.imdsEndpoint"); !v.empty()) a.imds_endpoint = v;
    TIDEPOOL_RETURN_IF_ERROR(CheckCredentialEndpoint(a.imds_endpoint, "provider.auth.imdsEndpoint",
                                                     /*allow_link_local=*/true));
  }

  std::set<std::string> pool_names;
  for (const auto& p : pools) pool_names.insert(p.name);
  auto known_pools = [&] {
    std::string out;
    for (const auto& n : pool_names) out += (out.empty() ? "" : ", ") + n;
    return out;
  };

  if (vmss) {
    if (auto v = get("forceDeletion"); !v.empty()) {
      TIDEPOOL_ASSIGN_OR_RETURN(s.force_deletion, ReadBool("forceDeletion", v));
    }
    s.discovery_cluster = get("discovery.clusterName");
    if (auto v = get("discovery.poolNameTag"); !v.empty()) {
      TIDEPOOL_ASSIGN_OR_RETURN(s.discovery_pool_name_tag, ReadBool("discovery.poolNameTag", v));
    }
    for (const auto& [key, value] : kv) {
      if (!key.starts_with("scaleSets.")) continue;
      std::string pool = key.substr(std::string_view("scaleSets.").size());
      if (!pool_names.contains(pool)) {
        return InvalidArgument("provider.{}: no pool named \"{}\" (expected one of: {})", key,
                               pool, known_pools());
      }
      if (value.empty()) return InvalidArgument("provider.{}: empty (expected a scale set name)", key);
      s.scale_sets[pool] = value;
    }
    if (!s.discovery()) {
      for (const auto& p : pools) {
        if (!s.scale_sets.contains(p.name)) {
          return InvalidArgument(
              "provider.scaleSets.{}: required for pool \"{}\" (its scale set's name), or enable "
              "provider.discovery.clusterName / provider.discovery.poolNameTag",
              p.name, p.name);
        }
      }
    }
  } else if (vms) {
    TIDEPOOL_RETURN_IF_ERROR(ParseVmsSettings(kv, pools, known_pools(), s));
  } else {
    s.cluster_name = get("clusterName");
    if (s.cluster_name.empty()) {
      return InvalidArgument("provider.clusterName: required for aks (the managed cluster's name)");
    }
    for (const auto& p : pools) s.agent_pools[p.name] = p.name;
    for (const auto& [key, value] : kv) {
      if (!key.starts_with("agentPools.")) continue;
      std::string pool = key.substr(std::string_view("agentPools.").size());
      if (!pool_names.contains(pool)) {
        return InvalidArgument("provider.{}: no pool named \"{}\" (expected one of: {})", key,
                               pool, known_pools());
      }
      if (value.empty()) {
        return InvalidArgument("provider.{}: empty (expected an agent pool name)", key);
      }
      s.agent_pools[pool] = value;
    }
  }
  return s;
}

}  // namespace tidepool::cloud::azure
