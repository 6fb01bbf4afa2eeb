#include <spdlog/spdlog.h>

#include <algorithm>
#include <functional>
#include <utility>
#include <vector>

#include "cloud/azure/vms_provider.h"

// VmsProvider for pools with scaleDown.mode deallocate: stopping (deallocating) VMs, starting
// them again before creating new ones, deleting stopped ones (MachineStopper; vms_provider.h has
// the contract).

namespace tidepool::cloud::azure {
namespace {

// The pool's stopped VMs that are not being removed, lowest index first.
std::vector<const PoolVm*> StoppedVms(const std::vector<PoolVm>& vms,
                                      const std::function<bool(const PoolVm&)>& removing) {
  std::vector<const PoolVm*> out;
  for (const PoolVm& vm : vms)
    if (vm.stopped() && !removing(vm)) out.push_back(&vm);
  std::sort(out.begin(), out.end(),
            [](const PoolVm* a, const PoolVm* b) { return a->index < b->index; });
  return out;
}

}  // namespace

Result<void> VmsProvider::PostVm(const std::string& pool, const std::string& vm,
                                 std::string_view action, Time now) {
  // VirtualMachines_Start / _Deallocate (VirtualMachine_Start_MaximumSet_Gen.json,
  // VirtualMachine_Deallocate_MaximumSet_Gen.json of the REST specs): no body; 200, or 202 with
  // a location to poll.
  TIDEPOOL_ASSIGN_OR_RETURN(ArmResponse r,
                            arm_->Send("POST", fmt::format("{}/{}", VmPath(vm), action),
                                       settings_.compute_api_version, nullptr));
  if (r.status == 404) {
    return Fail(Error::Code::kNotFound, "azure-vms: pool {}: {} VM {}: the VM is gone", pool,
                action, vm);
  }
  if (!r.ok()) return std::unexpected(WriteFailed(pool, r, now));
  spdlog::info("azure-vms: pool {}: {} VM {}", pool, action, vm);
  if (r.operation) Track(pool, std::move(*r.operation), std::string(action));
  return {};
}

Result<int> VmsProvider::StartStopped(const model::Pool& p, const std::vector<PoolVm>& vms,
                                      int delta, Time now) {
  std::vector<const PoolVm*> stopped =
      StoppedVms(vms, [&](const PoolVm& vm) { return Removing(p.name, vm.name); });
  int started = 0;
  int tried = 0;
  for (auto it = stopped.rbegin(); it != stopped.rend() && tried < delta; ++it, ++tried) {
    auto r = PostVm(p.name, (*it)->name, "start", now);
    if (r) {
      ++started;
      continue;
    }
    if (r.error().code() == Error::Code::kThrottled) return std::unexpected(r.error());
    spdlog::warn(
        "azure-vms: pool {}: starting stopped VM {} failed ({}); creating a new VM instead", p.name,
        (*it)->name, r.error().message());
  }
  return started;
}

Result<void> VmsProvider::StopNode(const std::string& pool, const model::Node& node, Time now) {
  TIDEPOOL_ASSIGN_OR_RETURN(const model::Pool* p, RequirePool(pool));
  if (!p->scale_down.Deallocates()) {
    return InvalidArgument("azure-vms: pool {}: scaleDown.mode is delete; not stopping node {}",
                           pool, node.name());
  }
  TIDEPOOL_ASSIGN_OR_RETURN(std::string vm, NodeVm(pool, node));
  if (Removing(pool, vm)) {
    spdlog::info("azure-vms: pool {}: VM {} is being removed; not stopping it", pool, vm);
    return {};
  }
  auto r = PostVm(pool, vm, "deallocate", now);
  if (!r && r.error().code() == Error::Code::kNotFound) {
    spdlog::info("azure-vms: pool {}: VM {} already gone", pool, vm);
    return {};
  }
  return r;
}

Result<void> VmsProvider::DeleteStopped(const std::string& pool, int count, Time now) {
  TIDEPOOL_RETURN_IF_ERROR(RequirePool(pool));
  if (count <= 0) {
    return InvalidArgument("azure-vms: pool {}: delete {} stopped VMs (expected > 0)", pool, count);
  }
  TIDEPOOL_ASSIGN_OR_RETURN(std::vector<nlohmann::json> all, ListVms());
  std::vector<PoolVm> vms = VmsOf(pool, all);
  std::vector<const PoolVm*> stopped =
      StoppedVms(vms, [&](const PoolVm& vm) { return Removing(pool, vm.name); });
  if (static_cast<int>(stopped.size()) > count) stopped.resize(count);
  Result<void> first_error;
  for (const PoolVm* vm : stopped) {
    auto r = RemoveVm(pool, vm->body, "stopped, beyond what the pool keeps", now);
    if (!r && first_error) first_error = std::unexpected(r.error());
  }
  return first_error;
}

}  // namespace tidepool::cloud::azure
