// ClusterModel: the cluster as one long-lived ClusterSnapshot, kept up to date from deltas (a
// node or pod added, changed or deleted) in O(change), so that a pass forks it instead of
// rebuilding it (docs/architecture.md, "The cluster model").
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/error.h"
#include "model/node.h"
#include "model/pod.h"
#include "sched/snapshot.h"

namespace tidepool::sched {

// The model owns what it is given (shared, so an informer cache and the model can hold the same
// object) and never changes it. A changed object arrives again, as a new object (a watch) or as
// the same one changed in place (the simulator): either way the model forgets what it derived
// from the old state (the node a pod was filed under, a node's taints and allocatable). A pod's
// requests and labels must not change in place while it is placed. The snapshot holds the live
// nodes and, on each, the pods bound to it that are not terminal. A pod may arrive before its node
// (watches are not ordered across kinds); it is placed when the node comes. Each delta costs O(log
// nodes + pods on the node it touches).
//
// Passes read and fork the snapshot: Fork() before any change to it and Revert() after (Layer
// does both), so that it is the cluster again when the next delta comes. A delta while a layer is
// open is refused with an error naming the depth, and changes nothing; so is any malformed delta.
// Pods must be Finalize()d. Devices and claims (DRA) are not modelled: a pass over a cluster with
// DRA objects builds its own snapshot.
class ClusterModel {
 public:
  // A pointer the model may hold without owning the object: for callers that keep their objects
  // alive for as long as the model refers to them (tests, benchmarks).
  template <typename T>
  static std::shared_ptr<const T> Borrow(const T* object) {
    return std::shared_ptr<const T>(std::shared_ptr<void>(), object);
  }

  ClusterModel() = default;
  ClusterModel(const ClusterModel&) = delete;
  ClusterModel& operator=(const ClusterModel&) = delete;

  // Adds a node, or replaces the node of the same name (its pods stay on it).
  Result<void> SetNode(std::shared_ptr<const model::Node> node);
  // Removes a node. Its pods stay known and are placed again if a node of that name comes back.
  Result<void> DeleteNode(std::string_view name);
  // Adds a pod, or replaces the pod of the same namespace/name (a bind, a phase change).
  Result<void> SetPod(std::shared_ptr<const model::Pod> pod);
  Result<void> DeletePod(std::string_view ns, std::string_view name);

  // Nodes and placed pods. Node indexes stay valid until generation() changes (a compaction,
  // when removed nodes outnumber the live ones).
  ClusterSnapshot& snapshot() { return *snapshot_; }
  const ClusterSnapshot& snapshot() const { return *snapshot_; }
  uint64_t generation() const { return generation_; }
  // Unique in the process: a model made where a destroyed one was has another id, so what was
  // kept about one model's slots (ScaleDownMemo) is never taken for the other's.
  uint64_t id() const { return id_; }
  // A number that changes whenever the pods placed on node slot `i` change, never to one it had
  // before; 0 for a slot the model did not hand out (one a pass added in its layer). A changed
  // node takes a new slot, so with generation() a slot and its stamp name one state of a node and
  // its pods: what a pass derived from them holds while the stamp stays (ScaleDownMemo).
  uint64_t Stamp(NodeIndex i) const { return i < stamps_.size() ? stamps_[i] : 0; }

  // Known objects, by name: nodes in name order, pods by namespace/name (nullptr when unknown).
  const model::Node* FindNode(std::string_view name) const;
  const model::Pod* FindPod(std::string_view ns, std::string_view name) const;
  size_t NodeCount() const { return snapshot_->NodeCount(); }
  size_t PodCount() const { return pods_.size(); }
  // The pods it holds that wait for a node (model::Pod::WaitsForNode), in key order
  // ("namespace/name", bytewise): the pods a pass may place, without reading every pod.
  std::vector<const model::Pod*> Unbound() const;
  // The pods it holds in phase Succeeded, in key order: what the loop learns runtimes from,
  // without reading every pod.
  std::vector<const model::Pod*> Succeeded() const;
  size_t SucceededCount() const { return succeeded_.size(); }
  // The pods it holds that became Succeeded after `cursor` (0: all of them), in the order they
  // did; `cursor` then names this call. A Succeeded pod that is replaced (a label changed) keeps
  // its place; one deleted and added again takes a new one. Finished Jobs' pods can stay for days:
  // a reader that wants only the new ones reads those, not every one at every pass.
  std::vector<const model::Pod*> SucceededSince(uint64_t& cursor) const;
  // Live node indexes in name order, and where a live slot stands in that order (kNoPlace for a
  // slot that is not one: removed, or added by a pass in its layer). Kept from one call to the
  // next until a node is added, replaced or deleted.
  const std::vector<NodeIndex>& NodesByName() const;
  static constexpr uint32_t kNoPlace = UINT32_MAX;
  uint32_t PlaceByName(NodeIndex slot) const;
  // Deltas applied so far (successful ones), for drivers that report what changed.
  uint64_t Changes() const { return changes_; }
  // Changes whenever a node name comes or goes (not when a node is replaced, as a heartbeat
  // replaces it): while it stays, so does the set of live node names.
  uint64_t NamesVersion() const { return names_version_; }
  // A debug mode (the simulator's --check-invariants): a pass that forks the model also plans on
  // a snapshot it builds, and stops the process on any difference.
  void SetVerify(bool on) { verify_ = on; }
  bool verify() const { return verify_; }

  // Fork()s the snapshot and Revert()s it when it goes out of scope.
  class Layer {
   public:
    explicit Layer(ClusterModel& model) : snapshot_(model.snapshot()) { snapshot_.Fork(); }
    ~Layer() { snapshot_.Revert(); }
    Layer(const Layer&) = delete;
    Layer& operator=(const Layer&) = delete;

   private:
    ClusterSnapshot& snapshot_;
  };

 private:
  struct PodRecord {
    std::shared_ptr<const model::Pod> pod;
    std::string node;            // the node name it is filed under ("" when unbound)
    NodeIndex placed = kNoNode;  // where the snapshot holds it
    bool waits = false;          // in unbound_ (model::Pod::WaitsForNode when it was set)
    bool succeeded = false;      // in succeeded_
    uint64_t succeeded_at = 0;   // its key in succeeded_since_ (when `succeeded`)
  };
  // Pods picked out by a property, by their key in pods_ (whose nodes stay where they are).
  using PodIndex = std::map<std::string_view, const model::Pod*>;
  // A node name with the node (null when absent) and the pods bound to that name.
  struct NodeRecord {
    std::shared_ptr<const model::Node> node;
    NodeIndex index = kNoNode;
    std::vector<PodRecord*> pods;  // bound here, terminal or not, in arrival order
  };

  Result<void> Writable(std::string_view what) const;
  // Places the pods bound to `record` that belong in the snapshot.
  void PlacePods(NodeRecord& record);
  void Place(PodRecord& pod, NodeIndex node);
  void Unplace(PodRecord& pod);
  // Gives slot `i` a new stamp.
  void Touch(NodeIndex i);
  void Unbind(PodRecord& pod);
  // Files the pod in succeeded_ and succeeded_since_, or takes it out, by its phase.
  void FileSucceeded(std::string_view key, PodRecord& pod);
  // Drops a record that holds neither a node nor pods.
  void DropIfEmpty(std::map<std::string, NodeRecord, std::less<>>::iterator it);
  // Builds the snapshot again from the records when tombstones outnumber live nodes.
  void MaybeCompact();

  // A snapshot that keeps the sums scale-down reads (KeepStayingSums).
  static std::unique_ptr<ClusterSnapshot> NewSnapshot();
  static uint64_t NextId();

  std::unique_ptr<ClusterSnapshot> snapshot_ = NewSnapshot();
  std::map<std::string, NodeRecord, std::less<>> nodes_;
  std::unordered_map<std::string, PodRecord> pods_;        // by namespace/name
  PodIndex unbound_;                                       // Unbound()
  PodIndex succeeded_;                                     // Succeeded()
  std::map<uint64_t, const model::Pod*> succeeded_since_;  // SucceededSince()
  uint64_t last_succeeded_ = 0;
  // Nodes replaced or deleted since the last compaction: the snapshot's tombstones point at them.
  std::vector<std::shared_ptr<const model::Node>> retired_;
  uint64_t generation_ = 0;
  const uint64_t id_ = NextId();
  std::vector<uint64_t> stamps_;  // per snapshot slot
  uint64_t last_stamp_ = 0;
  uint64_t changes_ = 0;
  uint64_t names_version_ = 0;
  bool verify_ = false;
  // NodesByName() and its inverse, made on demand; cleared with every change to the live nodes.
  mutable std::vector<NodeIndex> by_name_;
  mutable std::vector<uint32_t> place_by_name_;  // per slot
  mutable bool by_name_valid_ = false;
};

}  // namespace tidepool::sched
