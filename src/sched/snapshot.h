// ClusterSnapshot: nodes and the pods placed on them, with cheap nested fork()/revert()/commit()
// so planners can try placements and undo them in O(changes).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/name_index.h"
#include "model/node.h"
#include "model/pod.h"
#include "sched/anti_affinity_index.h"
#include "sched/label_counts.h"

namespace tidepool::sched {

class DraState;

using NodeIndex = uint32_t;
inline constexpr NodeIndex kNoNode = UINT32_MAX;
static_assert(NameIndex::kNone == kNoNode, "FindNode answers with the name index's miss");

// One node and what is placed on it. `requested` is kept incrementally so the resource part of
// a fit check reads two Resources.
struct NodeInfo {
  const model::Node* node = nullptr;
  std::vector<const model::Pod*> pods;
  model::Resources requested;  // sum of pods' effective requests (pods counts the pod slots)
  // The part of `requested` that draining the node leaves in place (StaysOnDrain): scale-down
  // reads a node's utilization as the difference without visiting its pods. Kept only by a
  // snapshot asked to (ClusterSnapshot::KeepStayingSums); zero otherwise.
  model::Resources staying_requested;
  int32_t pods_with_required_anti_affinity = 0;
  int32_t pods_with_required_affinity = 0;
  // Tombstone: indexes stay stable across remove/revert. A removed node has no pods, zero
  // requests and is not found by name; `node` still points at the removed Node.
  bool removed = false;
  // Copies of the node's fields that every fit check reads, kept here so a check of a simple
  // pod reads one contiguous array instead of chasing each Node.
  bool unschedulable = false;
  bool has_taints = false;
  // Added by AddUnnamedNode: not in the name index.
  bool unnamed = false;
  model::Resources allocatable;
};

// A pod that draining its node does not move: a DaemonSet or mirror pod (it belongs to the node),
// or one being deleted already. Read when the pod is placed, like its requests, so these must not
// change in place while it is; the first two from the flag Pod::Finalize() sets.
inline bool StaysOnDrain(const model::Pod& pod) {
  return pod.meta.deletion_timestamp.has_value() || pod.belongs_to_node;
}

// The domains of one topology key (a node label such as topology.kubernetes.io/zone): the domain
// id of every node slot, or kNoDomain when the node lacks the label. Ids are dense, handed out
// in order of first sight and never reused; a value whose nodes were all removed keeps its id.
// Lets the inter-pod filters count per domain in flat arrays instead of looking up labels.
class TopologyIndex {
 public:
  static constexpr uint32_t kNoDomain = UINT32_MAX;

  explicit TopologyIndex(std::string key) : key_(std::move(key)) {}
  TopologyIndex(const TopologyIndex&) = delete;
  TopologyIndex& operator=(const TopologyIndex&) = delete;

  const std::string& key() const { return key_; }
  uint32_t DomainOf(NodeIndex node) const { return domain_of_[node]; }
  // The id of a label value, or kNoDomain when no node ever had it.
  uint32_t Find(std::string_view value) const {
    auto it = ids_.find(value);
    return it == ids_.end() ? kNoDomain : it->second;
  }
  std::string_view Value(uint32_t domain) const { return values_[domain]; }
  size_t DomainCount() const { return values_.size(); }
  // Live (not removed) nodes in the domain: a spread constraint whose inclusion policies pass
  // every node with the key finds its eligible domains here instead of visiting each node.
  int32_t LiveNodes(uint32_t domain) const { return live_[domain]; }

 private:
  friend class ClusterSnapshot;
  void Append(const model::Node& node, bool live);  // the next node slot
  void PopBack();                                   // the last slot, a live node
  // A node removed (-1) or brought back (+1).
  void CountLive(NodeIndex node, int32_t delta) {
    if (domain_of_[node] != kNoDomain) live_[domain_of_[node]] += delta;
  }

  std::string key_;
  std::vector<uint32_t> domain_of_;                     // per node slot
  std::vector<int32_t> live_;                           // per domain
  std::deque<std::string> values_;                      // owned: nodes may go away, ids stay
  std::unordered_map<std::string_view, uint32_t> ids_;  // views into values_
};

// The snapshot does not own nodes or pods: callers keep every Node and Pod they add alive and
// unchanged for as long as the snapshot (or any revert target) refers to it. Pods must be
// Finalize()d (their derived `requests` and affinity flags are read) and not terminal. Not
// thread-safe; fork and share nothing across threads.
//
// fork() opens a layer; every change after it is recorded in an undo log. revert() undoes the
// changes of the innermost layer and closes it; commit() closes it keeping the changes (they
// become part of the enclosing layer, if any, and are undone if that layer is reverted). Cost is
// proportional to the changes, never to the cluster. Without an open layer nothing is recorded.
//
// Errors (unknown node, duplicate name, pod not on the node, terminal pod) are Result errors
// naming the node or pod; a failed call changes nothing.
class ClusterSnapshot {
 public:
  ClusterSnapshot() = default;
  ClusterSnapshot(const ClusterSnapshot&) = delete;
  ClusterSnapshot& operator=(const ClusterSnapshot&) = delete;

  // Adds a node; the name must be non-empty and not name a live node (an error otherwise).
  // Indexes are handed out in order and never reused (a removed node leaves a tombstone).
  Result<NodeIndex> AddNode(const model::Node* node);
  // Adds a node no one looks up by name (a node a pass made up): FindNode, RemoveNode and the
  // name-taking AddPod do not see it, and its name may be one a live node holds. Cheaper than
  // AddNode by an index insert and, on revert, an erase; the caller keeps the names apart where
  // they matter (the hostname label). Undoable like AddNode.
  NodeIndex AddUnnamedNode(const model::Node* node);
  // Room for `nodes` node slots in all, so that adding a cluster's nodes one by one does not
  // reallocate (a hint: changes nothing else).
  void ReserveNodes(size_t nodes);
  // Removes a node and the pods on it (their claims are released as by RemovePod). Undoable:
  // revert() restores the node at the same index with its pods in their order.
  Result<void> RemoveNode(std::string_view name);
  // The same for the live node at slot `index` (also one added unnamed).
  Result<void> RemoveNodeAt(NodeIndex index);
  // Gives the live node named like `node` that object instead (a caller that sees the node
  // otherwise than the snapshot holds it), with the same pods in their order. The old slot is
  // removed and the node added again at the end: returns its new index. Undoable.
  Result<NodeIndex> ReplaceNode(const model::Node* node);
  // Places a pod on a node (no fit check: the caller decided). The pod's node_name is not read.
  Result<void> AddPod(const model::Pod* pod, std::string_view node_name);
  Result<void> AddPod(const model::Pod* pod, NodeIndex node);
  // Removes a placed pod (matched by pointer, else by namespace/name) from the node. The last
  // pod of the node takes the removed pod's place in NodeInfo::pods (revert restores the order).
  Result<void> RemovePod(const model::Pod* pod, NodeIndex node);
  // Changes what a live node can hold (a planner's flexible new node narrowed to the shape it
  // gets). Only NodeInfo::allocatable changes, never the Node. Undoable.
  Result<void> SetAllocatable(NodeIndex node, const model::Resources& allocatable);

  // Devices and claims (Dynamic Resource Allocation): from now on, placing a pod with
  // resourceClaims allocates them in `dra` (DraState::Place), removing it releases them, and
  // Fork/Revert/Commit carry `dra`'s allocations along. Attach before the first Fork (checked);
  // `dra` must outlive the snapshot. Optional: without it pods with claims fit no node.
  void AttachDra(DraState* dra);
  DraState* dra() const { return dra_; }

  // From now on, keep each node's NodeInfo::staying_requested. Only on a snapshot without pods
  // (checked): the snapshots scale-down reads ask for it, and the many a scale-up estimate
  // builds and fills do not pay for a sum they never read.
  void KeepStayingSums();
  bool keeps_staying_sums() const { return keep_staying_; }

  void Fork();
  // Requires an open layer (checked).
  void Revert();
  // Requires an open layer (checked).
  void Commit();
  int Depth() const { return static_cast<int>(layers_.size()); }

  // The live node with this name, or kNoNode.
  NodeIndex FindNode(std::string_view name) const;
  const NodeInfo& Get(NodeIndex i) const { return nodes_[i]; }
  // Includes removed tombstones; check NodeInfo::removed.
  size_t NodeSlots() const { return nodes_.size(); }
  size_t NodeCount() const { return live_nodes_; }
  // Pods placed on live nodes.
  int64_t PodCount() const { return pod_count_; }

  // Total count of placed pods with required anti-affinity / affinity terms, so filters skip
  // cluster-wide scans when it is zero.
  int64_t PodsWithRequiredAntiAffinity() const { return pods_with_anti_affinity_; }
  int64_t PodsWithRequiredAffinity() const { return pods_with_affinity_; }

  // The domain index of a topology key, built on first use (O(nodes)) and then kept up to date
  // by AddNode and revert. The reference stays valid for the snapshot's lifetime. Building it
  // mutates a cache, so even const use of a snapshot is single-threaded.
  const TopologyIndex& Topology(std::string_view key) const;
  // The pods of namespace `ns` per node slot by their value of label `key`, built on first use
  // (O(pods)) and then kept up to date by every change and revert, like Topology().
  const LabelCounts& Labels(std::string_view ns, std::string_view key) const;
  // The required anti-affinity terms of the pods on live nodes, by a label they require.
  const AntiAffinityIndex& AntiAffinity() const { return anti_affinity_; }

 private:
  enum class Op : uint8_t { kAddNode, kRemoveNode, kAddPod, kRemovePod, kSetAllocatable };
  struct Change {
    Op op;
    NodeIndex node;
    const model::Pod* pod;
    uint32_t position;  // kRemovePod: where the pod was in NodeInfo::pods
                        // kSetAllocatable: the previous value's slot in old_allocatable_
  };

  void Record(Change c) {
    if (!layers_.empty()) log_.push_back(c);
  }
  Result<NodeIndex> LiveNode(NodeIndex node, const model::Pod* pod, std::string_view what) const;
  void PlacePod(const model::Pod* pod, NodeIndex node);
  void UnplacePodAt(NodeIndex node, uint32_t position);
  void Undo(const Change& c);
  // A node's slot at the end, indexed by topology and label counts, and recorded (AddNode and
  // AddUnnamedNode, which index its name or not).
  NodeInfo& AppendNode(const model::Node* node);

  std::vector<NodeInfo> nodes_;
  NameIndex by_name_;  // live nodes only
  size_t live_nodes_ = 0;
  int64_t pod_count_ = 0;
  int64_t pods_with_anti_affinity_ = 0;
  int64_t pods_with_affinity_ = 0;
  bool keep_staying_ = false;
  std::vector<Change> log_;
  std::vector<size_t> layers_;  // log_ size at each fork
  // The contents of nodes removed inside an open layer, most recent last; kRemoveNode undo
  // moves them back. Cleared when the outermost layer commits.
  std::vector<NodeInfo> graveyard_;
  // What SetAllocatable replaced inside an open layer, most recent last. Cleared likewise.
  std::vector<model::Resources> old_allocatable_;
  DraState* dra_ = nullptr;
  // Topology indexes built so far; each covers every node slot.
  mutable std::vector<std::unique_ptr<TopologyIndex>> topologies_;
  // Label counts built so far; each covers every node slot.
  mutable std::vector<std::unique_ptr<LabelCounts>> label_counts_;
  AntiAffinityIndex anti_affinity_;
};

}  // namespace tidepool::sched
