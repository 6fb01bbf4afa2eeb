// azure-vms: the NIC and VM bodies a new VM of a pool is created from, copied from a VM of the
// pool or built from the config's model (provider.models.<pool>). Pure: no ARM calls, no files.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "cloud/azure/settings.h"

namespace tidepool::cloud::azure {

// Tags tidepool puts on the NICs and VMs it creates (and acs-engine's, which it keeps).
inline constexpr std::string_view kTagTidepoolPool = "tidepool.dev/pool";
inline constexpr std::string_view kTagResourceNameSuffix = "resourceNameSuffix";
inline constexpr std::string_view kTagOrchestrator = "orchestrator";

// What new VMs of a pool are made from; names, the NIC reference and the OS disk name are set
// per VM (NameNewVm).
struct NewVmBodies {
  nlohmann::json nic;
  nlohmann::json vm;
};

// Standard base64 with padding (osProfile.customData).
std::string EncodeBase64(std::string_view in);

// The writable parts of an existing NIC, for a new NIC in the same subnet(s): subnets, load
// balancer pools, security groups, accelerated networking, IP forwarding. Addresses and public
// IPs are not copied.
nlohmann::json CloneNic(const nlohmann::json& nic);

// The writable parts of an existing VM, for a new VM of the same pool. Names, the NIC and the OS
// disk name are set per VM later. The OS disk is always a managed disk.
nlohmann::json CloneVm(const nlohmann::json& vm);

// `tags` with the pool's own: tidepool.dev/pool, poolName and resourceNameSuffix.
nlohmann::json PoolTags(nlohmann::json tags, std::string_view pool, std::string_view agent_pool,
                        std::string_view cluster_id);

// The id of a VM's primary NIC (the last one marked primary, else the first listed); "" when
// the VM lists none.
std::string PrimaryNicId(const nlohmann::json& vm);

// Bodies copied from a VM of the pool and its primary NIC, with `tags`, the VM's location (the
// NIC's own when it has one) and the config's overrides (vmSize, subnetId, availabilitySetId)
// when `overrides` is given. customData is not handled here: ARM never returns it.
NewVmBodies BodiesFromClone(const nlohmann::json& vm, const nlohmann::json& nic,
                            const nlohmann::json& tags, const VmModel* overrides);

// What BodiesFromConfig needs besides the model: resolved values and the files' contents.
struct ConfigModelInputs {
  std::string vm_size;   // the model's, or the pool's instanceType
  std::string location;  // the model's, or the availability set's
  nlohmann::json tags;
  std::string ssh_key;      // the public key file's contents (trailing newlines are dropped)
  std::string custom_data;  // the bootstrap file's contents (sent base64-encoded)
};

// kInvalidArgument "<key>.<field>: required to create pool <pool>'s first VM (<what>)".
std::unexpected<Error> MissingModelField(std::string_view key, std::string_view field,
                                         std::string_view pool, std::string_view what);

// The fields a first VM cannot be made without, in this order: vmSize (`vm_size`, the resolved
// size), imageReference, subnetId, adminUsername, sshPublicKeyFile, customDataFile. `key` is
// the model's config key (provider.models.<pool>). The location is checked by the caller, once
// it has asked the availability set.
Result<void> CheckConfigModel(const VmModel& m, std::string_view vm_size, std::string_view key,
                              std::string_view pool);

// Bodies built from the config's model: a NIC with one dynamic IP configuration in the
// model's subnet, and a VM from the image with a managed OS disk, SSH-key-only login and the
// bootstrap as customData.
NewVmBodies BodiesFromConfig(const VmModel& m, const ConfigModelInputs& in);

// Makes `vm` the body of VM `name`: its computer name, its OS disk's name and its one NIC.
void NameNewVm(nlohmann::json& vm, const std::string& name, const std::string& os_disk,
               const std::string& nic_id);

// What removing a listed VM deletes besides the VM: its NICs, its managed OS disk, or the VHD
// blob of its unmanaged OS disk.
struct VmResources {
  std::string name;
  std::vector<std::string> nics;  // resource ids
  std::string disk;               // managed disk resource id ("" none)
  std::string vhd_uri;            // storageProfile.osDisk.vhd.uri ("" none)
};
VmResources ResourcesOf(const nlohmann::json& vm);

}  // namespace tidepool::cloud::azure
