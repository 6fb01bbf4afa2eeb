#include "planner/scale_down_memo.h"

#include "planner/cluster.h"
#include "sched/cluster_model.h"

namespace tidepool::planner {
namespace scale_down_detail {
namespace {

bool HasTaint(const model::Node& node, std::string_view key) {
  for (const model::Taint& t : node.taints)
    if (t.key == key) return true;
  return false;
}

bool AnnotatedTrue(const model::Node& node, std::string_view key) {
  const std::string* v = node.meta.Annotation(key);
  return v != nullptr && *v == "true";
}

}  // namespace

NodeFacts NodeFacts::Of(const model::Node& node) {
  NodeFacts f;
  f.name = node.name();
  f.being_deleted = HasTaint(node, kToBeDeletedTaint);
  f.destination = node.ready && !node.unschedulable && !f.being_deleted;
  for (std::string_view key : {kCaScaleDownDisabledAnnotation, kScaleDownDisabledAnnotation}) {
    if (AnnotatedTrue(node, key)) {
      f.disabled_by = key;
      break;
    }
  }
  f.created = node.meta.creation_timestamp;
  const model::Resources& a = node.allocatable;
  f.cpu = a.cpu_milli();
  f.memory = a.memory();
  f.pods = a.pods();
  f.gpus = a.gpus();
  return f;
}

}  // namespace scale_down_detail

void ScaleDownMemo::Begin(const sched::ClusterModel& model, const model::AutoscalerConfig& config) {
  const bool same =
      model_id_ == model.id() && config_ == &config && generation_ == model.generation();
  if (!same || passes_ >= kFullPassEvery) {
    nodes_.clear();
    passes_ = 0;
  }
  model_ = &model;
  model_id_ = model.id();
  config_ = &config;
  generation_ = model.generation();
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
  n.pool = nullptr;
  n.own_read = false;
  n.facts.clear();
  n.node_facts = scale_down_detail::NodeFacts::Of(*node);
  n.utilization.reset();
  return &n;
}

}  // namespace tidepool::planner
