// The instances of a Uniform scale set as the providers see them (azure-vmss pools, and the scale
// sets behind AKS agent pools), listed with their instance view: provisioning and power state.
#pragma once

#include <string>
#include <vector>

#include "base/error.h"
#include "cloud/azure/arm.h"
#include "cloud/azure/provider_id.h"

namespace tidepool::cloud::azure {

// One instance of a scale set.
struct VmssInstance {
  std::string id;           // instanceId ("3")
  std::string provider_id;  // the kubelet's providerID for it
  std::string computer_name;
  std::string provisioning;  // properties.provisioningState: Creating, Succeeded, Failed, Deleting
  std::string power;         // from the instance view: running, deallocated, ... ("" unknown)
  std::string error_code;    // the failing ProvisioningState/failed/<code> status, if any
  std::string error_message;
  bool failed() const;
  bool deleting() const;
  bool stopped() const;      // deallocated or deallocating (and neither failed nor deleting)
  long long number() const;  // the instance id as a number (-1 when it is not one)
};

// "/subscriptions/<s>/resourceGroups/<rg>/providers/Microsoft.Compute/virtualMachineScaleSets/<n>"
// for `ref` (its instance_id is ignored).
std::string ScaleSetPathOf(const VmssInstanceRef& ref);

// GET <scale set>/virtualMachines?$expand=instanceView (VirtualMachineScaleSetVMs_List), every
// page. `ref` names the scale set (its instance_id is ignored).
Result<std::vector<VmssInstance>> ListVmssInstances(ArmClient& arm, const VmssInstanceRef& ref,
                                                    std::string_view api_version);

}  // namespace tidepool::cloud::azure
