#include "sched/cluster_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <utility>

#include "base/check.h"

namespace tidepool::sched {
namespace {

std::string PodKey(std::string_view ns, std::string_view name) {
  std::string key;
  key.reserve(ns.size() + 1 + name.size());
  key.append(ns).append("/").append(name);
  return key;
}

bool BelongsInSnapshot(const model::Pod& pod) { return !pod.IsTerminal(); }

// Files `pod` under `key` in `index` when it `belongs` there, and takes it out when it was there
// (`in`) and no longer belongs; `in` then says where it is.
template <typename Index>
void Refile(Index& index, std::string_view key, const model::Pod* pod, bool& in, bool belongs) {
  if (belongs) {
    index.insert_or_assign(key, pod);
  } else if (in) {
    index.erase(key);
  }
  in = belongs;
}

template <typename Index>
std::vector<const model::Pod*> Listed(const Index& index) {
  std::vector<const model::Pod*> out;
  out.reserve(index.size());
  for (const auto& [key, pod] : index) out.push_back(pod);
  return out;
}

}  // namespace

std::unique_ptr<ClusterSnapshot> ClusterModel::NewSnapshot() {
  auto snapshot = std::make_unique<ClusterSnapshot>();
  snapshot->KeepStayingSums();
  return snapshot;
}

Result<void> ClusterModel::Writable(std::string_view what) const {
  if (snapshot_->Depth() == 0) return {};
  return Fail(Error::Code::kInternal,
              "cluster model: {} refused: a pass holds {} open layer(s) of the snapshot (every "
              "Fork needs its Revert before the next delta)",
              what, snapshot_->Depth());
}

Result<void> ClusterModel::SetNode(std::shared_ptr<const model::Node> node) {
  if (node == nullptr) return InvalidArgument("cluster model: node is null");
  const std::string& name = node->name();
  if (name.empty()) return InvalidArgument("cluster model: node without metadata.name");
  TIDEPOOL_RETURN_IF_ERROR(Writable("node " + name));
  auto it = nodes_.find(name);
  if (it == nodes_.end()) it = nodes_.emplace(name, NodeRecord{}).first;
  NodeRecord& record = it->second;
  if (record.node != nullptr) {
    // A changed node: its pods leave with the old slot and come back on the new one.
    for (PodRecord* pod : record.pods) pod->placed = kNoNode;
    TIDEPOOL_CHECK(snapshot_->RemoveNode(name).has_value());
    retired_.push_back(std::move(record.node));
  } else {
    ++names_version_;
  }
  record.node = std::move(node);
  by_name_valid_ = false;
  Result<NodeIndex> index = snapshot_->AddNode(record.node.get());
  TIDEPOOL_CHECK(index.has_value());
  record.index = *index;
  Touch(record.index);
  PlacePods(record);
  ++changes_;
  MaybeCompact();
  return {};
}

Result<void> ClusterModel::DeleteNode(std::string_view name) {
  TIDEPOOL_RETURN_IF_ERROR(Writable(fmt::format("deleting node {}", name)));
  auto it = nodes_.find(name);
  if (it == nodes_.end() || it->second.node == nullptr) {
    return Fail(Error::Code::kNotFound, "cluster model: no node {} to delete", name);
  }
  NodeRecord& record = it->second;
  for (PodRecord* pod : record.pods) pod->placed = kNoNode;
  TIDEPOOL_CHECK(snapshot_->RemoveNode(name).has_value());
  retired_.push_back(std::move(record.node));
  record.index = kNoNode;
  by_name_valid_ = false;
  ++names_version_;
  DropIfEmpty(it);
  ++changes_;
  MaybeCompact();
  return {};
}

Result<void> ClusterModel::SetPod(std::shared_ptr<const model::Pod> pod) {
  if (pod == nullptr) return InvalidArgument("cluster model: pod is null");
  if (pod->meta.name.empty()) {
    return InvalidArgument("cluster model: pod without metadata.name in namespace '{}'",
                           pod->meta.namespace_);
  }
  std::string key = PodKey(pod->meta.namespace_, pod->meta.name);
  TIDEPOOL_RETURN_IF_ERROR(Writable("pod " + key));
  auto [it, added] = pods_.try_emplace(std::move(key));
  PodRecord& record = it->second;
  if (!added) Unbind(record);
  record.pod = std::move(pod);
  record.node = record.pod->node_name;
  Refile(unbound_, it->first, record.pod.get(), record.waits, record.pod->WaitsForNode());
  FileSucceeded(it->first, record);
  if (!record.node.empty()) {
    auto node = nodes_.find(record.node);
    if (node == nodes_.end()) node = nodes_.emplace(record.node, NodeRecord{}).first;
    node->second.pods.push_back(&record);
    if (node->second.node != nullptr && BelongsInSnapshot(*record.pod)) {
      Place(record, node->second.index);
    }
  }
  ++changes_;
  return {};
}

Result<void> ClusterModel::DeletePod(std::string_view ns, std::string_view name) {
  std::string key = PodKey(ns, name);
  TIDEPOOL_RETURN_IF_ERROR(Writable("deleting pod " + key));
  auto it = pods_.find(key);
  if (it == pods_.end()) return Fail(Error::Code::kNotFound, "cluster model: no pod {}", key);
  Unbind(it->second);
  if (it->second.waits) unbound_.erase(it->first);
  if (it->second.succeeded) {
    succeeded_.erase(it->first);
    succeeded_since_.erase(it->second.succeeded_at);
  }
  pods_.erase(it);
  ++changes_;
  return {};
}

void ClusterModel::FileSucceeded(std::string_view key, PodRecord& pod) {
  const bool was = pod.succeeded;
  Refile(succeeded_, key, pod.pod.get(), pod.succeeded,
         pod.pod->phase == model::PodPhase::kSucceeded);
  if (pod.succeeded) {
    if (!was) pod.succeeded_at = ++last_succeeded_;
    succeeded_since_.insert_or_assign(pod.succeeded_at, pod.pod.get());
  } else if (was) {
    succeeded_since_.erase(pod.succeeded_at);
  }
}

// Takes the pod off its node record (and the snapshot).
void ClusterModel::Unbind(PodRecord& pod) {
  Unplace(pod);
  if (pod.node.empty()) return;
  auto it = nodes_.find(pod.node);
  TIDEPOOL_CHECK(it != nodes_.end());
  std::vector<PodRecord*>& pods = it->second.pods;
  auto at = std::find(pods.begin(), pods.end(), &pod);
  TIDEPOOL_CHECK(at != pods.end());
  pods.erase(at);
  pod.node.clear();
  DropIfEmpty(it);
}

void ClusterModel::Place(PodRecord& pod, NodeIndex node) {
  TIDEPOOL_CHECK(snapshot_->AddPod(pod.pod.get(), node).has_value());
  pod.placed = node;
  Touch(node);
}

void ClusterModel::Unplace(PodRecord& pod) {
  if (pod.placed == kNoNode) return;
  TIDEPOOL_CHECK(snapshot_->RemovePod(pod.pod.get(), pod.placed).has_value());
  Touch(pod.placed);
  pod.placed = kNoNode;
}

void ClusterModel::Touch(NodeIndex i) {
  if (stamps_.size() <= i) stamps_.resize(snapshot_->NodeSlots(), 0);
  stamps_[i] = ++last_stamp_;
}

void ClusterModel::PlacePods(NodeRecord& record) {
  for (PodRecord* pod : record.pods)
    if (BelongsInSnapshot(*pod->pod)) Place(*pod, record.index);
}

void ClusterModel::DropIfEmpty(std::map<std::string, NodeRecord, std::less<>>::iterator it) {
  if (it->second.node == nullptr && it->second.pods.empty()) nodes_.erase(it);
}

uint64_t ClusterModel::NextId() {
  static std::atomic<uint64_t> last{0};
  return ++last;
}

void ClusterModel::MaybeCompact() {
  const size_t live = snapshot_->NodeCount();
  const size_t tombstones = snapshot_->NodeSlots() - live;
  if (tombstones < 64 || tombstones <= live) return;
  // A fresh snapshot in name order. Its topology and label indexes are built again on first use.
  snapshot_ = NewSnapshot();
  retired_.clear();
  stamps_.clear();
  snapshot_->ReserveNodes(live);
  for (auto& [name, record] : nodes_) {
    for (PodRecord* pod : record.pods) pod->placed = kNoNode;
    if (record.node == nullptr) continue;
    Result<NodeIndex> index = snapshot_->AddNode(record.node.get());
    TIDEPOOL_CHECK(index.has_value());
    record.index = *index;
    Touch(record.index);
    PlacePods(record);
  }
  ++generation_;
  by_name_valid_ = false;
}

const model::Node* ClusterModel::FindNode(std::string_view name) const {
  auto it = nodes_.find(name);
  return it == nodes_.end() ? nullptr : it->second.node.get();
}

const model::Pod* ClusterModel::FindPod(std::string_view ns, std::string_view name) const {
  auto it = pods_.find(PodKey(ns, name));
  return it == pods_.end() ? nullptr : it->second.pod.get();
}

std::vector<const model::Pod*> ClusterModel::Unbound() const { return Listed(unbound_); }

std::vector<const model::Pod*> ClusterModel::Succeeded() const { return Listed(succeeded_); }

std::vector<const model::Pod*> ClusterModel::SucceededSince(uint64_t& cursor) const {
  std::vector<const model::Pod*> out;
  for (auto it = succeeded_since_.upper_bound(cursor); it != succeeded_since_.end(); ++it)
    out.push_back(it->second);
  cursor = last_succeeded_;
  return out;
}

const std::vector<NodeIndex>& ClusterModel::NodesByName() const {
  if (by_name_valid_) return by_name_;
  by_name_.clear();
  by_name_.reserve(snapshot_->NodeCount());
  place_by_name_.assign(snapshot_->NodeSlots(), 0);
  for (const auto& [name, record] : nodes_) {
    if (record.node == nullptr) continue;
    place_by_name_[record.index] = static_cast<uint32_t>(by_name_.size());
    by_name_.push_back(record.index);
  }
  by_name_valid_ = true;
  return by_name_;
}

uint32_t ClusterModel::PlaceByName(NodeIndex slot) const {
  const std::vector<NodeIndex>& by_name = NodesByName();
  if (slot >= place_by_name_.size()) return kNoPlace;
  const uint32_t place = place_by_name_[slot];
  return place < by_name.size() && by_name[place] == slot ? place : kNoPlace;
}

}  // namespace tidepool::sched
