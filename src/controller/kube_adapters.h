// The controller's ports over the real API server: a ClusterReader backed by informers and a
// ClusterWriter backed by kube/client writes, Events and the status ConfigMap.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "controller/model_feed.h"
#include "controller/ports.h"
#include "kube/client/api_client.h"
#include "kube/client/informer.h"
#include "kube/client/writes.h"

namespace tidepool::controller {

// Pods, Nodes, PodDisruptionBudgets, DaemonSets, ProvisioningRequests and CapacityBuffers
// (optional: absent without their CRDs), PodTemplates, Deployments and the DRA objects (optional:
// absent without resource.k8s.io/v1). A change is urgent when a pod without a node (not finished)
// appears or changes, a node is added or deleted, or a ProvisioningRequest or CapacityBuffer is
// added or changed; node status updates (heartbeats) and pod deletions are not. Thread-safe.
class InformerClusterReader final : public ClusterReader {
 public:
  InformerClusterReader(kube::ApiClient& client, kube::InformerOptions tune = {},
                        ModelUse model = ModelUse::kOn);
  ~InformerClusterReader() override;

  void Start();
  void Stop();

  bool HasSynced() const override;
  ClusterView Snapshot() const override;
  void SetOnChange(std::function<void(bool urgent)> on_change) override;
  sched::ClusterModel* SyncModel(const ClusterView& view) override;

  // Objects skipped because they did not decode, over all informers (for metrics).
  uint64_t DecodeErrors() const;
  const kube::PodInformer& pods() const { return *pods_; }
  const kube::NodeInformer& nodes() const { return *nodes_; }
  kube::PodInformer& pods() { return *pods_; }  // for tests: cutting watches
  kube::NodeInformer& nodes() { return *nodes_; }

 private:
  void Changed(bool urgent);
  // The DRA objects with the sum of their informers' counts of changes they reflect.
  kube::Counted<std::shared_ptr<const model::DraObjects>> DraSnapshot() const;

  std::unique_ptr<kube::PodInformer> pods_;
  std::unique_ptr<kube::NodeInformer> nodes_;
  std::unique_ptr<kube::PdbInformer> pdbs_;
  std::unique_ptr<kube::DaemonSetInformer> daemon_sets_;
  std::unique_ptr<kube::ProvisioningRequestInformer> provisioning_requests_;
  std::unique_ptr<kube::PodTemplateInformer> pod_templates_;
  std::unique_ptr<kube::CapacityBufferInformer> capacity_buffers_;
  std::unique_ptr<kube::DeploymentInformer> deployments_;
  std::unique_ptr<kube::DeviceClassInformer> device_classes_;
  std::unique_ptr<kube::ResourceClaimInformer> claims_;
  std::unique_ptr<kube::ResourceClaimTemplateInformer> claim_templates_;
  std::unique_ptr<kube::ResourceSliceInformer> slices_;
  std::unique_ptr<ModelFeed> model_;  // null with ModelUse::kOff
  // The DRA objects as one value, copied from their informers only after one of them changed
  // (their counts of changes moved); passes in between share the copy. Guarded by dra_mu_.
  mutable std::mutex dra_mu_;
  mutable kube::Counted<std::shared_ptr<const model::DraObjects>> dra_{nullptr, UINT64_MAX};
  std::mutex mu_;
  std::function<void(bool)> on_change_;
};

struct WriterOptions {
  std::string status_namespace = "kube-system";
  std::string status_configmap = "tidepool-status";
  std::string warm_state_configmap = "tidepool-warm-state";  // in status_namespace
  std::string reporting_instance;  // Events' reportingInstance, e.g. the pod name
};

class ApiClusterWriter final : public ClusterWriter {
 public:
  ApiClusterWriter(kube::ApiClient& client, const Clock& clock, WriterOptions options);

  Result<void> AddTaint(const std::string& node, const model::Taint& taint) override;
  Result<void> RemoveTaint(const std::string& node, const std::string& key) override;
  Result<void> Evict(const std::string& ns, const std::string& name) override;
  Result<void> DeleteNode(const std::string& name, const std::string& uid) override;
  Result<void> RecordEvent(const EventSpec& event) override;
  Result<std::vector<std::string>> PodsOnNode(const std::string& node) override;
  Result<void> SetProvisioningConditions(const std::string& ns, const std::string& name,
                                         const std::vector<model::Condition>& conditions) override;
  Result<void> SetCapacityBufferStatus(const std::string& ns, const std::string& name,
                                       const model::BufferStatus& status) override;
  Result<void> WriteStatus(const std::string& text) override;
  Result<std::optional<std::string>> ReadWarmState() override;
  Result<void> WriteWarmState(const std::string& text) override;

 private:
  kube::ApiClient& client_;
  const Clock& clock_;
  WriterOptions options_;
  kube::EventRecorder events_;
};

}  // namespace tidepool::controller
