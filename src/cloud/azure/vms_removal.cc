#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "cloud/azure/blob.h"
#include "cloud/azure/lro.h"
#include "cloud/azure/provider_id.h"
#include "cloud/azure/url.h"
#include "cloud/azure/vms_provider.h"
#include "cloud/json_fields.h"

// VmsProvider, scale down: DeleteNode, DecreaseTargetSize and the removal steps (VM, NICs, OS
// disk, VHD blob), each sent once and followed by later calls (vms_provider.h has the contract).

namespace tidepool::cloud::azure {

using nlohmann::json;

VmsProvider::Removal VmsProvider::RemovalOf(const json& vm, std::string why) {
  VmResources parts = ResourcesOf(vm);
  Removal r;
  r.vm = std::move(parts.name);
  r.why = std::move(why);
  r.nics = std::move(parts.nics);
  r.disk = std::move(parts.disk);
  r.vhd_uri = std::move(parts.vhd_uri);
  return r;
}

void VmsProvider::Removal::Next() {
  switch (stage) {
    case Stage::kVm:
      stage = Stage::kNic;
      break;
    case Stage::kNic:
      if (++next_nic >= nics.size()) stage = Stage::kDisk;
      break;
    case Stage::kDisk:
      stage = Stage::kBlob;
      break;
    case Stage::kBlob:
    case Stage::kDone:
      stage = Stage::kDone;
      break;
  }
}

Result<void> VmsProvider::AdvanceRemoval(const std::string& pool, Removal& r, Time now) {
  for (int steps = 0; steps < 16 && r.stage != Removal::Stage::kDone; ++steps) {
    if (r.op) {
      TIDEPOOL_ASSIGN_OR_RETURN(bool step_done, FollowRemovalStep(pool, r, now));
      if (!step_done) return {};
      r.Next();
      continue;
    }
    if (r.stage == Removal::Stage::kBlob) {
      // Not ARM: the Blob service, last, once the VM no longer holds the blob's lease.
      TIDEPOOL_RETURN_IF_ERROR(DeleteVhd(pool, r));
      r.Next();
      continue;
    }
    std::optional<ArmDelete> del = DeleteOf(r);
    if (!del) {
      r.Next();  // nothing to delete at this step
      continue;
    }
    TIDEPOOL_ASSIGN_OR_RETURN(bool step_done, SendDelete(pool, r, *del));
    if (!step_done) return {};
    r.Next();
  }
  return {};
}

std::optional<VmsProvider::ArmDelete> VmsProvider::DeleteOf(const Removal& r) const {
  switch (r.stage) {
    case Removal::Stage::kVm:
      if (r.vm.empty()) return std::nullopt;
      return ArmDelete{VmPath(r.vm), settings_.compute_api_version, "VM " + r.vm};
    case Removal::Stage::kNic:
      if (r.next_nic >= r.nics.size()) return std::nullopt;
      return ArmDelete{r.nics[r.next_nic], settings_.network_api_version,
                       "NIC " + ResourceName(r.nics[r.next_nic])};
    case Removal::Stage::kDisk:
      if (r.disk.empty()) return std::nullopt;
      return ArmDelete{r.disk, settings_.compute_api_version, "OS disk " + ResourceName(r.disk)};
    case Removal::Stage::kBlob:
    case Removal::Stage::kDone:
      break;
  }
  return std::nullopt;
}

Result<bool> VmsProvider::SendDelete(const std::string& pool, Removal& r, const ArmDelete& del) {
  TIDEPOOL_ASSIGN_OR_RETURN(ArmResponse sent,
                            arm_->Send("DELETE", del.path, del.api_version, nullptr));
  if (sent.status == 404) {
    spdlog::info("azure-vms: pool {}: {} already gone ({})", pool, del.what, r.why);
    return true;
  }
  if (!sent.ok()) return std::unexpected(sent.AsError().Wrap(fmt::format("pool {}", pool)));
  spdlog::info("azure-vms: pool {}: deleting {} ({})", pool, del.what, r.why);
  if (sent.operation) {
    r.op = std::move(*sent.operation);
    return false;
  }
  return true;
}

Result<bool> VmsProvider::FollowRemovalStep(const std::string& pool, Removal& r, Time now) {
  LroStep step = FollowOperation(*arm_, *r.op, now);
  const std::string what = r.op->what;
  switch (step.kind) {
    case LroStep::Kind::kWaiting:
      return false;
    case LroStep::Kind::kPollFailed:
      return std::unexpected(*step.error);
    case LroStep::Kind::kTimedOut:
      r.op.reset();
      return Fail(Error::Code::kUnavailable,
                  "azure-vms: pool {}: {} did not finish within {}; sent again at the next "
                  "refresh",
                  pool, what, FormatDuration(settings_.operation_timeout));
    case LroStep::Kind::kDone:
      break;
  }
  r.op.reset();
  if (step.result.state != OperationResult::State::kSucceeded) {
    return Fail(Error::Code::kUnavailable,
                "azure-vms: pool {}: {} failed: {}: {}; sent again at the next refresh", pool, what,
                step.result.code, step.result.message);
  }
  return true;
}

Result<void> VmsProvider::DeleteVhd(const std::string& pool, const Removal& r) {
  if (r.vhd_uri.empty()) return {};
  std::string_view uri = WithoutQuery(r.vhd_uri);
  Result<void> ours =
      !Naming(pool).VmIndex(r.vm)
          ? InvalidArgument("VM {} does not have the pool's name pattern k8s-{}-{}-<index>", r.vm,
                            AgentPool(pool), settings_.cluster_id)
          : CheckVhdUri(r.vhd_uri, r.vm, settings_.storage_endpoint_suffix, settings_.arm_endpoint);
  if (!ours) {
    spdlog::warn(
        "azure-vms: pool {}: VM {}'s OS disk is an unmanaged VHD blob that tidepool does not "
        "delete ({}); delete it in its storage account if it is not used",
        pool, r.vm, ours.error().message());
    return {};
  }
  TIDEPOOL_ASSIGN_OR_RETURN(TokenSource * tokens, StorageTokens());
  auto deleted = DeleteBlob(http(), *tokens, *clock_, r.vhd_uri, settings_.request_timeout);
  if (!deleted) {
    return std::unexpected(deleted.error().Wrap(
        fmt::format("pool {}: VM {}'s OS disk (sent again at the next refresh)", pool, r.vm)));
  }
  switch (*deleted) {
    case BlobDelete::kDeleted:
      spdlog::info("azure-vms: pool {}: deleted OS disk blob {} ({})", pool, uri, r.why);
      return {};
    case BlobDelete::kGone:
      spdlog::info("azure-vms: pool {}: OS disk blob {} already gone ({})", pool, uri, r.why);
      return {};
    case BlobDelete::kLeased:
      break;
  }
  return Fail(Error::Code::kConflict,
              "pool {}: OS disk blob {} still has a lease (VM {} is not released "
              "yet); sent again at the next refresh",
              pool, uri, r.vm);
}

void VmsProvider::AdvanceRemovals(const std::string& pool, Time now) {
  auto& removals = work_[pool].removals;
  for (Removal& r : removals) {
    if (auto res = AdvanceRemoval(pool, r, now); !res) {
      spdlog::warn("azure-vms: {}", res.error().message());
    }
  }
  std::erase_if(removals, [](const Removal& r) { return r.stage == Removal::Stage::kDone; });
}

Result<std::string> VmsProvider::NodeVm(const std::string& pool, const model::Node& node) const {
  auto ref = ParseVmResourceId(node.provider_id);
  if (!ref) {
    return InvalidArgument(
        "azure-vms: node {}: providerID \"{}\" does not name a VM (expected azure:///"
        "subscriptions/<s>/resourceGroups/<rg>/providers/Microsoft.Compute/virtualMachines/"
        "<name>)",
        node.name(), node.provider_id);
  }
  if (!EqualsIgnoreCase(ref->resource_group, settings_.resource_group) ||
      !EqualsIgnoreCase(ref->subscription, settings_.subscription_id)) {
    return InvalidArgument(
        "azure-vms: node {} is VM {} of resource group {}, not of pool {}'s resource group {}",
        node.name(), ref->name, ref->resource_group, pool, settings_.resource_group);
  }
  if (Removing(pool, ref->name)) return ref->name;
  bool by_name = Naming(pool).VmIndex(ref->name).has_value();
  auto cached = vm_pool_.find(ToLower(ref->name));
  if (!by_name && (cached == vm_pool_.end() || cached->second != pool)) {
    return InvalidArgument(
        "azure-vms: node {}: VM {} is not of pool {} (expected the name k8s-{}-{}-<index> or the "
        "pool's tags)",
        node.name(), ref->name, pool, AgentPool(pool), settings_.cluster_id);
  }
  return ref->name;
}

Result<void> VmsProvider::DeleteNode(const std::string& pool, const model::Node& node, Time now) {
  TIDEPOOL_RETURN_IF_ERROR(RequirePool(pool));
  TIDEPOOL_ASSIGN_OR_RETURN(std::string vm, NodeVm(pool, node));
  if (Removing(pool, vm)) return {};
  TIDEPOOL_ASSIGN_OR_RETURN(ArmResponse got, arm_->Get(VmPath(vm), settings_.compute_api_version));
  if (got.status == 404) {
    spdlog::info("azure-vms: pool {}: VM {} already gone", pool, vm);
    return {};
  }
  if (!got.ok()) return std::unexpected(got.AsError().Wrap(fmt::format("pool {}", pool)));
  return RemoveVm(pool, got.body, "scale down", now);
}

Result<void> VmsProvider::RemoveVm(const std::string& pool, const json& vm, std::string why,
                                   Time now) {
  VmsPool& work = work_[pool];
  const std::string name = StringField(vm, "name");
  std::erase_if(work.creations, [&](const Creation& c) { return EqualsIgnoreCase(c.vm, name); });
  work.removals.push_back(RemovalOf(vm, std::move(why)));
  auto advanced = AdvanceRemoval(pool, work.removals.back(), now);
  const Removal& r = work.removals.back();
  if (!advanced && r.stage == Removal::Stage::kVm && !r.op) {
    // The VM itself was not deleted: nothing to follow; the caller decides what to do.
    work.removals.pop_back();
    return std::unexpected(advanced.error());
  }
  if (!advanced) spdlog::warn("azure-vms: {}", advanced.error().message());
  if (r.stage == Removal::Stage::kDone) work.removals.pop_back();
  return {};
}

int VmsProvider::CancelUnrequested(const std::string& pool, int delta) {
  VmsPool& work = work_[pool];
  int cancelled = 0;
  std::sort(work.creations.begin(), work.creations.end(),
            [](const Creation& a, const Creation& b) { return a.index > b.index; });
  for (auto it = work.creations.begin(); it != work.creations.end() && cancelled < delta;) {
    if (it->stage != Creation::Stage::kNic) {
      ++it;
      continue;
    }
    Removal r;
    r.why = "cancelled";
    r.stage = Removal::Stage::kNic;
    r.nics = {NicId(it->nic)};
    spdlog::info("azure-vms: pool {}: cancelling VM {} before it was requested", pool, it->vm);
    work.removals.push_back(std::move(r));
    it = work.creations.erase(it);
    ++cancelled;
  }
  return cancelled;
}

Result<void> VmsProvider::Shrink(const model::Pool& p, int delta, Time now) {
  const std::string& pool = p.name;
  TIDEPOOL_ASSIGN_OR_RETURN(std::vector<json> all, ListVms());
  std::vector<PoolVm> vms = VmsOf(pool, all);
  VmsPool& work = work_[pool];
  // Creations whose VM was not asked for yet first.
  int remaining = delta - CancelUnrequested(pool, delta);
  std::vector<const PoolVm*> candidates;
  int alive = 0;
  for (const PoolVm& vm : vms) {
    if (vm.deleting() || Removing(pool, vm.name) || StoppedIn(p, vm)) continue;
    ++alive;
    if (!Joined(vm)) candidates.push_back(&vm);
  }
  auto rank = [](const PoolVm* v) {
    if (v->failed()) return 0;
    if (EqualsIgnoreCase(v->provisioning, "Creating")) return 1;
    return 2;
  };
  std::stable_sort(candidates.begin(), candidates.end(), [&](auto* a, auto* b) {
    if (rank(a) != rank(b)) return rank(a) < rank(b);
    return a->index > b->index;
  });
  for (const PoolVm* c : candidates) {
    if (remaining == 0) break;
    std::erase_if(work.creations,
                  [&](const Creation& x) { return EqualsIgnoreCase(x.vm, c->name); });
    work.removals.push_back(RemovalOf(c->body, "cancelled"));
    if (auto r = AdvanceRemoval(pool, work.removals.back(), now); !r) {
      spdlog::warn("azure-vms: {}", r.error().message());
    }
    --remaining;
  }
  std::erase_if(work.removals, [](const Removal& r) { return r.stage == Removal::Stage::kDone; });
  bool any_joined = alive > static_cast<int>(candidates.size());
  if (remaining > 0 && !any_joined) {
    spdlog::info("azure-vms: pool {}: {} of {} VM(s) to cancel are gone already", pool, remaining,
                 delta);
    return {};
  }
  if (remaining > 0) {
    return Fail(Error::Code::kConflict,
                "azure-vms: pool {}: cancelled {} of {} requested VM(s); the pool's other VMs "
                "have joined the cluster (or finished provisioning) and are removed only "
                "through DeleteNode",
                pool, delta - remaining, delta);
  }
  return {};
}

}  // namespace tidepool::cloud::azure
