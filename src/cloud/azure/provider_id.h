// Azure node identities: a Node's providerID <-> the VMSS instance or standalone VM behind it,
// and AKS machine names (aks-<pool>-<id>-vmss00000a) <-> scale set instances. Pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tidepool::cloud::azure {

// One VM of a Uniform scale set.
struct VmssInstanceRef {
  std::string subscription;
  std::string resource_group;
  std::string scale_set;
  std::string instance_id;
};

// Parses "azure:///subscriptions/<s>/resourceGroups/<rg>/providers/Microsoft.Compute/
// virtualMachineScaleSets/<vmss>/virtualMachines/<id>" (the kubelet's providerID) or the same ARM
// resource id without the "azure://" prefix. Segment names match case-insensitively (nodes often
// carry a lower-cased resource group); values keep their case. nullopt for anything else
// (availability-set VMs, other clouds, empty).
std::optional<VmssInstanceRef> ParseVmssInstanceId(std::string_view provider_id);

// The ARM resource id of an instance: "/subscriptions/.../virtualMachines/<id>".
std::string VmssInstanceResourceId(const VmssInstanceRef& ref);
// The providerID the kubelet sets: "azure://" + the resource id.
std::string VmssProviderId(const VmssInstanceRef& ref);

// One standalone VM (an availability-set VM of acs-engine / aks-engine).
struct VmRef {
  std::string subscription;
  std::string resource_group;
  std::string name;
};

// Parses "azure:///subscriptions/<s>/resourceGroups/<rg>/providers/Microsoft.Compute/
// virtualMachines/<name>" or the same resource id without "azure://", matching segment names
// case-insensitively. nullopt for anything else (scale set instances included).
std::optional<VmRef> ParseVmResourceId(std::string_view provider_id);
// "/subscriptions/<s>/resourceGroups/<rg>/providers/Microsoft.Compute/virtualMachines/<name>".
std::string VmResourceId(const VmRef& ref);
// "azure://" + the resource id.
std::string VmProviderId(const VmRef& ref);

// The last segment of an ARM resource id ("" when there is none).
std::string ResourceName(std::string_view resource_id);

// AKS names a pool's scale set "aks-<agentpool>-<digits>-vmss": returns <agentpool>.
std::optional<std::string> AksAgentPoolOfScaleSet(std::string_view scale_set);

// The AKS machine (and node, and computer) name of instance `instance_id` of `scale_set`:
// the scale set name followed by the instance id in base 36, zero-padded to 6 characters
// (instance 10 of aks-nodepool1-42263519-vmss is aks-nodepool1-42263519-vmss00000a).
// nullopt when the id is not a number.
std::optional<std::string> AksMachineName(std::string_view scale_set, std::string_view instance_id);

// The agent pool of a machine/node name "aks-<agentpool>-<digits>-vmss<6 base-36 chars>".
std::optional<std::string> AksAgentPoolOfMachineName(std::string_view name);

}  // namespace tidepool::cloud::azure
