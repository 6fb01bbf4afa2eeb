// VmssProvider for pools with scaleDown.mode deallocate: stopping (deallocating) instances,
// starting them again before creating new ones, deleting stopped ones (MachineStopper).
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "cloud/azure/vmss_provider.h"

namespace tidepool::cloud::azure {
namespace {

using nlohmann::json;

// The stopped instances, ordered by instance id (lowest first).
std::vector<const VmssInstance*> StoppedInstances(const std::vector<VmssInstance>& instances) {
  std::vector<const VmssInstance*> out;
  for (const VmssInstance& inst : instances)
    if (inst.stopped()) out.push_back(&inst);
  std::sort(out.begin(), out.end(),
            [](const VmssInstance* a, const VmssInstance* b) { return a->number() < b->number(); });
  return out;
}

}  // namespace

Result<void> VmssProvider::PostInstances(const std::string& pool, const std::string& scale_set,
                                         std::string_view action,
                                         const std::vector<std::string>& ids, Time now) {
  if (ids.empty()) return {};
  // VirtualMachineScaleSets_Start / _Deallocate (the REST specs' examples): the body is
  // {"instanceIds": [...]}, the answer 200, or 202 with a location to poll.
  json body = {{"instanceIds", ids}};
  TIDEPOOL_ASSIGN_OR_RETURN(
      ArmResponse r, arm_->Send("POST", fmt::format("{}/{}", ScaleSetPath(scale_set), action),
                                settings_.compute_api_version, &body));
  if (r.status == 404) {
    spdlog::info("azure-vmss: pool {}: instances {} already gone ({})", pool, fmt::join(ids, ","),
                 action);
    return {};
  }
  if (!r.ok()) return std::unexpected(WriteFailed(pool, r, now));
  spdlog::info("azure-vmss: pool {}: {} instances {} of {}", pool, action, fmt::join(ids, ","),
               scale_set);
  if (r.operation) Track(pool, std::move(*r.operation), std::string(action));
  return {};
}

Result<void> VmssProvider::GrowFromStopped(const model::Pool& p, const std::string& scale_set,
                                           int delta, Time now) {
  TIDEPOOL_ASSIGN_OR_RETURN(std::vector<VmssInstance> instances, ListInstances(scale_set));
  std::vector<const VmssInstance*> stopped = StoppedInstances(instances);
  const int n_stopped = static_cast<int>(stopped.size());
  const int to_start = std::min(delta, n_stopped);
  if (to_start > 0) {
    // The max bounds running and requested machines; stopped ones are in the capacity too.
    TIDEPOOL_ASSIGN_OR_RETURN(ScaleSetView ss, ReadScaleSet(scale_set));
    TIDEPOOL_RETURN_IF_ERROR(WithinMax(p, ss.capacity - n_stopped, delta));
  }
  std::vector<std::string> ids;
  for (int i = 0; i < to_start; ++i) ids.push_back(stopped[n_stopped - 1 - i]->id);  // newest
  int started = to_start;
  if (auto r = PostInstances(p.name, scale_set, "start", ids, now); !r) {
    if (r.error().code() == Error::Code::kThrottled) return r;
    spdlog::warn(
        "azure-vmss: pool {}: starting stopped instances failed ({}); creating {} new "
        "instance(s) instead",
        p.name, r.error().message(), to_start);
    started = 0;
  }
  const int create = delta - started;
  if (create == 0) return {};
  // Stopped instances stay stopped (and in the capacity): the new ones come on top.
  return SetCapacity(
      p.name, scale_set,
      [&](int capacity) -> Result<int> {
        TIDEPOOL_ASSIGN_OR_RETURN(int running, WithinMax(p, capacity - n_stopped, delta));
        return running + n_stopped - started;
      },
      now);
}

Result<void> VmssProvider::StopNode(const std::string& pool, const model::Node& node, Time now) {
  TIDEPOOL_ASSIGN_OR_RETURN(const model::Pool* p, RequirePool(pool));
  if (!p->scale_down.Deallocates()) {
    return InvalidArgument("azure-vmss: pool {}: scaleDown.mode is delete; not stopping node {}",
                           pool, node.name());
  }
  TIDEPOOL_ASSIGN_OR_RETURN(std::string scale_set, Bound(pool));
  TIDEPOOL_ASSIGN_OR_RETURN(std::string id, InstanceOf(pool, scale_set, node));
  return PostInstances(pool, scale_set, "deallocate", {id}, now);
}

Result<void> VmssProvider::DeleteStopped(const std::string& pool, int count, Time now) {
  TIDEPOOL_RETURN_IF_ERROR(RequirePool(pool));
  if (count <= 0) {
    return InvalidArgument("azure-vmss: pool {}: delete {} stopped instances (expected > 0)", pool,
                           count);
  }
  TIDEPOOL_ASSIGN_OR_RETURN(std::string scale_set, Bound(pool));
  TIDEPOOL_ASSIGN_OR_RETURN(std::vector<VmssInstance> instances, ListInstances(scale_set));
  std::vector<std::string> ids;
  for (const VmssInstance* inst : StoppedInstances(instances)) {
    if (static_cast<int>(ids.size()) == count) break;
    ids.push_back(inst->id);
  }
  return DeleteInstances(pool, scale_set, ids, now);
}

}  // namespace tidepool::cloud::azure
