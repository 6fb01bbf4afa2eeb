// The writes the actuator makes to the cluster: taints, evictions, Node deletion and Events, plus
// a fresh read of a node's pods. The live controller writes the API server; the simulator its
// world.
#pragma once

#include <string>
#include <vector>

#include "base/error.h"
#include "model/capacity_buffer.h"
#include "model/node.h"
#include "model/provisioning_request.h"

namespace tidepool::actuator {

struct EventSpec {
  std::string object_kind;  // "Pod", "Node" or "ConfigMap"
  std::string ns;           // "" for nodes
  std::string name;
  std::string uid;  // "" when unknown
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
  // mirror pods), as "namespace/name", read fresh (never from a cache).
  virtual Result<std::vector<std::string>> PodsOnNode(const std::string& node) = 0;
  // Sets each condition on the ProvisioningRequest ns/name's status (read fresh, written
  // through the status subresource); a request that is gone is success.
  virtual Result<void> SetProvisioningConditions(
      const std::string& ns, const std::string& name,
      const std::vector<model::Condition>& conditions) = 0;
  // Sets the CapacityBuffer ns/name's status (kube/codec ApplyBufferStatus; read fresh, written
  // through the status subresource); a buffer that is gone is success.
  virtual Result<void> SetCapacityBufferStatus(const std::string& ns, const std::string& name,
                                               const model::BufferStatus& status) = 0;
};

}  // namespace tidepool::actuator
