// DraState: the devices of a simulated cluster and who holds them, for kube-scheduler's
// DynamicResources filter: which node's devices can satisfy a pod's ResourceClaims, and the
// allocation made when the pod is placed, undone in O(changes) with the snapshot's layers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/dra.h"
#include "model/node.h"
#include "model/pod.h"
#include "sched/cel/cel.h"

namespace tidepool::sched {

using DeviceId = uint32_t;

// One request alternative, compiled: its class's selectors and its own, all CEL programs.
struct CompiledSubRequest {
  const model::DeviceSubRequest* sub = nullptr;
  std::string request_name;                    // "<request>" or "<request>/<subrequest>"
  std::vector<const cel::Program*> selectors;  // the class's first, then the request's
  size_t class_selectors = 0;                  // how many of `selectors` are the class's
  uint32_t id = 0;  // dense over all compiled subrequests, keys the match cache
};

struct CompiledRequest {
  std::string name;
  std::vector<CompiledSubRequest> alternatives;  // `exactly`, or firstAvailable in order
};

// A claim's spec, compiled once per spec (a template is compiled once for all its pods).
struct CompiledSpec {
  std::vector<CompiledRequest> requests;
  const std::vector<model::DeviceConstraint>* constraints = nullptr;
  std::string error;  // a class that does not exist or a selector outside the CEL subset
};

// One entry of a pod's spec.resourceClaims, resolved.
struct PodClaim {
  std::string label;                            // "claim ns/x" or "claim gpu (template t)"
  const model::ResourceClaim* claim = nullptr;  // an existing claim (shared, or generated)
  const CompiledSpec* spec = nullptr;
  // From a template: this pod's own claim (generated already, or to be). Fit checks treat it as
  // unallocated unless the cluster allocated it, so one check serves every pod of an equivalence
  // group; placing the pod allocates its own.
  bool per_pod = false;
};

struct PodClaims {
  std::vector<PodClaim> claims;
  std::string error;  // set: the pod fits no node ("claim ns/x not found", a CEL error, ...)
};

// Not thread-safe. Borrows `objects` and every Node and Pod passed in: keep them alive and
// unchanged while the state is used. Lookup caches (compiled specs, per-node device lists, device
// matches) fill lazily and are never undone; allocations are, by Fork/Revert/Commit, which the
// ClusterSnapshot it is attached to calls in step with its own layers.
class DraState {
 public:
  explicit DraState(const model::DraObjects& objects);
  ~DraState();
  DraState(const DraState&) = delete;
  DraState& operator=(const DraState&) = delete;

  // A node that is not in the cluster (a pool template, an upcoming or a planned node) and the
  // slices its driver would publish: its devices are new ones of its own. Slices of the cluster
  // that reach every node, or whose node selector matches the node's labels, are also seen.
  void AddTemplateNode(const model::Node* node, const std::vector<model::ResourceSlice>* slices);

  // The pod's claims resolved and compiled (cached per pod).
  const PodClaims& ClaimsOf(const model::Pod& pod) const;
  // Whether every claim of the pod can be allocated, or is allocated, for this node.
  bool CanAllocate(const PodClaims& claims, const model::Node& node) const;
  // Why not, naming the claim, the request and the selector no device satisfies (cold).
  std::string Diagnose(const PodClaims& claims, const model::Node& node) const;

  // The pod is placed on the node: its unallocated claims are allocated there (the first
  // allocation the search finds, as kube-scheduler's), and it counts as a user of its claims.
  // A pod whose claims cannot be allocated is placed without devices (its caller decided).
  void Place(const model::Pod& pod, const model::Node& node);
  // The pod leaves its node: claims no placed pod uses any more are deallocated, so a pod moved
  // elsewhere gets devices there, as a recreated pod gets a new claim.
  void Unplace(const model::Pod& pod);

  void Fork();
  void Revert();
  void Commit();

  // Devices on the node (node-local ones, and network-attached ones it can reach) and how many
  // of them are allocated.
  struct DeviceUse {
    int devices = 0;
    int allocated = 0;
  };
  DeviceUse UseOf(const model::Node& node) const;
  // Allocated claims whose devices are on this node and which no pod in `pods` uses: the node
  // holds devices for someone else. Names, for a reason.
  std::vector<std::string> ForeignClaimsOn(const model::Node& node,
                                           const std::vector<const model::Pod*>& pods) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tidepool::sched
