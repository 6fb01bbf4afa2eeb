#include "controller/kube_adapters.h"

#include <fmt/format.h>

#include "kube/codec/capacity_buffer.h"
#include "kube/codec/objects.h"
#include "kube/codec/provisioning.h"

namespace tidepool::controller {

InformerClusterReader::InformerClusterReader(kube::ApiClient& client, kube::InformerOptions tune,
                                             ModelUse model)
    : pods_(kube::MakePodInformer(client, tune)),
      nodes_(kube::MakeNodeInformer(client, tune)),
      pdbs_(kube::MakePdbInformer(client, tune)),
      daemon_sets_(kube::MakeDaemonSetInformer(client, tune)),
      provisioning_requests_(kube::MakeProvisioningRequestInformer(client, tune)),
      pod_templates_(kube::MakePodTemplateInformer(client, tune)),
      capacity_buffers_(kube::MakeCapacityBufferInformer(client, tune)),
      deployments_(kube::MakeDeploymentInformer(client, tune)),
      device_classes_(kube::MakeDeviceClassInformer(client, tune)),
      claims_(kube::MakeResourceClaimInformer(client, tune)),
      claim_templates_(kube::MakeResourceClaimTemplateInformer(client, tune)),
      slices_(kube::MakeResourceSliceInformer(client, tune)) {
  if (model != ModelUse::kOff) {
    model_ =
        std::make_unique<ModelFeed>([this](const std::string& key) { return pods_->Get(key); },
                                    [this](const std::string& name) { return nodes_->Get(name); });
    model_->model().SetVerify(model == ModelUse::kVerify);
    pods_->SetMarker([this](const std::string& key) { model_->PodChanged(key); });
    nodes_->SetMarker([this](const std::string& name) { model_->NodeChanged(name); });
  }
  pods_->SetChangeCallback([this](kube::ChangeType type, const std::string& key) {
    if (type == kube::ChangeType::kDeleted) {
      Changed(false);
      return;
    }
    auto pod = pods_->Get(key);
    Changed(pod != nullptr && pod->WaitsForNode() && !pod->SchedulingGated());
  });
  nodes_->SetChangeCallback([this](kube::ChangeType type, const std::string&) {
    Changed(type != kube::ChangeType::kModified);
  });
  pdbs_->SetChangeCallback([this](kube::ChangeType, const std::string&) { Changed(false); });
  daemon_sets_->SetChangeCallback([this](kube::ChangeType, const std::string&) { Changed(false); });
  provisioning_requests_->SetChangeCallback([this](kube::ChangeType type, const std::string&) {
    Changed(type != kube::ChangeType::kDeleted);
  });
  pod_templates_->SetChangeCallback(
      [this](kube::ChangeType, const std::string&) { Changed(false); });
  capacity_buffers_->SetChangeCallback([this](kube::ChangeType type, const std::string&) {
    Changed(type != kube::ChangeType::kDeleted);
  });
  deployments_->SetChangeCallback([this](kube::ChangeType, const std::string&) { Changed(false); });
  // A new slice or a freed claim can make a pending pod fit: worth a pass soon. The next
  // Snapshot copies the DRA objects again.
  auto dra_changed = [this](kube::ChangeType, const std::string&) { Changed(false); };
  device_classes_->SetChangeCallback(dra_changed);
  claims_->SetChangeCallback(dra_changed);
  claim_templates_->SetChangeCallback(dra_changed);
  slices_->SetChangeCallback(dra_changed);
}

InformerClusterReader::~InformerClusterReader() { Stop(); }

void InformerClusterReader::Start() {
  pods_->Start();
  nodes_->Start();
  pdbs_->Start();
  daemon_sets_->Start();
  provisioning_requests_->Start();
  pod_templates_->Start();
  capacity_buffers_->Start();
  deployments_->Start();
  device_classes_->Start();
  claims_->Start();
  claim_templates_->Start();
  slices_->Start();
}

void InformerClusterReader::Stop() {
  pods_->Stop();
  nodes_->Stop();
  pdbs_->Stop();
  daemon_sets_->Stop();
  provisioning_requests_->Stop();
  pod_templates_->Stop();
  capacity_buffers_->Stop();
  deployments_->Stop();
  device_classes_->Stop();
  claims_->Stop();
  claim_templates_->Stop();
  slices_->Stop();
}

bool InformerClusterReader::HasSynced() const {
  return pods_->HasSynced() && nodes_->HasSynced() && pdbs_->HasSynced() &&
         daemon_sets_->HasSynced() && provisioning_requests_->HasSynced() &&
         pod_templates_->HasSynced() && capacity_buffers_->HasSynced() &&
         deployments_->HasSynced() && device_classes_->HasSynced() && claims_->HasSynced() &&
         claim_templates_->HasSynced() && slices_->HasSynced();
}

namespace {

// Adds a counted read's count to `version` and hands over its objects.
template <typename L>
L Take(kube::Counted<L> read, uint64_t& version) {
  version += read.changes;
  return std::move(read.items);
}

}  // namespace

ClusterView InformerClusterReader::Snapshot() const {
  // The version is 1 + the sum of every cache's count of changes, each read with its objects:
  // the counts never go back, so a later view with the same sum has every count, and so every
  // list, the same.
  uint64_t version = 1;
  ClusterView v;
  v.nodes = Take(nodes_->CountedList(), version);
  v.pods = Take(pods_->CountedList(), version);
  v.pdbs = Take(pdbs_->CountedSnapshot(), version);
  v.daemon_sets = Take(daemon_sets_->CountedSnapshot(), version);
  v.provisioning_requests = Take(provisioning_requests_->CountedSnapshot(), version);
  v.pod_templates = Take(pod_templates_->CountedSnapshot(), version);
  v.capacity_buffers = Take(capacity_buffers_->CountedSnapshot(), version);
  // Deployments matter only to a buffer's scalableRef: no copy of every one on every pass. Their
  // changes count either way (a version may move with nothing in the view changed; never the
  // other way round).
  if (!v.capacity_buffers.empty()) {
    v.deployments = Take(deployments_->CountedSnapshot(), version);
  } else {
    version += deployments_->Changes();
  }
  v.dra = Take(DraSnapshot(), version);
  v.version = version;
  return v;
}

kube::Counted<std::shared_ptr<const model::DraObjects>> InformerClusterReader::DraSnapshot() const {
  std::lock_guard lock(dra_mu_);
  uint64_t now = device_classes_->Changes() + claims_->Changes() + claim_templates_->Changes() +
                 slices_->Changes();
  // The copy's counts were read before these: the same sum means the same counts.
  if (now == dra_.changes) return dra_;
  auto dra = std::make_shared<model::DraObjects>();
  uint64_t changes = 0;
  for (const auto& x : Take(device_classes_->CountedSnapshot(), changes))
    dra->device_classes.push_back(*x);
  for (const auto& x : Take(claims_->CountedSnapshot(), changes)) dra->claims.push_back(*x);
  for (const auto& x : Take(claim_templates_->CountedSnapshot(), changes))
    dra->claim_templates.push_back(*x);
  for (const auto& x : Take(slices_->CountedSnapshot(), changes)) dra->slices.push_back(*x);
  dra_.items = dra->empty() ? nullptr : std::move(dra);
  dra_.changes = changes;
  return dra_;
}

sched::ClusterModel* InformerClusterReader::SyncModel(const ClusterView& view) {
  return model_ ? model_->Sync({view.pods, view.nodes}) : nullptr;
}

void InformerClusterReader::SetOnChange(std::function<void(bool)> on_change) {
  std::lock_guard lock(mu_);
  on_change_ = std::move(on_change);
}

void InformerClusterReader::Changed(bool urgent) {
  std::function<void(bool)> f;
  {
    std::lock_guard lock(mu_);
    f = on_change_;
  }
  if (f) f(urgent);
}

uint64_t InformerClusterReader::DecodeErrors() const {
  return pods_->Stats().decode_errors + nodes_->Stats().decode_errors +
         pdbs_->Stats().decode_errors + daemon_sets_->Stats().decode_errors +
         provisioning_requests_->Stats().decode_errors + pod_templates_->Stats().decode_errors +
         capacity_buffers_->Stats().decode_errors + deployments_->Stats().decode_errors +
         device_classes_->Stats().decode_errors + claims_->Stats().decode_errors +
         claim_templates_->Stats().decode_errors + slices_->Stats().decode_errors;
}

ApiClusterWriter::ApiClusterWriter(kube::ApiClient& client, const Clock& clock,
                                   WriterOptions options)
    : client_(client),
      clock_(clock),
      options_(std::move(options)),
      events_(client, clock, {.reporting_instance = options_.reporting_instance}) {}

Result<void> ApiClusterWriter::AddTaint(const std::string& node, const model::Taint& taint) {
  TIDEPOOL_RETURN_IF_ERROR(
      kube::AddTaint(client_, node, taint.key, taint.value, model::TaintEffectName(taint.effect)));
  return {};
}

Result<void> ApiClusterWriter::RemoveTaint(const std::string& node, const std::string& key) {
  auto r = kube::RemoveTaint(client_, node, key);
  if (!r && r.error().code() != Error::Code::kNotFound) return std::unexpected(r.error());
  return {};
}

Result<void> ApiClusterWriter::Evict(const std::string& ns, const std::string& name) {
  return client_.Evict(ns, name);
}

Result<void> ApiClusterWriter::DeleteNode(const std::string& name, const std::string& uid) {
  return kube::DeleteNode(client_, name, uid);
}

Result<void> ApiClusterWriter::RecordEvent(const EventSpec& e) {
  kube::ObjectRef ref{e.object_kind, e.ns, e.name, e.uid};
  if (e.object_kind == "ProvisioningRequest") ref.api_version = "autoscaling.x-k8s.io/v1";
  if (e.object_kind == "CapacityBuffer") ref.api_version = "autoscaling.x-k8s.io/v1beta1";
  // The loop's events about itself (warm scale-ups) go on the status ConfigMap.
  if (e.object_kind == "ConfigMap" && e.name.empty()) {
    ref.namespace_ = options_.status_namespace;
    ref.name = options_.status_configmap;
  }
  return events_.RecordEvent(ref, e.warning ? kube::EventType::kWarning : kube::EventType::kNormal,
                             e.reason, e.message);
}

Result<std::vector<std::string>> ApiClusterWriter::PodsOnNode(const std::string& node) {
  TIDEPOOL_ASSIGN_OR_RETURN(kube::ListPage page,
                            client_.ListAll(kube::CollectionPath("v1", "pods") + "?fieldSelector=" +
                                            net::UrlEncode("spec.nodeName=" + node)));
  std::vector<std::string> out;
  for (const auto& item : page.items) {
    auto pod = kube::codec::DecodePod(item);
    if (!pod) {
      // A pod we cannot read is a pod we cannot vouch for: count it as one that must leave.
      out.push_back(item.value("/metadata/namespace"_json_pointer, std::string()) + "/" +
                    item.value("/metadata/name"_json_pointer, std::string()));
      continue;
    }
    if (pod->IsTerminal() || pod->IsDaemonSetPod() || pod->IsMirrorPod()) continue;
    out.push_back(pod->meta.Key());
  }
  return out;
}

Result<void> ApiClusterWriter::SetProvisioningConditions(
    const std::string& ns, const std::string& name,
    const std::vector<model::Condition>& conditions) {
  std::string path =
      kube::ObjectPath("autoscaling.x-k8s.io/v1", "provisioningrequests", ns, name) + "/status";
  Time now = clock_.Now();
  auto r = kube::UpdateWithRetry(client_, path, [&](nlohmann::json& obj) -> Result<bool> {
    bool changed = false;
    for (const model::Condition& c : conditions)
      changed = kube::codec::ApplyCondition(obj, c, now) || changed;
    return changed;
  });
  if (!r && r.error().code() != Error::Code::kNotFound) {
    return std::unexpected(r.error().Wrap(fmt::format("ProvisioningRequest {}/{}", ns, name)));
  }
  return {};
}

Result<void> ApiClusterWriter::SetCapacityBufferStatus(const std::string& ns,
                                                       const std::string& name,
                                                       const model::BufferStatus& status) {
  std::string path =
      kube::ObjectPath("autoscaling.x-k8s.io/v1beta1", "capacitybuffers", ns, name) + "/status";
  Time now = clock_.Now();
  auto r = kube::UpdateWithRetry(client_, path, [&](nlohmann::json& obj) -> Result<bool> {
    return kube::codec::ApplyBufferStatus(obj, status, now);
  });
  if (!r && r.error().code() != Error::Code::kNotFound) {
    return std::unexpected(r.error().Wrap(fmt::format("CapacityBuffer {}/{}", ns, name)));
  }
  return {};
}

Result<std::optional<std::string>> ApiClusterWriter::ReadWarmState() {
  auto cm = client_.Get(kube::ObjectPath("v1", "configmaps", options_.status_namespace,
                                         options_.warm_state_configmap));
  if (!cm) {
    if (cm.error().code() == Error::Code::kNotFound) return std::optional<std::string>();
    return std::unexpected(cm.error().Wrap(fmt::format(
        "reading ConfigMap {}/{}", options_.status_namespace, options_.warm_state_configmap)));
  }
  auto state = cm->value("/data/state"_json_pointer, std::string());
  if (state.empty()) return std::optional<std::string>();
  return std::optional<std::string>(std::move(state));
}

Result<void> ApiClusterWriter::WriteWarmState(const std::string& text) {
  TIDEPOOL_RETURN_IF_ERROR(kube::ApplyConfigMap(client_, options_.status_namespace,
                                                options_.warm_state_configmap, {{"state", text}}));
  return {};
}

Result<void> ApiClusterWriter::WriteStatus(const std::string& text) {
  TIDEPOOL_RETURN_IF_ERROR(kube::ApplyConfigMap(client_, options_.status_namespace,
                                                options_.status_configmap, {{"status", text}}));
  return {};
}

}  // namespace tidepool::controller
