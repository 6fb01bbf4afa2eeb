// ClusterSnapshot: nodes, the pods on them and the pending pods, with cheap nested
// fork()/revert()/commit() so planners can try placements and undo them in O(changes).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/error.h"
#include "model/node.h"
#include "model/pod.h"

namespace tidepool::sched {

using NodeIndex = uint32_t;
inline constexpr NodeIndex kNoNode = UINT32_MAX;

// One node and what is placed on it. `requested` is kept incrementally so the resource part of
// a fit check reads two Resources.
struct NodeInfo {
  const model::Node* node = nullptr;
  std::vector<const model::Pod*> pods;
  model::Resources requested;  // sum of pods' effective requests (pods counts the pod slots)
  int32_t pods_with_required_anti_affinity = 0;
  int32_t pods_with_required_affinity = 0;
  bool removed = false;  // tombstone: indexes stay stable across remove/revert
};

// The snapshot does not own nodes or pods: callers keep every Node and Pod they add alive for
// as long as the snapshot (or any revert target) refers to it. Not thread-safe; fork and share
// nothing across threads.
//
// fork() opens a layer; every change after it is recorded. revert() undoes the changes of the
// innermost layer and closes it; commit() closes it keeping the changes (they become part of
// the enclosing layer, if any). Cost is proportional to the changes, never to the cluster.
class ClusterSnapshot {
 public:
  ClusterSnapshot() = default;
  ClusterSnapshot(const ClusterSnapshot&) = delete;
  ClusterSnapshot& operator=(const ClusterSnapshot&) = delete;

  // Adds a node; the name must be new (an error otherwise).
  Result<NodeIndex> AddNode(const model::Node* node);
  // Removes a node and the pods on it.
  Result<void> RemoveNode(std::string_view name);
  // Places a pod on a node (no fit check: the caller decided). The pod's node_name is not read.
  Result<void> AddPod(const model::Pod* pod, std::string_view node_name);
  Result<void> AddPod(const model::Pod* pod, NodeIndex node);
  // Removes a placed pod (matched by pointer, else by namespace/name) from the node.
  Result<void> RemovePod(const model::Pod* pod, NodeIndex node);

  void Fork();
  void Revert();
  void Commit();
  int Depth() const { return static_cast<int>(layers_.size()); }

  NodeIndex FindNode(std::string_view name) const;
  const NodeInfo& Get(NodeIndex i) const { return nodes_[i]; }
  // Includes removed tombstones; check NodeInfo::removed.
  size_t NodeSlots() const { return nodes_.size(); }
  size_t NodeCount() const { return live_nodes_; }

  // Total count of placed pods with required anti-affinity / affinity terms, so filters skip
  // cluster-wide scans when it is zero.
  int64_t PodsWithRequiredAntiAffinity() const { return pods_with_anti_affinity_; }
  int64_t PodsWithRequiredAffinity() const { return pods_with_affinity_; }

 private:
  enum class Op : uint8_t { kAddNode, kRemoveNode, kAddPod, kRemovePod };
  struct Change {
    Op op;
    NodeIndex node;
    const model::Pod* pod;
    uint32_t position;  // kRemovePod: where the pod was in NodeInfo::pods
  };

  void Record(Change c) {
    if (!layers_.empty()) log_.push_back(c);
  }
  void PlacePod(const model::Pod* pod, NodeIndex node);
  void UnplacePodAt(NodeIndex node, uint32_t position);
  void Undo(const Change& c);

  std::vector<NodeInfo> nodes_;
  std::unordered_map<std::string_view, NodeIndex> by_name_;
  size_t live_nodes_ = 0;
  int64_t pods_with_anti_affinity_ = 0;
  int64_t pods_with_affinity_ = 0;
  std::vector<Change> log_;
  std::vector<size_t> layers_;  // log_ size at each fork
};

}  // namespace tidepool::sched
