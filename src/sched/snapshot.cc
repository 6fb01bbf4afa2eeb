#include "sched/snapshot.h"

#include <utility>

#include "base/check.h"
#include "sched/dra/dra_state.h"

namespace tidepool::sched {
namespace {

std::string_view PhaseName(model::PodPhase p) {
  return p == model::PodPhase::kSucceeded ? "Succeeded" : "Failed";
}

}  // namespace

void TopologyIndex::Append(const model::Node& node, bool live) {
  auto it = node.labels().find(key_);
  if (it == node.labels().end()) {
    domain_of_.push_back(kNoDomain);
    return;
  }
  uint32_t id = Find(it->second);
  if (id == kNoDomain) {
    TIDEPOOL_CHECK(values_.size() < kNoDomain);
    id = static_cast<uint32_t>(values_.size());
    values_.push_back(it->second);
    ids_.emplace(values_.back(), id);
    live_.push_back(0);
  }
  domain_of_.push_back(id);
  if (live) ++live_[id];
}

void TopologyIndex::PopBack() {
  CountLive(static_cast<NodeIndex>(domain_of_.size() - 1), -1);
  domain_of_.pop_back();
}

const TopologyIndex& ClusterSnapshot::Topology(std::string_view key) const {
  for (const auto& t : topologies_)
    if (t->key() == key) return *t;
  auto index = std::make_unique<TopologyIndex>(std::string(key));
  index->domain_of_.reserve(nodes_.size());
  for (const NodeInfo& info : nodes_) index->Append(*info.node, !info.removed);
  topologies_.push_back(std::move(index));
  return *topologies_.back();
}

const LabelCounts& ClusterSnapshot::Labels(std::string_view ns, std::string_view key) const {
  for (const auto& l : label_counts_)
    if (l->key() == key && l->ns() == ns) return *l;
  auto counts = std::make_unique<LabelCounts>(std::string(ns), std::string(key));
  counts->per_node_.resize(nodes_.size());
  for (NodeIndex i = 0; i < nodes_.size(); ++i) counts->Recount(i, nodes_[i].pods);
  label_counts_.push_back(std::move(counts));
  return *label_counts_.back();
}

void ClusterSnapshot::ReserveNodes(size_t nodes) {
  nodes_.reserve(nodes);
  by_name_.reserve(nodes);
}

Result<NodeIndex> ClusterSnapshot::AddNode(const model::Node* node) {
  TIDEPOOL_CHECK(node != nullptr);
  if (node->name().empty()) return InvalidArgument("cannot add a node without a name");
  auto index = static_cast<NodeIndex>(nodes_.size());
  // One lookup: the name is indexed here, or found taken.
  if (!by_name_.try_emplace(node->name(), index)) {
    return Fail(Error::Code::kConflict, "node \"{}\" is already in the snapshot", node->name());
  }
  AppendNode(node);
  return index;
}

NodeIndex ClusterSnapshot::AddUnnamedNode(const model::Node* node) {
  AppendNode(node).unnamed = true;
  return static_cast<NodeIndex>(nodes_.size() - 1);
}

NodeInfo& ClusterSnapshot::AppendNode(const model::Node* node) {
  TIDEPOOL_CHECK(node != nullptr);
  TIDEPOOL_CHECK_MSG(nodes_.size() < kNoNode, "too many node slots");
  auto index = static_cast<NodeIndex>(nodes_.size());
  NodeInfo& info = nodes_.emplace_back();
  info.node = node;
  info.unschedulable = node->unschedulable;
  info.has_taints = !node->taints.empty();
  info.allocatable = node->allocatable;
  for (auto& t : topologies_) t->Append(*node, /*live=*/true);
  for (auto& l : label_counts_) l->AddSlot();
  ++live_nodes_;
  Record({Op::kAddNode, index, nullptr, 0});
  return info;
}

Result<NodeIndex> ClusterSnapshot::ReplaceNode(const model::Node* node) {
  NodeIndex old = FindNode(node->name());
  if (old == kNoNode) {
    return Fail(Error::Code::kNotFound, "cannot replace node \"{}\": not in the snapshot",
                node->name());
  }
  std::vector<const model::Pod*> pods = nodes_[old].pods;
  TIDEPOOL_RETURN_IF_ERROR(RemoveNode(node->name()));
  TIDEPOOL_ASSIGN_OR_RETURN(NodeIndex index, AddNode(node));
  for (const model::Pod* pod : pods) TIDEPOOL_RETURN_IF_ERROR(AddPod(pod, index));
  return index;
}

Result<void> ClusterSnapshot::RemoveNode(std::string_view name) {
  NodeIndex index = FindNode(name);
  if (index == kNoNode) {
    return Fail(Error::Code::kNotFound, "cannot remove node \"{}\": not in the snapshot", name);
  }
  return RemoveNodeAt(index);
}

Result<void> ClusterSnapshot::RemoveNodeAt(NodeIndex index) {
  if (index >= nodes_.size() || nodes_[index].removed) {
    return Fail(Error::Code::kNotFound, "cannot remove node slot {}: no live node there", index);
  }
  NodeInfo& info = nodes_[index];
  // Its pods leave with it, and with them their claims (undone by the DraState's own log).
  if (dra_ != nullptr) {
    for (const model::Pod* p : info.pods)
      if (!p->resource_claims().empty()) dra_->Unplace(*p);
  }
  if (info.pods_with_required_anti_affinity > 0) {
    for (const model::Pod* p : info.pods)
      if (p->has_required_anti_affinity) anti_affinity_.Remove(*p, index);
  }
  if (!info.unnamed) by_name_.erase(info.node->name());
  --live_nodes_;
  pod_count_ -= static_cast<int64_t>(info.pods.size());
  pods_with_anti_affinity_ -= info.pods_with_required_anti_affinity;
  pods_with_affinity_ -= info.pods_with_required_affinity;
  NodeInfo contents;
  contents.node = info.node;
  std::swap(contents.pods, info.pods);
  std::swap(contents.requested, info.requested);
  std::swap(contents.staying_requested, info.staying_requested);
  contents.pods_with_required_anti_affinity = info.pods_with_required_anti_affinity;
  contents.pods_with_required_affinity = info.pods_with_required_affinity;
  info.pods_with_required_anti_affinity = 0;
  info.pods_with_required_affinity = 0;
  info.removed = true;
  for (auto& t : topologies_) t->CountLive(index, -1);
  if (!layers_.empty()) {
    graveyard_.push_back(std::move(contents));
    Record({Op::kRemoveNode, index, nullptr, 0});
  }
  return {};
}

Result<NodeIndex> ClusterSnapshot::LiveNode(NodeIndex node, const model::Pod* pod,
                                            std::string_view what) const {
  if (node >= nodes_.size()) {
    return Fail(Error::Code::kNotFound, "cannot {} pod {}: no node with index {}", what, pod->Key(),
                node);
  }
  if (nodes_[node].removed) {
    return Fail(Error::Code::kNotFound, "cannot {} pod {}: node \"{}\" was removed", what,
                pod->Key(), nodes_[node].node->name());
  }
  return node;
}

Result<void> ClusterSnapshot::AddPod(const model::Pod* pod, std::string_view node_name) {
  TIDEPOOL_CHECK(pod != nullptr);
  NodeIndex index = FindNode(node_name);
  if (index == kNoNode) {
    return Fail(Error::Code::kNotFound, "cannot add pod {}: node \"{}\" is not in the snapshot",
                pod->Key(), node_name);
  }
  return AddPod(pod, index);
}

Result<void> ClusterSnapshot::AddPod(const model::Pod* pod, NodeIndex node) {
  TIDEPOOL_CHECK(pod != nullptr);
  TIDEPOOL_RETURN_IF_ERROR(LiveNode(node, pod, "add"));
  if (pod->IsTerminal()) {
    return InvalidArgument(
        "cannot add pod {} to node \"{}\": it is {} (terminal pods hold no "
        "resources and are not placed)",
        pod->Key(), nodes_[node].node->name(), PhaseName(pod->phase));
  }
  TIDEPOOL_CHECK_MSG(pod->requests.pods() > 0, "pod added without Finalize()");
  PlacePod(pod, node);
  Record({Op::kAddPod, node, pod, 0});
  if (dra_ != nullptr && !pod->resource_claims().empty()) dra_->Place(*pod, *nodes_[node].node);
  return {};
}

Result<void> ClusterSnapshot::SetAllocatable(NodeIndex node, const model::Resources& allocatable) {
  if (node >= nodes_.size() || nodes_[node].removed) {
    return Fail(Error::Code::kNotFound, "cannot resize node {}: no live node with that index",
                node);
  }
  if (!layers_.empty()) {
    old_allocatable_.push_back(nodes_[node].allocatable);
    Record(
        {Op::kSetAllocatable, node, nullptr, static_cast<uint32_t>(old_allocatable_.size() - 1)});
  }
  nodes_[node].allocatable = allocatable;
  return {};
}

Result<void> ClusterSnapshot::RemovePod(const model::Pod* pod, NodeIndex node) {
  TIDEPOOL_CHECK(pod != nullptr);
  TIDEPOOL_RETURN_IF_ERROR(LiveNode(node, pod, "remove"));
  const std::vector<const model::Pod*>& pods = nodes_[node].pods;
  size_t position = pods.size();
  for (size_t i = 0; i < pods.size(); ++i) {
    if (pods[i] == pod) {
      position = i;
      break;
    }
  }
  if (position == pods.size()) {
    for (size_t i = 0; i < pods.size(); ++i) {
      if (pods[i]->meta.name == pod->meta.name &&
          pods[i]->meta.namespace_ == pod->meta.namespace_) {
        position = i;
        break;
      }
    }
  }
  if (position == pods.size()) {
    return Fail(Error::Code::kNotFound, "cannot remove pod {}: it is not on node \"{}\"",
                pod->Key(), nodes_[node].node->name());
  }
  const model::Pod* placed = pods[position];
  UnplacePodAt(node, static_cast<uint32_t>(position));
  Record({Op::kRemovePod, node, placed, static_cast<uint32_t>(position)});
  if (dra_ != nullptr && !placed->resource_claims().empty()) dra_->Unplace(*placed);
  return {};
}

void ClusterSnapshot::PlacePod(const model::Pod* pod, NodeIndex node) {
  NodeInfo& info = nodes_[node];
  info.pods.push_back(pod);
  info.requested += pod->requests;
  if (keep_staying_ && StaysOnDrain(*pod)) info.staying_requested += pod->requests;
  ++pod_count_;
  for (auto& l : label_counts_) l->Change(*pod, node, +1);
  if (pod->has_required_anti_affinity) {
    ++info.pods_with_required_anti_affinity;
    ++pods_with_anti_affinity_;
    anti_affinity_.Add(*pod, node);
  }
  if (pod->has_required_affinity) {
    ++info.pods_with_required_affinity;
    ++pods_with_affinity_;
  }
}

void ClusterSnapshot::UnplacePodAt(NodeIndex node, uint32_t position) {
  NodeInfo& info = nodes_[node];
  TIDEPOOL_CHECK(position < info.pods.size());
  const model::Pod* pod = info.pods[position];
  info.pods[position] = info.pods.back();
  info.pods.pop_back();
  info.requested -= pod->requests;
  if (keep_staying_ && StaysOnDrain(*pod)) info.staying_requested -= pod->requests;
  --pod_count_;
  for (auto& l : label_counts_) l->Change(*pod, node, -1);
  if (pod->has_required_anti_affinity) {
    --info.pods_with_required_anti_affinity;
    --pods_with_anti_affinity_;
    anti_affinity_.Remove(*pod, node);
  }
  if (pod->has_required_affinity) {
    --info.pods_with_required_affinity;
    --pods_with_affinity_;
  }
}

void ClusterSnapshot::AttachDra(DraState* dra) {
  TIDEPOOL_CHECK_MSG(layers_.empty(), "AttachDra() inside a Fork()");
  dra_ = dra;
}

void ClusterSnapshot::KeepStayingSums() {
  TIDEPOOL_CHECK_MSG(pod_count_ == 0 && log_.empty(), "KeepStayingSums() on a snapshot with pods");
  keep_staying_ = true;
}

void ClusterSnapshot::Fork() {
  layers_.push_back(log_.size());
  if (dra_ != nullptr) dra_->Fork();
}

void ClusterSnapshot::Revert() {
  TIDEPOOL_CHECK_MSG(!layers_.empty(), "Revert() without Fork()");
  size_t mark = layers_.back();
  while (log_.size() > mark) {
    Undo(log_.back());
    log_.pop_back();
  }
  layers_.pop_back();
  if (dra_ != nullptr) dra_->Revert();
}

void ClusterSnapshot::Commit() {
  TIDEPOOL_CHECK_MSG(!layers_.empty(), "Commit() without Fork()");
  layers_.pop_back();
  if (dra_ != nullptr) dra_->Commit();
  if (layers_.empty()) {
    log_.clear();
    graveyard_.clear();
    old_allocatable_.clear();
  }
}

void ClusterSnapshot::Undo(const Change& c) {
  switch (c.op) {
    case Op::kAddNode: {
      TIDEPOOL_CHECK(c.node + 1 == nodes_.size());
      NodeInfo& info = nodes_.back();
      TIDEPOOL_CHECK(!info.removed && info.pods.empty());
      if (!info.unnamed) by_name_.erase(info.node->name());
      --live_nodes_;
      nodes_.pop_back();
      for (auto& t : topologies_) t->PopBack();
      for (auto& l : label_counts_) l->PopSlot();
      break;
    }
    case Op::kRemoveNode: {
      TIDEPOOL_CHECK(!graveyard_.empty());
      NodeInfo& info = nodes_[c.node];
      NodeInfo& contents = graveyard_.back();
      TIDEPOOL_CHECK(info.removed && contents.node == info.node);
      std::swap(info.pods, contents.pods);
      std::swap(info.requested, contents.requested);
      std::swap(info.staying_requested, contents.staying_requested);
      info.pods_with_required_anti_affinity = contents.pods_with_required_anti_affinity;
      info.pods_with_required_affinity = contents.pods_with_required_affinity;
      info.removed = false;
      for (auto& t : topologies_) t->CountLive(c.node, +1);
      graveyard_.pop_back();
      if (!info.unnamed) TIDEPOOL_CHECK(by_name_.try_emplace(info.node->name(), c.node));
      ++live_nodes_;
      pod_count_ += static_cast<int64_t>(info.pods.size());
      pods_with_anti_affinity_ += info.pods_with_required_anti_affinity;
      pods_with_affinity_ += info.pods_with_required_affinity;
      for (auto& l : label_counts_) l->Recount(c.node, info.pods);
      if (info.pods_with_required_anti_affinity > 0) {
        for (const model::Pod* p : info.pods)
          if (p->has_required_anti_affinity) anti_affinity_.Add(*p, c.node);
      }
      break;
    }
    case Op::kSetAllocatable: {
      TIDEPOOL_CHECK(c.position + 1 == old_allocatable_.size());
      nodes_[c.node].allocatable = std::move(old_allocatable_.back());
      old_allocatable_.pop_back();
      break;
    }
    case Op::kAddPod: {
      NodeInfo& info = nodes_[c.node];
      TIDEPOOL_CHECK(!info.pods.empty() && info.pods.back() == c.pod);
      UnplacePodAt(c.node, static_cast<uint32_t>(info.pods.size() - 1));
      break;
    }
    case Op::kRemovePod: {
      NodeInfo& info = nodes_[c.node];
      TIDEPOOL_CHECK(c.position <= info.pods.size());
      PlacePod(c.pod, c.node);
      std::swap(info.pods[c.position], info.pods.back());
      break;
    }
  }
}

NodeIndex ClusterSnapshot::FindNode(std::string_view name) const { return by_name_.find(name); }

}  // namespace tidepool::sched
