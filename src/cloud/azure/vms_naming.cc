#include "cloud/azure/vms_naming.h"

#include <fmt/format.h>

#include "cloud/azure/url.h"

namespace tidepool::cloud::azure {
namespace {

// The rest of `name` after `prefix` (both compared in lower case), or nullopt.
std::optional<std::string> AfterPrefix(std::string_view name, const std::string& prefix) {
  std::string lower = ToLower(name);
  std::string lower_prefix = ToLower(prefix);
  if (!lower.starts_with(lower_prefix)) return std::nullopt;
  return lower.substr(lower_prefix.size());
}

}  // namespace

std::optional<int> ParseVmIndex(std::string_view s) {
  if (s.empty() || s.size() > 6) return std::nullopt;
  int n = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  return n;
}

std::string VmsNaming::Vm(int index) const {
  return fmt::format("k8s-{}-{}-{}", agent_pool, cluster_id, index);
}

std::string VmsNaming::Nic(int index) const {
  return fmt::format("k8s-{}-{}-nic-{}", agent_pool, cluster_id, index);
}

std::string VmsNaming::OsDisk(int index) const { return Vm(index) + std::string(kOsDiskSuffix); }

std::optional<int> VmsNaming::VmIndex(std::string_view name) const {
  auto rest = AfterPrefix(name, fmt::format("k8s-{}-{}-", agent_pool, cluster_id));
  if (!rest) return std::nullopt;
  return ParseVmIndex(*rest);
}

std::optional<int> VmsNaming::NicIndex(std::string_view name) const {
  auto rest = AfterPrefix(name, fmt::format("k8s-{}-{}-nic-", agent_pool, cluster_id));
  if (!rest) return std::nullopt;
  return ParseVmIndex(*rest);
}

std::optional<int> VmsNaming::DiskIndex(std::string_view name) const {
  auto rest = AfterPrefix(name, fmt::format("k8s-{}-{}-", agent_pool, cluster_id));
  if (!rest) return std::nullopt;
  std::string_view r = *rest;
  size_t digits = 0;
  while (digits < r.size() && r[digits] >= '0' && r[digits] <= '9') ++digits;
  std::string_view tail = r.substr(digits);
  if (tail != kOsDiskSuffix && !tail.starts_with("_osdisk_")) return std::nullopt;
  return ParseVmIndex(r.substr(0, digits));
}

Result<ParsedVmName> ParseVmName(std::string_view name, std::string_view cluster_id) {
  const std::string lower = ToLower(name);
  const std::string suffix = ToLower(fmt::format("-{}-", cluster_id));
  if (lower.starts_with("k8s-")) {
    auto at = lower.rfind(suffix);
    if (at != std::string::npos && at > 4) {
      if (auto index = ParseVmIndex(std::string_view(lower).substr(at + suffix.size()))) {
        return ParsedVmName{.agent_pool = lower.substr(4, at - 4), .index = *index};
      }
    }
  }
  return InvalidArgument("VM name \"{}\": expected k8s-<agentPool>-{}-<index>", name, cluster_id);
}

int LowestFreeIndex(const std::set<int>& used) {
  int index = 0;
  while (used.contains(index)) ++index;
  return index;
}

}  // namespace tidepool::cloud::azure
