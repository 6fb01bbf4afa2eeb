// What the controller reads the cluster through and writes it with: two small interfaces, so the
// controller runs on the real API server (kube/ adapters) and on recording fakes in unit tests.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "model/daemonset.h"
#include "model/node.h"
#include "model/pdb.h"
#include "model/pod.h"

namespace tidepool::controller {

// One consistent read of the cluster. The objects are shared and immutable.
struct ClusterView {
  std::vector<std::shared_ptr<const model::Node>> nodes;
  std::vector<std::shared_ptr<const model::Pod>> pods;
  std::vector<std::shared_ptr<const model::PodDisruptionBudget>> pdbs;
  std::vector<std::shared_ptr<const model::DaemonSet>> daemon_sets;
};

// Contract: Snapshot() is cheap enough to call on every pass (a copy of pointers) and
// thread-safe; HasSynced() turns true once every cache has listed. The change callback may be
// called from any thread, often; it must only wake the controller.
class ClusterReader {
 public:
  virtual ~ClusterReader() = default;
  virtual bool HasSynced() const = 0;
  virtual ClusterView Snapshot() const = 0;
  // `urgent` is true for a change that may need a scale-up now (a pod without a node appeared or
  // changed, a node appeared or went away).
  virtual void SetOnChange(std::function<void(bool urgent)> on_change) = 0;
};

struct EventSpec {
  std::string object_kind;  // "Pod" or "Node"
  std::string ns;           // "" for nodes
  std::string name;
  std::string uid;          // "" when unknown
  std::string reason;
  std::string message;
  bool warning = false;
};

// Contract: each write reads the object fresh and writes it with a resourceVersion
// precondition (retrying conflicts on fresh data), so no write is made from a stale cache; each
// is idempotent (adding a taint that is there, deleting what is gone: success). Errors carry
// the API server's words. Thread-safe.
class ClusterWriter {
 public:
  virtual ~ClusterWriter() = default;
  virtual Result<void> AddTaint(const std::string& node, const model::Taint& taint) = 0;
  virtual Result<void> RemoveTaint(const std::string& node, const std::string& key) = 0;
  // policy/v1 Eviction. A PDB refusal is kThrottled; a pod already gone is kNotFound.
  virtual Result<void> Evict(const std::string& ns, const std::string& name) = 0;
  // Deletes the Node object (uid precondition when non-empty); gone already is success.
  virtual Result<void> DeleteNode(const std::string& name, const std::string& uid) = 0;
  virtual Result<void> RecordEvent(const EventSpec& event) = 0;
  // The pods on `node` that would have to leave before it goes (not finished, not DaemonSet or
  // mirror pods), as "namespace/name", read fresh from the API server (never from a cache).
  virtual Result<std::vector<std::string>> PodsOnNode(const std::string& node) = 0;
  // The readable status (the tidepool-status ConfigMap).
  virtual Result<void> WriteStatus(const std::string& text) = 0;
  // What the decision loop learned for warm capacity (Autoscaler::ExportWarmState), kept in the
  // tidepool-warm-state ConfigMap across restarts. Read: nullopt when there is none yet.
  virtual Result<std::optional<std::string>> ReadWarmState() = 0;
  virtual Result<void> WriteWarmState(const std::string& text) = 0;
};

}  // namespace tidepool::controller
