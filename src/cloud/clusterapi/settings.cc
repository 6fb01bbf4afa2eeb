#include "cloud/clusterapi/settings.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tidepool::cloud::clusterapi {

namespace {

constexpr std::string_view kKeys[] = {"managementKubeconfig", "managementContext", "namespace",
                                      "labelSelector",        "clusterName",       "apiVersion"};

}  // namespace

Result<Settings> ParseSettings(const std::map<std::string, std::string>& settings) {
  Settings s;
  for (const auto& [key, value] : settings) {
    if (key == "managementKubeconfig") {
      s.management_kubeconfig = value;
    } else if (key == "managementContext") {
      s.management_context = value;
    } else if (key == "namespace") {
      s.namespace_ = value;
    } else if (key == "labelSelector") {
      s.label_selector = value;
    } else if (key == "clusterName") {
      s.cluster_name = value;
    } else if (key == "apiVersion") {
      if (value != "v1beta2" && value != "v1beta1") {
        return InvalidArgument(
            "provider.apiVersion: \"{}\" (expected v1beta2 or v1beta1, the Cluster API versions "
            "tidepool reads; leave it out to use the one the management cluster prefers)",
            value);
      }
      s.api_version = value;
    } else {
      return InvalidArgument(
          "provider.{}: unknown key for provider type clusterapi (expected one "
          "of: type, {})",
          key, fmt::join(kKeys, ", "));
    }
  }
  if (!s.management_context.empty() && s.management_kubeconfig.empty()) {
    return InvalidArgument(
        "provider.managementContext is set without provider.managementKubeconfig (expected both, "
        "or neither when the management cluster is the one tidepool runs against)");
  }
  return s;
}

}  // namespace tidepool::cloud::clusterapi
