// VmsProvider ("azure-vms"): pools are the standalone VMs of acs-engine / aks-engine agent pools
// in availability sets; a VM is added as NIC + VM and removed as VM, NIC, OS disk.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cloud/azure/azure_provider.h"
#include "cloud/azure/vms_model.h"
#include "cloud/azure/vms_naming.h"

namespace tidepool::cloud::azure {

// One VM of a pool as the provider sees it in a listing.
struct PoolVm {
  std::string name;          // k8s-agentpool1-12345678-3
  int index = -1;            // 3; -1 when the name has no index (a VM found by its tags)
  std::string provider_id;   // the kubelet's providerID for it
  std::string provisioning;  // properties.provisioningState: Creating, Succeeded, Failed, Deleting
  std::string error_code;    // from a ProvisioningState/failed/<code> instance view status
  std::string error_message;
  std::string power;  // from the PowerState/<power> status: running, deallocated, ... ("" unknown)
  nlohmann::json body;  // the VM as listed
  bool failed() const;
  bool deleting() const;
  bool stopped() const;  // deallocated or deallocating (and neither failed nor deleting)
};

// Per pool (CloudProvider and AzureProvider contracts, plus):
//  - Membership: a VM of the resource group belongs to pool P (agent pool name A =
//    provider.vmPools.P, default P; cluster id C = provider.clusterId) when its name is
//    k8s-A-C-<index>, or its tag tidepool.dev/pool is P, or its tags say poolName=A and
//    resourceNameSuffix=C. Its NIC is k8s-A-C-nic-<index>, its OS disk k8s-A-C-<index>-osdisk
//    (tidepool's) or k8s-A-C-<index>_OsDisk_... (Azure's default name).
//  - Refresh: one LIST of the resource group's VMs (with the instance view) per pass, shared by
//    the pools. instances = the pool's VMs neither Failed nor Deleting nor being removed;
//    target = instances + creations whose VM is not listed yet. Pending creations and removals
//    move on one step when their operation is done (see below). A Failed VM that is not a
//    pending creation marks a stockout when its code is a capacity or OSProvisioningTimedOut
//    failure, and is removed when its node has not joined (NodeJoined; without it, when the
//    failure is such a provisioning failure). Every `sweepInterval` (and at the first Refresh)
//    the sweep runs (below).
//  - IncreaseSize: LIST the VMs; refuse past max counting pending creations. The model is the
//    newest Succeeded VM of the pool (GET with userData, and GET its primary NIC), with the
//    config's model overriding vmSize and customData; without a VM, the config's model
//    (provider.models.P.*, required then). Each new VM takes the lowest index not used by a VM,
//    a pending creation or removal, or a NIC/disk seen by the last sweep: PUT the NIC, then
//    (at once when ARM says the NIC Succeeded, else when its operation is done) PUT the VM.
//    Neither waits for the VM. A creation whose VM PUT or operation fails is removed (VM, NIC,
//    disk) and marks the pool stocked out with ARM's code and message; a synchronous failure is
//    also the call's error.
//  - DeleteNode: the providerID must name a VM of this pool. GET it (404: done), then DELETE
//    the VM; when that is done, DELETE each NIC; then DELETE the managed OS disk. 404 at any
//    step is done; a failed step is sent again at the next Refresh. An unmanaged OS disk (a VHD
//    blob, storageProfile.osDisk.vhd.uri) is deleted last, with the Blob service's DELETE
//    (snapshots included) and a token for the storage audience (https://storage.azure.com/),
//    only when its URI is https://<account>.<storageEndpointSuffix>/<container>/<blob> and the
//    blob's name is the removed VM's name (of the pool's k8s-A-C-<index> pattern) followed by
//    '-', '_' or '.' and ending in .vhd (blob.h, CheckVhdUri); any other URI is logged and left.
//    404 is done; 409 (a lease: the VM still holds it) and other failures are sent again at the
//    next Refresh.
//  - DecreaseTargetSize: cancels up to `delta` creations that have not joined: pending
//    creations whose VM PUT was not sent yet (their NIC is removed), then VMs not joined,
//    Failed first, then Creating, then the highest index. "Joined" is NodeJoined, without it
//    "provisioningState Succeeded". Fewer than `delta` is kConflict, as for azure-vmss.
//  - Sweep: LIST the NICs and managed disks of the resource group; delete those that carry a
//    pool's name pattern AND are the pool's by tag (tidepool.dev/pool=P, or poolName=A with
//    resourceNameSuffix=C; a disk, which Azure creates untagged with the VM, by the name
//    pattern alone), AND are not attached (a NIC without properties.virtualMachine, a disk with
//    diskState Unattached and no managedBy), AND whose index no VM, pending creation or removal
//    uses. Nothing else is ever deleted. This finishes removals a restart interrupted, except
//    for VHD blobs: storage accounts are not listed, so the blob of a removal interrupted after
//    its VM was deleted stays in its storage account.
//  - PoolOf: the pool of the VM named in the providerID (same subscription and resource group),
//    by name, else by the tags seen in the last listing.
// Pools with scaleDown.mode deallocate (MachineStopper; vms_stopped.cc). A deallocated VM keeps
// its NIC and OS disk (attached; the disk Reserved) and its index, so for these pools:
//  - Refresh: VMs whose power state is deallocated or deallocating are `stopped`, in neither
//    instances nor target.
//  - IncreaseSize: checks running + requested + delta against the pool's max, POSTs
//    .../virtualMachines/<vm>/start for up to `delta` stopped VMs (highest index first), and
//    creates only the rest. A start ARM refuses at once (404 included) is logged and becomes a
//    create; a throttled one is the call's error (VMs started before it stay started). A start
//    whose operation fails leaves the VM Failed, which Refresh removes like any failed VM whose
//    node has not joined (the target drops, the pods are planned again, the next increase
//    creates).
//  - StopNode: the providerID is checked as for DeleteNode, then POST .../deallocate; 404 is
//    success, and so is a VM already being removed.
//  - DeleteStopped: removes (VM, NICs, disk, as DeleteNode) the `count` stopped VMs with the
//    lowest indexes.
//  - DecreaseTargetSize never cancels a stopped VM (it has no Node, but is not upcoming).
// Pending creations and removals live in memory; after a restart, the cloud holds what is left
// (VMs in Creating/Deleting state, unattached NICs and disks) and Refresh picks it up.
// Where it lives: vms_provider.cc (names, listing, Refresh), vms_create.cc (scale up),
// vms_removal.cc (DeleteNode, DecreaseTargetSize, the removal steps), vms_sweep.cc,
// vms_discovery.cc (PoolOf, DiscoverPools), vms_stopped.cc (MachineStopper); names and bodies
// are pure (vms_naming.h, vms_model.h).
class VmsProvider final : public AzureProvider, public MachineStopper {
 public:
  VmsProvider(AzureSettings settings, std::vector<model::Pool> pools, Deps deps);

  std::string_view Name() const override { return "azure-vms"; }
  Result<void> DeleteNode(const std::string& pool, const model::Node& node, Time now) override;
  std::string PoolOf(const model::Node& node) const override;
  // Agent pools of this cluster (by VM name or tags) that no configured pool names, whose VMs
  // carry a `max` tag; templates from the VM size table and the node-template tags.
  Result<std::vector<model::Pool>> DiscoverPools(Time now) override;
  // MachineStopper.
  Result<void> StopNode(const std::string& pool, const model::Node& node, Time now) override;
  Result<void> DeleteStopped(const std::string& pool, int count, Time now) override;

  // Pending work of a pool (tests, status).
  size_t pending_creations(const std::string& pool) const;
  size_t pending_removals(const std::string& pool) const;

 private:
  // A VM being added: NIC first, then the VM.
  struct Creation {
    int index = -1;
    std::string vm;
    std::string nic;
    enum class Stage { kNic, kVm } stage = Stage::kNic;
    std::optional<Operation> op;  // the PUT being followed
    nlohmann::json vm_body;       // sent once the NIC exists
  };
  // A VM being removed: VM, then its NICs, then its OS disk (managed disk or VHD blob).
  struct Removal {
    std::string vm;                 // "" when only NICs are left (a creation cancelled early)
    std::vector<std::string> nics;  // resource ids
    std::string disk;               // managed disk resource id ("" none)
    std::string vhd_uri;            // unmanaged OS disk: its VHD blob ("" none)
    enum class Stage { kVm, kNic, kDisk, kBlob, kDone } stage = Stage::kVm;
    size_t next_nic = 0;
    std::optional<Operation> op;
    std::string why;  // "scale down", "failed creation", ... for logs
    void Next();      // the step at `stage` is done: on to the next NIC or stage
  };
  // The ARM DELETE of a removal's current step.
  struct ArmDelete {
    std::string path;
    std::string api_version;
    std::string what;  // "VM x", "NIC y", "OS disk z", for logs
  };
  struct VmsPool {
    std::vector<Creation> creations;
    std::vector<Removal> removals;
  };

  Result<std::optional<PoolSize>> RefreshPool(const model::Pool& pool, Time now) override;
  Result<void> BeforeRefresh(Time now) override;
  Result<void> Grow(const model::Pool& pool, int delta, Time now) override;
  Result<void> Shrink(const model::Pool& pool, int delta, Time now) override;

  std::string ResourceGroupPath() const;
  std::string VmPath(const std::string& name) const;
  std::string NicId(const std::string& name) const;
  std::string DiskId(const std::string& name) const;
  const std::string& AgentPool(const std::string& pool) const;
  // The names of the pool's resources (k8s-A-C-<index>, ...).
  VmsNaming Naming(const std::string& pool) const;
  // The pool a listed VM belongs to ("" none).
  std::string PoolOfVm(const nlohmann::json& vm) const;
  bool OwnedByTags(const std::string& pool, const nlohmann::json& resource) const;

  Result<std::vector<nlohmann::json>> ListVms();
  std::vector<PoolVm> VmsOf(const std::string& pool, const std::vector<nlohmann::json>& vms) const;
  bool Joined(const PoolVm& vm) const;
  bool Removing(const std::string& pool, const std::string& vm) const;
  // A stopped VM of a deallocate pool: kept out of instances, target and cancelling.
  bool StoppedIn(const model::Pool& pool, const PoolVm& vm) const;
  // The name of the node's VM, after checking that its providerID names a VM of this resource
  // group that is the pool's (by name, or by the tags of the last listing) or being removed.
  Result<std::string> NodeVm(const std::string& pool, const model::Node& node) const;
  // Indexes of the pool's listed VMs, pending creations and removals.
  std::set<int> IndexesInUse(const std::string& pool, const std::vector<PoolVm>& vms) const;
  // The same plus the NIC and disk indexes the last sweep saw: not to be given to a new VM.
  std::set<int> UsedIndexes(const std::string& pool, const std::vector<PoolVm>& vms) const;

  // Scale up.
  Result<void> CreateOne(const model::Pool& pool, int index, NewVmBodies bodies, Time now);
  // PUT the creation's VM. true: still pending (follow c.op); false: done. An error means the
  // creation failed and was handed to CreationFailed.
  Result<bool> PutVm(const std::string& pool, Creation& c, Time now);
  // The NIC and VM bodies new VMs of the pool are made from: a copy of its newest Succeeded VM,
  // else the config's model (names, NIC id and disk name are filled in per VM by CreateOne).
  Result<NewVmBodies> BuildModel(const model::Pool& pool, const std::vector<PoolVm>& vms);
  Result<NewVmBodies> ModelFromClone(const model::Pool& pool, const PoolVm& source);
  Result<NewVmBodies> ModelFromConfig(const model::Pool& pool, const nlohmann::json& tags);
  // The model's location, else its availability set's ("" when neither says).
  Result<std::string> ModelLocation(const VmModel& m, const std::string& key);
  void CreationFailed(const std::string& pool, const Creation& c, const std::string& code,
                      const std::string& message, Time now);
  void AdvanceCreations(const std::string& pool, Time now);
  // The creation's NIC or VM operation ended with `r`: on to the VM PUT, done, or failed.
  // true: the creation is still pending.
  bool CreationStepDone(const std::string& pool, Creation& c, const OperationResult& r, Time now);

  // Deallocate pools (vms_stopped.cc).
  // Starts up to `delta` of the pool's stopped VMs (highest index first); returns how many ARM
  // accepted. Only a throttled start is an error.
  Result<int> StartStopped(const model::Pool& pool, const std::vector<PoolVm>& vms, int delta,
                           Time now);
  // POST .../virtualMachines/<vm>/<action> ("start", "deallocate"); tracks the operation. 404
  // is a kNotFound error.
  Result<void> PostVm(const std::string& pool, const std::string& vm, std::string_view action,
                      Time now);

  // Scale down.
  static Removal RemovalOf(const nlohmann::json& vm, std::string why);
  // Removes the listed VM `vm` (VM, NICs, OS disk), as far as it goes without waiting. An error
  // only when the VM's own DELETE failed (nothing is left to follow then).
  Result<void> RemoveVm(const std::string& pool, const nlohmann::json& vm, std::string why,
                        Time now);
  // Moves a removal on as far as it goes without waiting; the error of a step that failed (the
  // step is sent again at the next call).
  Result<void> AdvanceRemoval(const std::string& pool, Removal& r, Time now);
  // The DELETE of r's current ARM step; nullopt when the step has nothing to delete.
  std::optional<ArmDelete> DeleteOf(const Removal& r) const;
  // Sends `del` for r. true: the step is done (deleted or gone); false: its operation is followed.
  Result<bool> SendDelete(const std::string& pool, Removal& r, const ArmDelete& del);
  // Removes up to `delta` creations whose VM PUT was not sent yet (their NIC is removed);
  // returns how many.
  int CancelUnrequested(const std::string& pool, int delta);
  void AdvanceRemovals(const std::string& pool, Time now);
  // Follows the removal's pending DELETE one step. true: it succeeded (r.op is cleared); false:
  // not finished yet. A failed or timed-out DELETE is an error (r.op is cleared, so the step is
  // sent again); a failed poll is an error that keeps r.op.
  Result<bool> FollowRemovalStep(const std::string& pool, Removal& r, Time now);
  // The kBlob step: deletes r.vhd_uri when it passes CheckVhdUri (else logs it and gives up).
  // ok: done (deleted, gone, or not ours to delete); an error: sent again at the next Refresh.
  Result<void> DeleteVhd(const std::string& pool, const Removal& r);

  void Sweep(Time now);
  void SweepNics(const std::string& pool, const std::vector<nlohmann::json>& nics,
                 const std::set<int>& used);
  void SweepDisks(const std::string& pool, const std::vector<nlohmann::json>& disks,
                  const std::set<int>& used);
  // DELETE a leftover NIC or disk, logging the outcome.
  void SweepDelete(const std::string& pool, const std::string& id, std::string_view api,
                   std::string_view what);

  std::map<std::string, VmsPool> work_;  // by pool
  Result<std::vector<nlohmann::json>> listed_ = std::vector<nlohmann::json>{};
  std::map<std::string, std::string> vm_pool_;  // lower-case VM name -> pool, from the last list
  std::optional<Time> swept_at_;
  std::map<std::string, std::set<int>> leftover_indexes_;  // pool -> NIC/disk indexes last seen
};

}  // namespace tidepool::cloud::azure
