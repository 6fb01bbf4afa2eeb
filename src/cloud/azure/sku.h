// The VM size table: vCPUs, memory and GPUs of common Azure VM sizes (D, E, F, NC, ND, NV), so a
// pool discovered from a scale set or an agent pool gets a node template when it is at zero.
#pragma once

#include <span>
#include <string_view>

#include "model/resources.h"

namespace tidepool::cloud::azure {

struct VmSize {
  std::string_view name;  // "Standard_NC6s_v3" (ARM's spelling; lookups ignore case)
  int vcpus = 0;
  double memory_gib = 0;       // as Azure documents it, GiB
  int gpus = 0;                // whole GPUs the VM exposes as nvidia.com/gpu
  std::string_view gpu_model;  // "V100", "T4", "A100-80GB", ... ("" without GPUs)
};

// The size named `name` (case-insensitive), or nullptr when the table does not know it.
const VmSize* FindVmSize(std::string_view name);

// Every size in the table, for tests and documentation.
std::span<const VmSize> AllVmSizes();

// The node capacity a VM of this size reports before kubelet reservations: cpu, memory,
// nvidia.com/gpu (when it has GPUs) and `pods`.
model::Resources CapacityOf(const VmSize& size, int max_pods = 110);

}  // namespace tidepool::cloud::azure
