#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "cloud/azure/lro.h"
#include "cloud/azure/url.h"
#include "cloud/azure/vms_provider.h"
#include "cloud/json_fields.h"

// VmsProvider, scale up: the model new VMs are made from, then NIC and VM PUTs followed to the
// end (vms_provider.h has the contract).

namespace tidepool::cloud::azure {
namespace {

using nlohmann::json;

// The whole file named by config key `key`.
Result<std::string> ReadConfigFile(const std::string& path, const std::string& key) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return InvalidArgument("{}: cannot read \"{}\": {}", key, path, std::strerror(errno));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

Result<void> VmsProvider::Grow(const model::Pool& p, int delta, Time now) {
  const std::string& pool = p.name;
  TIDEPOOL_ASSIGN_OR_RETURN(std::vector<json> all, ListVms());
  std::vector<PoolVm> vms = VmsOf(pool, all);
  int current = 0;  // running and requested VMs: what max bounds
  std::set<std::string> listed;
  for (const PoolVm& vm : vms) {
    listed.insert(ToLower(vm.name));
    if (!vm.failed() && !vm.deleting() && !Removing(pool, vm.name) && !StoppedIn(p, vm)) {
      ++current;
    }
  }
  for (const Creation& c : work_[pool].creations) {
    if (!listed.contains(ToLower(c.vm))) ++current;
  }
  TIDEPOOL_RETURN_IF_ERROR(WithinMax(p, current, delta));
  int create = delta;
  if (p.scale_down.Deallocates()) {
    TIDEPOOL_ASSIGN_OR_RETURN(int started, StartStopped(p, vms, delta, now));
    create -= started;
  }
  if (create == 0) return {};
  auto model = BuildModel(p, vms);
  if (!model) return std::unexpected(model.error().Wrap(fmt::format("azure-vms: pool {}", pool)));
  std::set<int> used = UsedIndexes(pool, vms);
  for (int i = 0; i < create; ++i) {
    int index = LowestFreeIndex(used);
    used.insert(index);
    TIDEPOOL_RETURN_IF_ERROR(CreateOne(p, index, *model, now));
  }
  return {};
}

Result<NewVmBodies> VmsProvider::BuildModel(const model::Pool& pool,
                                            const std::vector<PoolVm>& vms) {
  const PoolVm* source = nullptr;
  for (const PoolVm& vm : vms) {
    if (!EqualsIgnoreCase(vm.provisioning, "Succeeded") || Removing(pool.name, vm.name)) continue;
    if (source == nullptr || vm.index > source->index) source = &vm;
  }
  if (source != nullptr) return ModelFromClone(pool, *source);
  return ModelFromConfig(
      pool, PoolTags(json::object(), pool.name, AgentPool(pool.name), settings_.cluster_id));
}

Result<NewVmBodies> VmsProvider::ModelFromClone(const model::Pool& pool, const PoolVm& source) {
  const VmModel* model = nullptr;
  if (auto it = settings_.vm_models.find(pool.name); it != settings_.vm_models.end()) {
    model = &it->second;
  }
  const std::string key = "provider.models." + pool.name;
  // The listing has no userData; a GET with $expand=userData does.
  TIDEPOOL_ASSIGN_OR_RETURN(
      ArmResponse got,
      arm_->Get(VmPath(source.name), settings_.compute_api_version, "$expand=userData"));
  if (!got.ok()) return std::unexpected(got.AsError().Wrap("reading the VM to copy"));
  const json& vm = got.body;
  const json tags =
      PoolTags(ObjectField(vm, "tags"), pool.name, AgentPool(pool.name), settings_.cluster_id);
  const std::string nic_id = PrimaryNicId(vm);
  if (nic_id.empty()) {
    return InvalidArgument("azure-vms: pool {}: VM {} has no network interface to copy", pool.name,
                           source.name);
  }
  TIDEPOOL_ASSIGN_OR_RETURN(ArmResponse nic, arm_->Get(nic_id, settings_.network_api_version));
  if (!nic.ok()) return std::unexpected(nic.AsError().Wrap("reading the NIC to copy"));
  NewVmBodies out = BodiesFromClone(vm, nic.body, tags, model);
  json& props = out.vm["properties"];
  // ARM never returns a VM's customData, so a copy cannot carry the bootstrap that joins the VM
  // to the cluster unless the config gives it (or the VM uses userData, which is copied).
  if (model != nullptr && !model->custom_data_file.empty()) {
    TIDEPOOL_ASSIGN_OR_RETURN(std::string data,
                              ReadConfigFile(model->custom_data_file, key + ".customDataFile"));
    props["osProfile"]["customData"] = EncodeBase64(data);
  } else if (!props.contains("userData")) {
    return InvalidArgument(
        "{}.customDataFile: required for pool {} (ARM does not return VM {}'s customData, and "
        "it has no userData to copy: give the bootstrap that joins a new VM to the cluster)",
        key, pool.name, source.name);
  }
  return out;
}

Result<NewVmBodies> VmsProvider::ModelFromConfig(const model::Pool& pool, const json& tags) {
  auto it = settings_.vm_models.find(pool.name);
  const std::string key = "provider.models." + pool.name;
  if (it == settings_.vm_models.end()) {
    return InvalidArgument(
        "azure-vms: pool {}: no VM of the pool to copy and no {} in the config (expected "
        "vmSize, imageReference, subnetId, adminUsername, sshPublicKeyFile, customDataFile and "
        "location or availabilitySetId, to create the first VM)",
        pool.name, key);
  }
  const VmModel& m = it->second;
  ConfigModelInputs in{.vm_size = m.vm_size.empty() ? pool.instance_type : m.vm_size, .tags = tags};
  TIDEPOOL_RETURN_IF_ERROR(CheckConfigModel(m, in.vm_size, key, pool.name));
  TIDEPOOL_ASSIGN_OR_RETURN(in.location, ModelLocation(m, key));
  if (in.location.empty()) {
    return MissingModelField(key, "location", pool.name, "or an availabilitySetId to take it from");
  }
  TIDEPOOL_ASSIGN_OR_RETURN(in.ssh_key,
                            ReadConfigFile(m.ssh_public_key_file, key + ".sshPublicKeyFile"));
  TIDEPOOL_ASSIGN_OR_RETURN(in.custom_data,
                            ReadConfigFile(m.custom_data_file, key + ".customDataFile"));
  return BodiesFromConfig(m, in);
}

Result<std::string> VmsProvider::ModelLocation(const VmModel& m, const std::string& key) {
  if (!m.location.empty() || m.availability_set_id.empty()) return m.location;
  TIDEPOOL_ASSIGN_OR_RETURN(ArmResponse as,
                            arm_->Get(m.availability_set_id, settings_.compute_api_version));
  if (!as.ok()) {
    return std::unexpected(as.AsError().Wrap(fmt::format("{}.availabilitySetId", key)));
  }
  return StringField(as.body, "location");
}

Result<bool> VmsProvider::PutVm(const std::string& pool, Creation& c, Time now) {
  c.stage = Creation::Stage::kVm;
  c.op.reset();
  auto sent = arm_->Send("PUT", VmPath(c.vm), settings_.compute_api_version, &c.vm_body);
  if (!sent || !sent->ok()) {
    Error e = sent ? sent->AsError() : sent.error();
    std::string code = sent ? sent->error_code : "";
    std::string message = sent ? sent->error_message : e.message();
    CreationFailed(pool, c, code, message, now);
    if (sent) return std::unexpected(WriteFailed(pool, *sent, now));
    return std::unexpected(e.Wrap(fmt::format("azure-vms: pool {}: creating VM {}", pool, c.vm)));
  }
  spdlog::info("azure-vms: pool {}: creating VM {}", pool, c.vm);
  if (sent->operation) {
    c.op = std::move(*sent->operation);
    return true;
  }
  return false;
}

Result<void> VmsProvider::CreateOne(const model::Pool& pool, int index, NewVmBodies bodies,
                                    Time now) {
  const VmsNaming naming = Naming(pool.name);
  Creation c;
  c.index = index;
  c.vm = naming.Vm(index);
  c.nic = naming.Nic(index);
  NameNewVm(bodies.vm, c.vm, naming.OsDisk(index), NicId(c.nic));
  c.vm_body = std::move(bodies.vm);
  TIDEPOOL_ASSIGN_OR_RETURN(
      ArmResponse r, arm_->Send("PUT", NicId(c.nic), settings_.network_api_version, &bodies.nic));
  if (!r.ok()) return std::unexpected(WriteFailed(pool.name, r, now));
  spdlog::info("azure-vms: pool {}: creating NIC {} for VM {}", pool.name, c.nic, c.vm);
  const bool ready =
      EqualsIgnoreCase(StringField(ObjectField(r.body, "properties"), "provisioningState"),
                       "Succeeded") ||
      !r.operation;
  if (!ready) {
    c.op = std::move(*r.operation);
    work_[pool.name].creations.push_back(std::move(c));
    return {};
  }
  TIDEPOOL_ASSIGN_OR_RETURN(bool pending, PutVm(pool.name, c, now));
  if (pending) work_[pool.name].creations.push_back(std::move(c));
  return {};
}

void VmsProvider::CreationFailed(const std::string& pool, const Creation& c,
                                 const std::string& code, const std::string& message, Time now) {
  NoteStockout(
      pool,
      fmt::format("{}: {} (VM {})", code.empty() ? "ProvisioningFailed" : code, message, c.vm),
      now);
  Removal r;
  r.why = "failed creation";
  if (c.stage == Creation::Stage::kVm) {
    r.vm = c.vm;
    r.disk = DiskId(Naming(pool).OsDisk(c.index));
    r.stage = Removal::Stage::kVm;
  } else {
    r.stage = Removal::Stage::kNic;
  }
  r.nics = {NicId(c.nic)};
  work_[pool].removals.push_back(std::move(r));
}

void VmsProvider::AdvanceCreations(const std::string& pool, Time now) {
  std::vector<Creation> keep;
  for (Creation& c : work_[pool].creations) {
    if (!c.op) {
      if (c.stage == Creation::Stage::kNic) {
        auto pending = PutVm(pool, c, now);
        if (pending && *pending) keep.push_back(std::move(c));
      }
      continue;
    }
    LroStep step = FollowOperation(*arm_, *c.op, now);
    switch (step.kind) {
      case LroStep::Kind::kTimedOut:
        spdlog::warn("azure-vms: pool {}: {} did not finish within {}; no longer followed", pool,
                     c.op->what, FormatDuration(settings_.operation_timeout));
        if (c.stage == Creation::Stage::kNic) {
          CreationFailed(pool, c, "OperationTimedOut", c.op->what, now);
        }
        break;
      case LroStep::Kind::kPollFailed:
        spdlog::warn("azure-vms: pool {}: {}", pool, step.error->message());
        keep.push_back(std::move(c));
        break;
      case LroStep::Kind::kWaiting:
        keep.push_back(std::move(c));
        break;
      case LroStep::Kind::kDone:
        if (CreationStepDone(pool, c, step.result, now)) keep.push_back(std::move(c));
        break;
    }
  }
  work_[pool].creations = std::move(keep);
}

bool VmsProvider::CreationStepDone(const std::string& pool, Creation& c, const OperationResult& r,
                                   Time now) {
  if (r.state != OperationResult::State::kSucceeded) {
    spdlog::warn("azure-vms: pool {}: creating {} failed: {}: {}", pool,
                 c.stage == Creation::Stage::kNic ? c.nic : c.vm, r.code, r.message);
    CreationFailed(pool, c, r.code, r.message, now);
    return false;
  }
  if (c.stage == Creation::Stage::kVm) {
    spdlog::info("azure-vms: pool {}: VM {} created", pool, c.vm);
    return false;
  }
  auto pending = PutVm(pool, c, now);
  return pending && *pending;
}

}  // namespace tidepool::cloud::azure
