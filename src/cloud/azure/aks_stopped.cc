// AksProvider for pools with scaleDown.mode deallocate: stopping the drained node's own scale set
// instance, keeping the agent pool's count equal to the machines that run, starting stopped
// machines through the count, deleting stopped machines (MachineStopper).
#include <spdlog/spdlog.h>

#include <algorithm>

#include "cloud/azure/aks_provider.h"
#include "cloud/azure/provider_id.h"
#include "cloud/azure/url.h"
#include "cloud/json_fields.h"

namespace tidepool::cloud::azure {
namespace {

using nlohmann::json;

// The scale set behind the machines: the one their resourceIds name (nullopt: no machine has one).
std::optional<VmssInstanceRef> ScaleSetOfMachines(const std::vector<AksMachine>& machines) {
  for (const AksMachine& m : machines) {
    if (auto ref = ParseVmssInstanceId(m.provider_id)) return ref;
  }
  return std::nullopt;
}

}  // namespace

Result<void> AksProvider::CheckDeallocateMode(const std::string& pool,
                                              const std::string& agent_pool,
                                              const json& agent_pool_body) const {
  std::string mode = StringField(ObjectField(agent_pool_body, "properties"), "scaleDownMode");
  if (EqualsIgnoreCase(mode, "Deallocate")) return {};
  return InvalidArgument(
      "aks: pool {}: pools[].scaleDown.mode is deallocate, but agent pool {} of managed cluster "
      "{} has scaleDownMode {}, and AKS deletes the deallocated VMs of such a pool (expected "
      "scaleDownMode Deallocate: az aks nodepool update --resource-group {} --cluster-name {} "
      "--name {} --scale-down-mode Deallocate, or properties.scaleDownMode \"Deallocate\" in the "
      "agent pool's ARM PUT; or scaleDown.mode delete for this pool)",
      pool, agent_pool, settings_.cluster_name, mode.empty() ? "unset (Delete)" : mode,
      settings_.resource_group, settings_.cluster_name, agent_pool);
}

Result<AksProvider::StoppedView> AksProvider::ReadStopped(const std::string& pool,
                                                          const std::string& agent_pool) {
  TIDEPOOL_ASSIGN_OR_RETURN(Machines machines, ListMachines(agent_pool));
  return StoppedOf(pool, agent_pool, std::move(machines));
}

Result<AksProvider::StoppedView> AksProvider::StoppedOf(const std::string& pool,
                                                        const std::string& agent_pool,
                                                        Machines machines) {
  if (!machines) {
    return InvalidArgument(
        "aks: pool {}: scaleDown.mode deallocate needs the agent pool machines API "
        "(agentPools/{}/machines answered 404/400; expected provider.aksApiVersion {} or later)",
        pool, agent_pool, kDefaultAksApiVersion);
  }
  StoppedView v;
  v.machines = std::move(*machines);
  machines_[pool] = v.machines;
  auto ref = ScaleSetOfMachines(v.machines);
  if (!ref) return v;  // no machine, nothing stopped
  TIDEPOOL_ASSIGN_OR_RETURN(v.instances,
                            ListVmssInstances(*arm_, *ref, settings_.compute_api_version));
  for (const VmssInstance& inst : v.instances) {
    if (inst.stopped()) {
      ++v.stopped;
      v.stopped_ids.insert(ToLower(inst.provider_id));
    } else if (!inst.deleting()) {
      ++v.not_stopped;
    }
  }
  return v;
}

Result<void> AksProvider::RefreshStopped(const model::Pool& pool, const std::string& agent_pool,
                                         const AgentPoolView& ap, Machines machines, PoolSize& size,
                                         Time now) {
  // A mismatch is logged once (until it changes); nothing is stopped then, and StopNode refuses.
  auto warn_once = [&](const Error& e) {
    if (std::string& last = warned_[pool.name]; last != e.message()) {
      last = e.message();
      spdlog::warn("{}", last);
    }
  };
  if (auto mode = CheckDeallocateMode(pool.name, agent_pool, ap.body); !mode) {
    warn_once(mode.error());
    return {};
  }
  auto read = StoppedOf(pool.name, agent_pool, std::move(machines));
  if (!read && read.error().code() == Error::Code::kInvalidArgument) {
    warn_once(read.error());
    return {};
  }
  if (!read) return std::unexpected(read.error());
  warned_.erase(pool.name);
  const StoppedView& v = *read;
  if (v.instances.empty()) return {};  // no scale set instance listed yet: count stands
  size.stopped = v.stopped;
  size.instances = 0;
  for (const VmssInstance& inst : v.instances) {
    if (!inst.stopped() && !inst.failed() && !inst.deleting()) ++size.instances;
  }
  if (pending_operations(pool.name) > 0) return {};  // count is moving; take it as it is
  size.target = std::min(ap.count, v.not_stopped);
  if (ap.count <= v.not_stopped || v.stopped == 0 || ap.from_cache) return {};
  // count still counts machines tidepool stopped: AKS would start them again at its next write.
  spdlog::info("aks: pool {}: count {} counts {} stopped machine(s); lowering it to {}", pool.name,
               ap.count, ap.count - v.not_stopped, v.not_stopped);
  const int running = v.not_stopped;
  if (auto r = SetCount(
          pool.name, agent_pool, [&](int count) -> Result<int> { return std::min(count, running); },
          now);
      !r) {
    spdlog::warn("aks: pool {}: lowering count to the running machines failed: {}", pool.name,
                 r.error().message());
  }
  return {};
}

Result<void> AksProvider::GrowKeepingStopped(const model::Pool& p, const std::string& agent_pool,
                                             int delta, Time now) {
  TIDEPOOL_ASSIGN_OR_RETURN(AgentPoolView ap, ReadAgentPool(agent_pool));
  if (auto mode = CheckDeallocateMode(p.name, agent_pool, ap.body); !mode) {
    // Raising count creates machines in any mode; only stopping needs Deallocate.
    spdlog::warn("{}", mode.error().message());
    return SetCount(
        p.name, agent_pool, [&](int count) { return WithinMax(p, count, delta); }, now);
  }
  TIDEPOOL_ASSIGN_OR_RETURN(StoppedView v, ReadStopped(p.name, agent_pool));
  const int running = v.not_stopped;
  TIDEPOOL_RETURN_IF_ERROR(WithinMax(p, running, delta));
  // Under Deallocate, AKS meets a higher count by starting deallocated machines first. count is
  // set from the running machines, not raised from its own value, which may still count
  // machines stopped since the last write.
  return SetCount(
      p.name, agent_pool, [&](int) { return WithinMax(p, running, delta); }, now);
}

Result<void> AksProvider::StopNode(const std::string& pool, const model::Node& node, Time now) {
  TIDEPOOL_ASSIGN_OR_RETURN(const model::Pool* p, RequirePool(pool));
  if (!p->scale_down.Deallocates()) {
    return InvalidArgument("aks: pool {}: scaleDown.mode is delete; not stopping node {}", pool,
                           node.name());
  }
  TIDEPOOL_ASSIGN_OR_RETURN(std::string agent_pool, AgentPoolOf(pool));
  auto ref = ParseVmssInstanceId(node.provider_id);
  if (!ref) {
    return InvalidArgument(
        "aks: node {}: providerID \"{}\" is not a scale set instance (expected azure:///"
        "subscriptions/.../virtualMachineScaleSets/aks-{}-<digits>-vmss/virtualMachines/<id>)",
        node.name(), node.provider_id, agent_pool);
  }
  if (auto ap = AksAgentPoolOfScaleSet(ref->scale_set); !ap || *ap != agent_pool) {
    return InvalidArgument(
        "aks: node {} is an instance of scale set {}, which is not agent pool {} of pool {}",
        node.name(), ref->scale_set, agent_pool, pool);
  }
  TIDEPOOL_RETURN_IF_ERROR(CheckIdle(pool));
  TIDEPOOL_ASSIGN_OR_RETURN(AgentPoolView ap, ReadAgentPool(agent_pool));
  TIDEPOOL_RETURN_IF_ERROR(CheckDeallocateMode(pool, agent_pool, ap.body));
  // VirtualMachineScaleSets_Deallocate (the REST specs' examples): {"instanceIds": [...]}, 200,
  // or 202 with a location to poll.
  json body = {{"instanceIds", {ref->instance_id}}};
  TIDEPOOL_ASSIGN_OR_RETURN(ArmResponse r, arm_->Send("POST", ScaleSetPathOf(*ref) + "/deallocate",
                                                      settings_.compute_api_version, &body));
  if (r.status == 404) {
    spdlog::info("aks: pool {}: node {} already gone (deallocate)", pool, node.name());
    return {};
  }
  if (!r.ok()) return std::unexpected(WriteFailed(pool, r, now));
  spdlog::info("aks: pool {}: deallocating instance {} of {} (node {})", pool, ref->instance_id,
               ref->scale_set, node.name());
  if (r.operation) Track(pool, std::move(*r.operation), "stop");
  return {};
}

Result<void> AksProvider::DeleteStopped(const std::string& pool, int count, Time now) {
  TIDEPOOL_RETURN_IF_ERROR(RequirePool(pool));
  if (count <= 0) {
    return InvalidArgument("aks: pool {}: delete {} stopped machines (expected > 0)", pool, count);
  }
  TIDEPOOL_ASSIGN_OR_RETURN(std::string agent_pool, AgentPoolOf(pool));
  TIDEPOOL_RETURN_IF_ERROR(CheckIdle(pool));
  TIDEPOOL_ASSIGN_OR_RETURN(StoppedView v, ReadStopped(pool, agent_pool));
  std::vector<const VmssInstance*> stopped;
  for (const VmssInstance& inst : v.instances)
    if (inst.stopped()) stopped.push_back(&inst);
  std::sort(stopped.begin(), stopped.end(),
            [](const VmssInstance* a, const VmssInstance* b) { return a->number() < b->number(); });
  std::vector<std::string> names;
  for (const VmssInstance* inst : stopped) {
    if (static_cast<int>(names.size()) == count) break;
    std::string name;
    for (const AksMachine& m : v.machines)
      if (EqualsIgnoreCase(m.provider_id, inst->provider_id)) name = m.name;
    if (name.empty()) {
      auto ref = ParseVmssInstanceId(inst->provider_id);
      if (auto derived = ref ? AksMachineName(ref->scale_set, inst->id) : std::nullopt) {
        name = *derived;
      }
    }
    if (!name.empty()) names.push_back(std::move(name));
  }
  return DeleteMachines(pool, agent_pool, names, now);
}

}  // namespace tidepool::cloud::azure
