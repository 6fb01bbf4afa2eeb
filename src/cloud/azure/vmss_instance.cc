#include "cloud/azure/vmss_instance.h"

#include <fmt/format.h>

#include <cstdlib>

#include "cloud/azure/url.h"
#include "cloud/json_fields.h"

namespace tidepool::cloud::azure {
namespace {

using nlohmann::json;

long long NumericId(const std::string& id) {
  char* end = nullptr;
  long long n = std::strtoll(id.c_str(), &end, 10);
  return (end != nullptr && *end == '\0' && !id.empty()) ? n : -1;
}

// The power state and a provisioning failure from the instance view's statuses.
void ReadInstanceView(const json& view, VmssInstance& inst) {
  if (!view.contains("statuses") || !view["statuses"].is_array()) return;
  for (const json& st : view["statuses"]) {
    std::string code = StringField(st, "code");
    if (code.starts_with("PowerState/")) {
      inst.power = code.substr(std::string_view("PowerState/").size());
    } else if (code.starts_with("ProvisioningState/failed")) {
      auto slash = code.find('/', std::string_view("ProvisioningState/").size());
      inst.error_code = slash == std::string::npos ? "" : code.substr(slash + 1);
      inst.error_message = StringField(st, "message");
      if (inst.provisioning.empty()) inst.provisioning = "Failed";
    }
  }
}

}  // namespace

bool VmssInstance::failed() const { return EqualsIgnoreCase(provisioning, "Failed"); }
bool VmssInstance::deleting() const { return EqualsIgnoreCase(provisioning, "Deleting"); }
long long VmssInstance::number() const { return NumericId(id); }
bool VmssInstance::stopped() const {
  return !failed() && !deleting() &&
         (EqualsIgnoreCase(power, "deallocated") || EqualsIgnoreCase(power, "deallocating"));
}

std::string ScaleSetPathOf(const VmssInstanceRef& ref) {
  return fmt::format(
      "/subscriptions/{}/resourceGroups/{}/providers/Microsoft.Compute/virtualMachineScaleSets/{}",
      ref.subscription, ref.resource_group, ref.scale_set);
}

Result<std::vector<VmssInstance>> ListVmssInstances(ArmClient& arm, const VmssInstanceRef& ref,
                                                    std::string_view api_version) {
  TIDEPOOL_ASSIGN_OR_RETURN(auto items, arm.List(ScaleSetPathOf(ref) + "/virtualMachines",
                                                 api_version, "$expand=instanceView"));
  std::vector<VmssInstance> out;
  out.reserve(items.size());
  for (const json& vm : items) {
    VmssInstance inst;
    inst.id = StringField(vm, "instanceId");
    std::string rid = StringField(vm, "id");
    if (inst.id.empty()) inst.id = rid.substr(rid.rfind('/') + 1);
    if (inst.id.empty()) continue;
    VmssInstanceRef at = ref;
    at.instance_id = inst.id;
    inst.provider_id = VmssProviderId(at);
    const json& props = ObjectField(vm, "properties");
    inst.provisioning = StringField(props, "provisioningState");
    inst.computer_name = StringField(ObjectField(props, "osProfile"), "computerName");
    ReadInstanceView(ObjectField(props, "instanceView"), inst);
    out.push_back(std::move(inst));
  }
  return out;
}

}  // namespace tidepool::cloud::azure
