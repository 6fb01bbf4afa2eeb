// azure-vms resource names: k8s-<agentPool>-<clusterId>-<index> for VMs (acs-engine / aks-engine
// style), -nic-<index> for NICs, <vm>-osdisk or <vm>_OsDisk_... for OS disks. Pure functions.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "base/error.h"

namespace tidepool::cloud::azure {

// tidepool names the OS disk of a VM it creates <vm><kOsDiskSuffix>.
inline constexpr std::string_view kOsDiskSuffix = "-osdisk";

// A VM index: a non-negative decimal of 1 to 6 digits ("12"); nullopt for anything else.
std::optional<int> ParseVmIndex(std::string_view s);

// The names of one agent pool's VMs, NICs and OS disks. Parsing ignores case (Azure names are
// case-insensitive) and answers nullopt for a name that is not this pool's.
struct VmsNaming {
  std::string agent_pool;  // agentpool1
  std::string cluster_id;  // 12345678

  std::string Vm(int index) const;      // k8s-agentpool1-12345678-3
  std::string Nic(int index) const;     // k8s-agentpool1-12345678-nic-3
  std::string OsDisk(int index) const;  // k8s-agentpool1-12345678-3-osdisk

  std::optional<int> VmIndex(std::string_view name) const;
  std::optional<int> NicIndex(std::string_view name) const;
  // tidepool's <vm>-osdisk or the name Azure gives an unnamed OS disk, <vm>_OsDisk_1_<id>.
  std::optional<int> DiskIndex(std::string_view name) const;
};

// A VM name split on the pattern k8s-<agentPool>-<clusterId>-<index> for a known cluster id.
struct ParsedVmName {
  std::string agent_pool;  // lower case
  int index = -1;
};
// kInvalidArgument naming the expected pattern when `name` does not have it (for this cluster
// id, with a non-empty agent pool and an index).
Result<ParsedVmName> ParseVmName(std::string_view name, std::string_view cluster_id);

// The lowest index >= 0 not in `used`.
int LowestFreeIndex(const std::set<int>& used);

}  // namespace tidepool::cloud::azure
