// What the controller reads the cluster through and writes it with: two small interfaces, so the
// controller runs on the real API server (kube/ adapters) and on recording fakes in unit tests.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actuator/cluster_writer.h"
#include "base/error.h"
#include "base/shared_list.h"
#include "model/capacity_buffer.h"
#include "model/daemonset.h"
#include "model/dra.h"
#include "model/node.h"
#include "model/pdb.h"
#include "model/pod.h"
#include "model/provisioning_request.h"

namespace tidepool::sched {
class ClusterModel;  // sched/cluster_model.h
}  // namespace tidepool::sched

namespace tidepool::controller {

// One consistent read of the cluster. The objects are shared and immutable.
struct ClusterView {
  // In key order (a node's name, a pod's namespace/name); an informer's own list, not a copy.
  SharedList<model::Node> nodes;
  SharedList<model::Pod> pods;
  std::vector<std::shared_ptr<const model::PodDisruptionBudget>> pdbs;
  std::vector<std::shared_ptr<const model::DaemonSet>> daemon_sets;
  std::vector<std::shared_ptr<const model::ProvisioningRequest>> provisioning_requests;
  std::vector<std::shared_ptr<const model::PodTemplate>> pod_templates;
  std::vector<std::shared_ptr<const model::CapacityBuffer>> capacity_buffers;
  // Read for CapacityBuffers' scalableRefs; a reader may leave it empty when there are none.
  std::vector<std::shared_ptr<const model::Deployment>> deployments;
  // Dynamic Resource Allocation objects as one value (a reader may share it between reads while
  // none of them changes); null when the reader has none (docs/dra.md).
  std::shared_ptr<const model::DraObjects> dra;
  // A count of the changes the reader's caches took, read with the objects: two views of one
  // reader with the same nonzero version hold the same objects in every list above (the version
  // may move with nothing changed, never stay with something changed). 0: unknown. The loop
  // skips planning that cannot decide anything new on it (autoscaler::Observation::version).
  uint64_t version = 0;
};

// Whether a reader keeps a cluster model (ClusterReader::SyncModel).
enum class ModelUse {
  kOff,
  kOn,
  // Debugging: every scale-up and scale-down pass on the model also plans on a snapshot built
  // from the view, and the process stops, printing both plans, on any difference
  // (sched::ClusterModel::SetVerify).
  kVerify,
};

// Contract: Snapshot() is cheap enough to call on every pass (the caches' own lists of nodes and
// pods, taken in O(1); a copy of pointers for the rest) and thread-safe; HasSynced() turns true
// once every cache has listed. The change callback may be called from any thread, often; it must
// only wake the controller.
class ClusterReader {
 public:
  virtual ~ClusterReader() = default;
  virtual bool HasSynced() const = 0;
  virtual ClusterView Snapshot() const = 0;
  // `urgent` is true for a change that may need a scale-up now (a pod without a node appeared or
  // changed, a node appeared or went away).
  virtual void SetOnChange(std::function<void(bool urgent)> on_change) = 0;
  // The reader's long-lived model of the nodes and the pods bound to them (docs/architecture.md,
  // "The cluster model"), brought up to date to `view`, this pass's Snapshot(): it then holds the
  // view's nodes and pods exactly. Null when the reader keeps none or cannot vouch for it now
  // (the passes then build their own snapshot). Call it on the pass thread; the pointer is valid
  // until the next call.
  virtual sched::ClusterModel* SyncModel(const ClusterView& view) {
    (void)view;
    return nullptr;
  }
};

using actuator::EventSpec;

// The actuator's writes (actuator/cluster_writer.h) plus what the controller keeps in the API
// server: the readable status and what the loop learned for warm capacity.
class ClusterWriter : public actuator::ClusterWriter {
 public:
  // The readable status (the tidepool-status ConfigMap).
  virtual Result<void> WriteStatus(const std::string& text) = 0;
  // What the decision loop learned for warm capacity (Autoscaler::ExportWarmState), kept in the
  // tidepool-warm-state ConfigMap across restarts. Read: nullopt when there is none yet.
  virtual Result<std::optional<std::string>> ReadWarmState() = 0;
  virtual Result<void> WriteWarmState(const std::string& text) = 0;
};

}  // namespace tidepool::controller
