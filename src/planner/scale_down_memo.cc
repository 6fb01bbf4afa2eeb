#include "planner/scale_down_memo.h"

#include "sched/cluster_model.h"

namespace tidepool::planner {

void ScaleDownMemo::Begin(const sched::ClusterModel& model, const model::AutoscalerConfig& config) {
  const ModelKey key = ModelKey::Of(model, config);
  if (key != key_ || passes_ >= kFullPassEvery) {
    nodes_.clear();
    passes_ = 0;
  }
  model_ = &model;
  key_ = key;
  ++passes_;
  // One entry per slot the model has handed out, made now: a pass holds pointers to entries.
  nodes_.resize(model.snapshot().NodeSlots());
}

ScaleDownMemo::Node* ScaleDownMemo::Find(sched::NodeIndex i, const model::Node* node) {
  if (i >= nodes_.size()) return nullptr;
  Node& n = nodes_[i];
  if (n.stamp == 0 || n.node != node || n.stamp != model_->Stamp(i)) return nullptr;
  return &n;
}

ScaleDownMemo::Node* ScaleDownMemo::Keep(sched::NodeIndex i, const model::Node* node) {
  const uint64_t stamp = model_ != nullptr ? model_->Stamp(i) : 0;
  if (stamp == 0 || i >= nodes_.size()) return nullptr;
  Node& n = nodes_[i];
  n.stamp = stamp;
  n.node = node;
  n.own_read = false;
  n.facts.clear();
  n.node_facts = scale_down_detail::NodeFacts::Of(*node);
  n.utilization.reset();
  n.disruptions_ = {};
  return &n;
}

ScaleDownMemo::Node::Disruptions& ScaleDownMemo::Node::DisruptionsAt(Time at, uint64_t hints) {
  if (disruptions_.at != at || disruptions_.hints != hints) {
    disruptions_ = {};
    disruptions_.at = at;
    disruptions_.hints = hints;
  }
  return disruptions_;
}

}  // namespace tidepool::planner
