#include "cloud/azure/provider_id.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cstdint>
#include <vector>

#include "cloud/azure/url.h"

namespace tidepool::cloud::azure {
namespace {

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

bool IsBase36(std::string_view s) {
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c)) && !(c >= 'a' && c <= 'z')) return false;
  return true;
}

}  // namespace

std::optional<VmssInstanceRef> ParseVmssInstanceId(std::string_view provider_id) {
  std::string_view s = provider_id;
  if (s.size() >= 8 && EqualsIgnoreCase(s.substr(0, 8), "azure://")) s.remove_prefix(8);
  if (!s.starts_with('/')) return std::nullopt;
  auto parts = Split(s.substr(1), '/');
  // subscriptions/<s>/resourceGroups/<rg>/providers/Microsoft.Compute/
  // virtualMachineScaleSets/<vmss>/virtualMachines/<id>
  if (parts.size() != 10) return std::nullopt;
  if (!EqualsIgnoreCase(parts[0], "subscriptions") ||
      !EqualsIgnoreCase(parts[2], "resourceGroups") || !EqualsIgnoreCase(parts[4], "providers") ||
      !EqualsIgnoreCase(parts[5], "Microsoft.Compute") ||
      !EqualsIgnoreCase(parts[6], "virtualMachineScaleSets") ||
      !EqualsIgnoreCase(parts[8], "virtualMachines")) {
    return std::nullopt;
  }
  for (auto p : parts)
    if (p.empty()) return std::nullopt;
  return VmssInstanceRef{std::string(parts[1]), std::string(parts[3]), std::string(parts[7]),
                         std::string(parts[9])};
}

std::string VmssInstanceResourceId(const VmssInstanceRef& ref) {
  return fmt::format(
      "/subscriptions/{}/resourceGroups/{}/providers/Microsoft.Compute/virtualMachineScaleSets/{}/"
      "virtualMachines/{}",
      ref.subscription, ref.resource_group, ref.scale_set, ref.instance_id);
}

std::string VmssProviderId(const VmssInstanceRef& ref) {
  return "azure://" + VmssInstanceResourceId(ref);
}

std::optional<VmRef> ParseVmResourceId(std::string_view provider_id) {
  std::string_view s = provider_id;
  if (s.size() >= 8 && EqualsIgnoreCase(s.substr(0, 8), "azure://")) s.remove_prefix(8);
  if (!s.starts_with('/')) return std::nullopt;
  auto parts = Split(s.substr(1), '/');
  // subscriptions/<s>/resourceGroups/<rg>/providers/Microsoft.Compute/virtualMachines/<name>
  if (parts.size() != 8) return std::nullopt;
  if (!EqualsIgnoreCase(parts[0], "subscriptions") ||
      !EqualsIgnoreCase(parts[2], "resourceGroups") || !EqualsIgnoreCase(parts[4], "providers") ||
      !EqualsIgnoreCase(parts[5], "Microsoft.Compute") ||
      !EqualsIgnoreCase(parts[6], "virtualMachines")) {
    return std::nullopt;
  }
  for (auto p : parts)
    if (p.empty()) return std::nullopt;
  return VmRef{std::string(parts[1]), std::string(parts[3]), std::string(parts[7])};
}

std::string VmResourceId(const VmRef& ref) {
  return fmt::format(
      "/subscriptions/{}/resourceGroups/{}/providers/Microsoft.Compute/virtualMachines/{}",
      ref.subscription, ref.resource_group, ref.name);
}

std::string VmProviderId(const VmRef& ref) { return "azure://" + VmResourceId(ref); }

std::string ResourceName(std::string_view resource_id) {
  while (resource_id.ends_with('/')) resource_id.remove_suffix(1);
  auto slash = resource_id.rfind('/');
  return std::string(slash == std::string_view::npos ? resource_id : resource_id.substr(slash + 1));
}

std::optional<std::string> AksAgentPoolOfScaleSet(std::string_view scale_set) {
  // aks-<pool>-<digits>-vmss; pool names are lowercase alphanumerics (no '-').
  if (!scale_set.starts_with("aks-") || !scale_set.ends_with("-vmss")) return std::nullopt;
  std::string_view mid = scale_set.substr(4, scale_set.size() - 4 - 5);
  auto dash = mid.rfind('-');
  if (dash == std::string_view::npos || dash == 0) return std::nullopt;
  if (!AllDigits(mid.substr(dash + 1))) return std::nullopt;
  return std::string(mid.substr(0, dash));
}

std::optional<std::string> AksMachineName(std::string_view scale_set,
                                          std::string_view instance_id) {
  if (!AllDigits(instance_id)) return std::nullopt;
  uint64_t n = 0;
  auto [ptr, ec] = std::from_chars(instance_id.data(), instance_id.data() + instance_id.size(), n);
  if (ec != std::errc()) return std::nullopt;
  static constexpr char kDigits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  std::string suffix;
  do {
    suffix.insert(suffix.begin(), kDigits[n % 36]);
    n /= 36;
  } while (n > 0);
  while (suffix.size() < 6) suffix.insert(suffix.begin(), '0');
  return std::string(scale_set) + suffix;
}

std::optional<std::string> AksAgentPoolOfMachineName(std::string_view name) {
  if (name.size() <= 6) return std::nullopt;
  std::string_view suffix = name.substr(name.size() - 6);
  if (!IsBase36(suffix)) return std::nullopt;
  return AksAgentPoolOfScaleSet(name.substr(0, name.size() - 6));
}

}  // namespace tidepool::cloud::azure
