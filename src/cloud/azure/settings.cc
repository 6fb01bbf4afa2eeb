#include "cloud/azure/settings.h"

#include <algorithm>
#include <set>

#include "cloud/azure/url.h"

namespace tidepool::cloud::azure {
namespace {

constexpr std::string_view kCommonKeys[] = {"subscriptionId",
                                            "resourceGroup",
                                            "armEndpoint",
                                            "authorityHost",
                                            "armResource",
                                            "computeApiVersion",
                                            "aksApiVersion",
                                            "requestTimeout",
                                            "operationTimeout",
                                            "stockoutHold",
                                            "auth.type",
                                            "auth.tenantId",
                                            "auth.clientId",
                                            "auth.clientSecretFile",
                                            "auth.clientSecretEnv",
                                            "auth.tokenFile",
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
constexpr std::string_view kVmModelKeys[] = {"vmSize",
                                             "location",
                                             "imageReference.publisher",
                                             "imageReference.offer",
                                             "imageReference.sku",
                                             "imageReference.version",
                                             "imageReference.id",
                                             "subnetId",
                                             "availabilitySetId",
                                             "adminUsername",
                                             "sshPublicKeyFile",
                                             "customDataFile",
                                             "osDiskType",
                                             "enableIpForwarding"};
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

using KeyValues = std::map<std::string, std::string>;

// kv[key], or "" when absent.
std::string Get(const KeyValues& kv, std::string_view key) {
  auto it = kv.find(std::string(key));
  return it == kv.end() ? std::string() : it->second;
}

// "a, b, c": the configured pools' names, for errors.
std::string KnownPools(const std::set<std::string>& pool_names) {
  std::string out;
  for (const auto& n : pool_names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

template <typename Prefixes>
bool StartsWithAny(const std::string& key, const Prefixes& prefixes) {
  return std::any_of(std::begin(prefixes), std::end(prefixes),
                     [&](auto p) { return key.starts_with(p); });
}

// The keys a provider type accepts, for the unknown-key error.
std::string ExpectedKeys(bool vmss, bool vms) {
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
  return JoinKeys(expected);
}

// Unknown keys first: a typo should not surface as "required key missing". An inline secret
// is refused without repeating its value.
Result<void> CheckKnownKeys(const model::ProviderConfig& provider) {
  const bool vmss = provider.type == "azure-vmss";
  const bool aks = provider.type == "aks";
  const bool vms = provider.type == "azure-vms";
  for (const auto& [key, value] : provider.settings) {
    if (Contains(kCommonKeys, key)) continue;
    if (vmss && (Contains(kVmssKeys, key) || StartsWithAny(key, kVmssPrefixes))) continue;
    if (aks && (Contains(kAksKeys, key) || StartsWithAny(key, kAksPrefixes))) continue;
    if (vms && (Contains(kVmsKeys, key) || StartsWithAny(key, kVmsPrefixes))) continue;
    if (key == "auth.clientSecret" || key == "clientSecret" || key == "auth.secret") {
      // The value is deliberately not repeated.
      return InvalidArgument(
          "provider.{}: secrets are not accepted in the config file (expected "
          "auth.clientSecretFile: <path> or auth.clientSecretEnv: <variable name>)",
          key);
    }
    return InvalidArgument("provider.{}: unknown setting for {} (expected one of: {})", key,
                           provider.type, ExpectedKeys(vmss, vms));
  }
  return {};
}

// subscriptionId, resourceGroup, the endpoint, API versions and timeouts.
Result<void> ParseCommon(const KeyValues& kv, const std::string& type, AzureSettings& s) {
  s.subscription_id = Get(kv, "subscriptionId");
  if (s.subscription_id.empty()) {
    return InvalidArgument("provider.subscriptionId: required for {} (the subscription's id)",
                           type);
  }
  s.resource_group = Get(kv, "resourceGroup");
  if (s.resource_group.empty()) {
    return InvalidArgument(
        "provider.resourceGroup: required for {} (the resource group of the {})", type,
        type == "azure-vmss" ? "scale sets" : (type == "azure-vms" ? "VMs" : "managed cluster"));
  }
  if (auto v = Get(kv, "armEndpoint"); !v.empty()) s.arm_endpoint = v;
  TIDEPOOL_RETURN_IF_ERROR(CheckCredentialEndpoint(s.arm_endpoint, "provider.armEndpoint"));
  if (auto v = Get(kv, "computeApiVersion"); !v.empty()) s.compute_api_version = v;
  if (auto v = Get(kv, "aksApiVersion"); !v.empty()) s.aks_api_version = v;
  for (auto [key, out] : {std::pair{"requestTimeout", &s.request_timeout},
                          std::pair{"operationTimeout", &s.operation_timeout},
                          std::pair{"stockoutHold", &s.stockout_hold}}) {
    if (auto v = Get(kv, key); !v.empty()) {
      TIDEPOOL_ASSIGN_OR_RETURN(*out, ReadDur(key, v));
    }
  }
  return {};
}

Result<AuthType> ParseAuthType(const std::string& type) {
  if (type.empty()) {
    return InvalidArgument(
        "provider.auth.type: required (expected clientSecret, managedIdentity or "
        "workloadIdentity)");
  }
  if (type == "clientSecret") return AuthType::kClientSecret;
  if (type == "managedIdentity") return AuthType::kManagedIdentity;
  if (type == "workloadIdentity") return AuthType::kWorkloadIdentity;
  return InvalidArgument(
      "provider.auth.type: \"{}\" (expected clientSecret, managedIdentity or workloadIdentity)",
      type);
}

// Tenant, client and authority: from the config, for workload identity also from what its
// webhook injects into the pod; the token file for workload identity.
Result<void> ParseIdentity(const KeyValues& kv, const EnvLookup& env, const std::string& type,
                           AuthConfig& a) {
  auto envv = [&](std::string_view name) -> std::string {
    if (!env) return "";
    return env(name).value_or("");
  };
  a.tenant_id = Get(kv, "auth.tenantId");
  a.client_id = Get(kv, "auth.clientId");
  std::string authority = Get(kv, "authorityHost");
  if (a.type == AuthType::kWorkloadIdentity) {
    if (a.tenant_id.empty()) a.tenant_id = envv("AZURE_TENANT_ID");
    if (a.client_id.empty()) a.client_id = envv("AZURE_CLIENT_ID");
    if (authority.empty()) authority = envv("AZURE_AUTHORITY_HOST");
    a.token_file = Get(kv, "auth.tokenFile");
    if (a.token_file.empty()) a.token_file = envv("AZURE_FEDERATED_TOKEN_FILE");
    if (a.token_file.empty()) {
      return InvalidArgument(
          "provider.auth.tokenFile: required for workloadIdentity (or the environment variable "
          "AZURE_FEDERATED_TOKEN_FILE)");
    }
  }
  if (!authority.empty()) a.authority_host = authority;
  if (a.type == AuthType::kManagedIdentity) return {};
  if (a.tenant_id.empty()) {
    return InvalidArgument("provider.auth.tenantId: required for {} (the Azure AD tenant)", type);
  }
  if (a.client_id.empty()) {
    return InvalidArgument("provider.auth.clientId: required for {} (the application's client id)",
                           type);
  }
  return CheckCredentialEndpoint(a.authority_host, "provider.authorityHost");
}

// The client secret's source (client secret auth only) and the IMDS endpoint (managed
// identity only).
Result<void> ParseSecretSource(const KeyValues& kv, AuthConfig& a) {
  if (a.type == AuthType::kClientSecret) {
    a.client_secret.file = Get(kv, "auth.clientSecretFile");
    a.client_secret.env = Get(kv, "auth.clientSecretEnv");
    if (!a.client_secret.file.empty() && !a.client_secret.env.empty()) {
      return InvalidArgument(
          "provider.auth: clientSecretFile and clientSecretEnv are both given (expected one)");
    }
    if (a.client_secret.file.empty() && a.client_secret.env.empty()) {
      a.client_secret.env = "AZURE_CLIENT_SECRET";
    }
  } else if (!Get(kv, "auth.clientSecretFile").empty() ||
             !Get(kv, "auth.clientSecretEnv").empty()) {
    return InvalidArgument("provider.auth.clientSecret*: only used with auth.type clientSecret");
  }
  if (a.type == AuthType::kManagedIdentity) {
    if (auto v = Get(kv, "auth.imdsEndpoint"); !v.empty()) a.imds_endpoint = v;
    TIDEPOOL_RETURN_IF_ERROR(CheckCredentialEndpoint(a.imds_endpoint, "provider.auth.imdsEndpoint",
                                                     /*allow_link_local=*/true));
  }
  return {};
}

Result<void> ParseAuth(const KeyValues& kv, const EnvLookup& env, AzureSettings& s) {
  AuthConfig& a = s.auth;
  a.timeout = s.request_timeout;
  const std::string type = Get(kv, "auth.type");
  TIDEPOOL_ASSIGN_OR_RETURN(a.type, ParseAuthType(type));
  if (auto v = Get(kv, "armResource"); !v.empty()) a.resource = v;
  TIDEPOOL_RETURN_IF_ERROR(ParseIdentity(kv, env, type, a));
  return ParseSecretSource(kv, a);
}

// The pool named after `prefix` in `key` ("scaleSets.cpu" -> "cpu"), which must be configured.
Result<std::string> PoolOfKey(const std::string& key, std::string_view prefix,
                              const std::set<std::string>& pool_names) {
  std::string pool = key.substr(prefix.size());
  if (!pool_names.contains(pool)) {
    return InvalidArgument("provider.{}: no pool named \"{}\" (expected one of: {})", key, pool,
                           KnownPools(pool_names));
  }
  return pool;
}

// The azure-vmss keys: forceDeletion, discovery.*, scaleSets.<pool>.
Result<void> ParseVmssSettings(const KeyValues& kv, const std::vector<model::Pool>& pools,
                               const std::set<std::string>& pool_names, AzureSettings& s) {
  if (auto v = Get(kv, "forceDeletion"); !v.empty()) {
    TIDEPOOL_ASSIGN_OR_RETURN(s.force_deletion, ReadBool("forceDeletion", v));
  }
  s.discovery_cluster = Get(kv, "discovery.clusterName");
  if (auto v = Get(kv, "discovery.poolNameTag"); !v.empty()) {
    TIDEPOOL_ASSIGN_OR_RETURN(s.discovery_pool_name_tag, ReadBool("discovery.poolNameTag", v));
  }
  for (const auto& [key, value] : kv) {
    if (!key.starts_with("scaleSets.")) continue;
    TIDEPOOL_ASSIGN_OR_RETURN(std::string pool, PoolOfKey(key, "scaleSets.", pool_names));
    if (value.empty()) {
      return InvalidArgument("provider.{}: empty (expected a scale set name)", key);
    }
    s.scale_sets[pool] = value;
  }
  if (s.discovery()) return {};
  for (const auto& p : pools) {
    if (!s.scale_sets.contains(p.name)) {
      return InvalidArgument(
          "provider.scaleSets.{}: required for pool \"{}\" (its scale set's name), or enable "
          "provider.discovery.clusterName / provider.discovery.poolNameTag",
          p.name, p.name);
    }
  }
  return {};
}

// The aks keys: clusterName, agentPools.<pool>.
Result<void> ParseAksSettings(const KeyValues& kv, const std::vector<model::Pool>& pools,
                              const std::set<std::string>& pool_names, AzureSettings& s) {
  s.cluster_name = Get(kv, "clusterName");
  if (s.cluster_name.empty()) {
    return InvalidArgument("provider.clusterName: required for aks (the managed cluster's name)");
  }
  for (const auto& p : pools) s.agent_pools[p.name] = p.name;
  for (const auto& [key, value] : kv) {
    if (!key.starts_with("agentPools.")) continue;
    TIDEPOOL_ASSIGN_OR_RETURN(std::string pool, PoolOfKey(key, "agentPools.", pool_names));
    if (value.empty()) {
      return InvalidArgument("provider.{}: empty (expected an agent pool name)", key);
    }
    s.agent_pools[pool] = value;
  }
  return {};
}

// The azure-vms scalars: clusterId, networkApiVersion, sweepInterval, storageEndpointSuffix.
Result<void> ParseVmsScalars(const KeyValues& kv, AzureSettings& s) {
  s.cluster_id = Get(kv, "clusterId");
  if (s.cluster_id.empty()) {
    return InvalidArgument(
        "provider.clusterId: required for azure-vms (the cluster's name suffix, e.g. 12345678 in "
        "the VM name k8s-agentpool1-12345678-0: acs-engine's resourceNameSuffix tag)");
  }
  if (!PlainValue(s.cluster_id) || s.cluster_id.find('-') != std::string::npos) {
    return InvalidArgument("provider.clusterId: \"{}\" (expected the suffix alone, without '-')",
                           s.cluster_id);
  }
  if (auto v = Get(kv, "networkApiVersion"); !v.empty()) s.network_api_version = v;
  if (auto v = Get(kv, "sweepInterval"); !v.empty()) {
    TIDEPOOL_ASSIGN_OR_RETURN(s.sweep_interval, ReadDur("sweepInterval", v));
  }
  if (auto v = Get(kv, "storageEndpointSuffix"); !v.empty()) {
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
  return {};
}

// vmPools.<pool>: the agent pool's name in VM names.
Result<void> ParseVmPool(const std::string& key, const std::string& value,
                         const std::set<std::string>& pool_names, AzureSettings& s) {
  TIDEPOOL_ASSIGN_OR_RETURN(std::string pool, PoolOfKey(key, "vmPools.", pool_names));
  if (value.empty() || !PlainValue(value) || value.find('-') != std::string::npos) {
    return InvalidArgument(
        "provider.{}: \"{}\" (expected the agent pool's name as it appears in its VM names, "
        "e.g. agentpool1)",
        key, value);
  }
  s.vm_pools[pool] = value;
  return {};
}

// Stores one model setting (`field` is one of kVmModelKeys, `value` not empty).
Result<void> SetModelField(VmModel& m, const std::string& field, const std::string& key,
                           const std::string& value) {
  const std::pair<std::string_view, std::string*> strings[] = {
      {"vmSize", &m.vm_size},
      {"location", &m.location},
      {"imageReference.publisher", &m.image_publisher},
      {"imageReference.offer", &m.image_offer},
      {"imageReference.sku", &m.image_sku},
      {"imageReference.version", &m.image_version},
      {"imageReference.id", &m.image_id},
      {"subnetId", &m.subnet_id},
      {"availabilitySetId", &m.availability_set_id},
      {"adminUsername", &m.admin_username},
      {"sshPublicKeyFile", &m.ssh_public_key_file},
      {"customDataFile", &m.custom_data_file},
      {"osDiskType", &m.os_disk_type}};
  for (const auto& [name, out] : strings) {
    if (field == name) *out = value;
  }
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
  return {};
}

// models.<pool>.<field>.
Result<void> ParseModelKey(const std::string& key, const std::string& value,
                           const std::set<std::string>& pool_names, AzureSettings& s) {
  std::string rest = key.substr(std::string_view("models.").size());
  auto dot = rest.find('.');
  std::string pool = rest.substr(0, dot);
  if (!pool_names.contains(pool)) {
    return InvalidArgument("provider.{}: no pool named \"{}\" (expected one of: {})", key, pool,
                           KnownPools(pool_names));
  }
  std::string field = dot == std::string::npos ? "" : rest.substr(dot + 1);
  if (!Contains(kVmModelKeys, field)) {
    std::vector<std::string_view> expected(std::begin(kVmModelKeys), std::end(kVmModelKeys));
    return InvalidArgument("provider.{}: unknown model setting \"{}\" (expected one of: {})", key,
                           field, JoinKeys(expected));
  }
  if (value.empty()) return InvalidArgument("provider.{}: empty (expected a value)", key);
  return SetModelField(s.vm_models[pool], field, key, value);
}

// A model's image: an id, or a complete marketplace reference, not both.
Result<void> CheckModelImage(const std::string& pool, const VmModel& m) {
  const bool marketplace = !m.image_publisher.empty() || !m.image_offer.empty() ||
                           !m.image_sku.empty() || !m.image_version.empty();
  if (marketplace && !m.image_id.empty()) {
    return InvalidArgument(
        "provider.models.{}.imageReference: both id and publisher/offer/sku are given (expected "
        "one of them)",
        pool);
  }
  if (marketplace && (m.image_publisher.empty() || m.image_offer.empty() || m.image_sku.empty())) {
    return InvalidArgument(
        "provider.models.{}.imageReference: publisher, offer and sku are all required for a "
        "marketplace image",
        pool);
  }
  return {};
}

// The azure-vms keys: the scalars, vmPools.<pool>, models.<pool>.<key>.
Result<void> ParseVmsSettings(const KeyValues& kv, const std::vector<model::Pool>& pools,
                              const std::set<std::string>& pool_names, AzureSettings& s) {
  TIDEPOOL_RETURN_IF_ERROR(ParseVmsScalars(kv, s));
  for (const auto& p : pools) s.vm_pools[p.name] = p.name;
  for (const auto& [key, value] : kv) {
    if (key.starts_with("vmPools.")) {
      TIDEPOOL_RETURN_IF_ERROR(ParseVmPool(key, value, pool_names, s));
    } else if (key.starts_with("models.")) {
      TIDEPOOL_RETURN_IF_ERROR(ParseModelKey(key, value, pool_names, s));
    }
  }
  for (const auto& [pool, m] : s.vm_models) {
    TIDEPOOL_RETURN_IF_ERROR(CheckModelImage(pool, m));
  }
  return {};
}

}  // namespace

Result<AzureSettings> ParseAzureSettings(const model::ProviderConfig& provider,
                                         const std::vector<model::Pool>& pools,
                                         const EnvLookup& env) {
  AzureSettings s;
  s.type = provider.type;
  if (provider.type != "azure-vmss" && provider.type != "aks" && provider.type != "azure-vms") {
    return InvalidArgument(
        "provider.type: \"{}\" is not served by the Azure providers (expected azure-vmss, aks or "
        "azure-vms)",
        provider.type);
  }
  const KeyValues& kv = provider.settings;
  TIDEPOOL_RETURN_IF_ERROR(CheckKnownKeys(provider));
  TIDEPOOL_RETURN_IF_ERROR(ParseCommon(kv, provider.type, s));
  TIDEPOOL_RETURN_IF_ERROR(ParseAuth(kv, env, s));
  std::set<std::string> pool_names;
  for (const auto& p : pools) pool_names.insert(p.name);
  if (provider.type == "azure-vmss") {
    TIDEPOOL_RETURN_IF_ERROR(ParseVmssSettings(kv, pools, pool_names, s));
  } else if (provider.type == "azure-vms") {
    TIDEPOOL_RETURN_IF_ERROR(ParseVmsSettings(kv, pools, pool_names, s));
  } else {
    TIDEPOOL_RETURN_IF_ERROR(ParseAksSettings(kv, pools, pool_names, s));
  }
  return s;
}

}  // namespace tidepool::cloud::azure
