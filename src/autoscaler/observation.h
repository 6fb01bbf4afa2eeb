// What the loop is given at each Step: the cluster as read at one moment and the provider's view
// of every pool. Drivers (the controller, the simulator, `tidepool explain`) fill it in.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

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

namespace tidepool::autoscaler {

// What the provider says about one pool.
struct PoolObservation {
  std::string pool;
  int target = 0;  // the provider's desired size
  // Instances the provider has, including ones not joined yet. On a stockout only requested
  // nodes beyond these (and beyond the joined Nodes) are cancelled; they may still join.
  int registered = 0;
  bool stockout = false;  // the provider says it has no capacity for this pool now
  std::string stockout_reason;
  // Stopped machines kept for a fast restart (pools[].scaleDown.mode deallocate); not in target.
  int stopped = 0;
};

// The cluster as read at one moment (informer cache or simulator state). All pointers are
// borrowed and need only stay valid during the Step call; the loop keeps none of them.
struct Observation {
  std::vector<const model::Node*> nodes;
  std::vector<const model::Pod*> pods;
  std::vector<const model::PodDisruptionBudget*> pdbs;
  std::vector<const model::DaemonSet*> daemon_sets;
  // Dynamic Resource Allocation objects (resource.k8s.io/v1); null when not watched.
  const model::DraObjects* dra = nullptr;
  // ProvisioningRequests (autoscaling.x-k8s.io/v1) and the PodTemplates their pod sets name
  // (docs/kueue.md); empty when the driver has none.
  std::vector<const model::ProvisioningRequest*> provisioning_requests;
  std::vector<const model::PodTemplate*> pod_templates;
  // CapacityBuffers (autoscaling.x-k8s.io/v1beta1) and the apps/v1 Deployments their
  // scalableRefs may name (docs/capacity-buffers.md); empty when the driver has none.
  std::vector<const model::CapacityBuffer*> capacity_buffers;
  std::vector<const model::Deployment*> deployments;
  // One per configured pool, from the provider. A configured pool missing here is taken to have
  // exactly its registered nodes (nothing upcoming) and no stockout.
  std::vector<PoolObservation> pools;
  // The provider's node -> pool mapping, consulted when the labels name no pool
  // (docs/annotations.md, "Which pool a node belongs to").
  // Optional; returns "" for "not mine".
  std::function<std::string(const model::Node&)> provider_pool_of;
  // Optional: the driver's long-lived model of these nodes and the pods bound to them, kept from
  // every change (docs/architecture.md, "The cluster model"). The loop's planning passes fork it
  // and leave it as they found it. Unlike the pointers above it outlives the Step. Its pods that
  // wait for a node (ClusterModel::Unbound) must be exactly those of `pods`.
  sched::ClusterModel* model = nullptr;
  // Optional change counter of the whole observation (the live controller's: its informers'
  // counts of changes plus the provider's epoch; the simulator's mutation counter). 0: unknown. A
  // driver that sets it promises that two observations with the same nonzero version are identical
  // in every field above, so the loop may skip planning that cannot decide anything new
  // (LoopOptions::skip_unchanged).
  uint64_t version = 0;
};

}  // namespace tidepool::autoscaler
