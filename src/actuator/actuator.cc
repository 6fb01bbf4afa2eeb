#include "actuator/actuator.h"

#include <fmt/format.h>

#include <unordered_map>

#include "base/kill_point.h"
#include "sched/cluster_model.h"

namespace tidepool::actuator {

using namespace autoscaler;

namespace {

// "namespace/name" -> {namespace, name}; no slash: {"", name}.
std::pair<std::string_view, std::string_view> SplitKey(std::string_view key) {
  auto slash = key.find('/');
  if (slash == std::string_view::npos) return {"", key};
  return {key.substr(0, slash), key.substr(slash + 1)};
}

}  // namespace

// One Carry call: what it borrows, and indexes of the view built when first needed.
class Actuator::Batch {
 public:
  Batch(Actuator& a, const Observation& view, Autoscaler& loop)
      : provider_(a.provider_),
        stopper_(a.stopper_),
        writer_(a.writer_),
        clock_(a.clock_),
        listener_(a.listener_),
        view_(view),
        loop_(loop) {}

  void operator()(const IncreasePool& a) {
    ReachKillPoint(KillPoint::kScaleUpDecided);
    auto r = provider_.IncreaseSize(a.pool, a.count, clock_.Now());
    if (r) ReachKillPoint(KillPoint::kScaleUpAcknowledged);
    Report(a, r);
    loop_.OnIncreaseResult(a.pool, a.count, r, clock_.Now());
  }
  void operator()(const DecreaseTarget& a) {
    auto r = provider_.DecreaseTargetSize(a.pool, a.count, clock_.Now());
    Report(a, r);
    loop_.OnDecreaseResult(a.pool, a.count, r, clock_.Now());
  }
  void operator()(const TaintNode& a) {
    auto r = writer_.AddTaint(
        a.node, {std::string(model::kToBeDeletedTaint), model::TaintTimestamp(clock_.Now()),
                 model::TaintEffect::kNoSchedule});
    if (r) ReachKillPoint(KillPoint::kNodeTainted);
    // The plan came from a view that may lag (a cut watch, a slow API server). With the taint
    // on, no new pod can land; now read the node's pods fresh and go on only if nothing is
    // there that the plan did not see. Otherwise take the taint off again and report the
    // failure, so the loop rolls the removal back.
    if (r) r = VerifyNodePods(a.node);
    Report(a, r);
    loop_.OnTaintResult(a.node, r, clock_.Now());
  }
  void operator()(const UntaintNode& a) {
    Report(a, writer_.RemoveTaint(a.node, std::string(model::kToBeDeletedTaint)));
  }
  void operator()(const MarkCandidate& a) {
    Report(a, writer_.AddTaint(a.node, {std::string(model::kDeletionCandidateTaint),
                                        model::TaintTimestamp(clock_.Now()),
                                        model::TaintEffect::kPreferNoSchedule}));
  }
  void operator()(const UnmarkCandidate& a) {
    Report(a, writer_.RemoveTaint(a.node, std::string(model::kDeletionCandidateTaint)));
  }
  void operator()(const EvictPods& a) {
    for (const std::string& pod : a.pods) {
      auto [ns, name] = SplitKey(pod);
      auto r = writer_.Evict(std::string(ns), std::string(name));
      Report(a, r, &pod);
      loop_.OnEvictResult(a.node, pod, r, clock_.Now());
    }
  }
  void operator()(const DeleteNode& a) {
    Result<void> r = Delete(a);
    Report(a, r);
    loop_.OnDeleteResult(a.node, r, clock_.Now());
  }
  void operator()(const DeleteStopped& a) {
    Report(a, stopper_ != nullptr ? stopper_->DeleteStopped(a.pool, a.count, clock_.Now())
                                  : NoStopper(a.pool));
  }
  void operator()(const Event& a) {
    EventSpec e;
    e.object_kind = std::string(EventObjectKind(a.object_kind));
    auto [ns, name] = SplitKey(a.object);
    e.ns = ns;
    e.name = name;
    e.uid = UidOf(a.object_kind, a.object);
    e.reason = std::string(EventReasonName(a.reason));
    e.message = a.message;
    e.warning = a.warning;
    Report(a, writer_.RecordEvent(e));
  }
  void operator()(const UpdateProvisioningRequest& a) {
    Report(a, writer_.SetProvisioningConditions(a.ns, a.name, a.conditions));
  }
  void operator()(const UpdateCapacityBuffer& a) {
    Report(a, writer_.SetCapacityBufferStatus(a.ns, a.name, a.status));
  }

 private:
  void Report(const Action& a, const Result<void>& r, const std::string* pod = nullptr) {
    if (listener_ != nullptr) listener_->Carried(a, pod, r);
  }

  void Warn(const Error& e) {
    if (listener_ != nullptr) listener_->SideFailure(e);
  }

  const model::Node* FindNode(const std::string& name) const {
    for (const model::Node* n : view_.nodes)
      if (n != nullptr && n->name() == name) return n;
    return nullptr;
  }

  // Machine first (it lowers the target), then the Node object. The view's node stays valid
  // after its machine is gone (the contract of Carry).
  Result<void> Delete(const DeleteNode& a) {
    const model::Node* node = FindNode(a.node);
    if (node == nullptr) return {};  // gone already
    if (a.method == RemovalMethod::kStop) {
      TIDEPOOL_RETURN_IF_ERROR(stopper_ != nullptr ? stopper_->StopNode(a.pool, *node, clock_.Now())
                                                   : NoStopper(a.pool));
    } else {
      TIDEPOOL_RETURN_IF_ERROR(provider_.DeleteNode(a.pool, *node, clock_.Now()));
    }
    ReachKillPoint(KillPoint::kMachineDeleted);
    auto gone = writer_.DeleteNode(node->name(), node->meta.uid);
    if (!gone) {
      // The machine is gone and the target lowered; the Node object lingers until the node
      // lifecycle controller removes it. Not a failed removal.
      Warn(gone.error().Wrap(fmt::format("node {}: machine deleted, Node object not", a.node)));
    }
    return {};
  }

  // Ok when the fresh read shows no pod on `node` that the view did not have.
  Result<void> VerifyNodePods(const std::string& node) {
    auto fresh = writer_.PodsOnNode(node);
    Result<void> verdict;
    if (!fresh) {
      verdict = std::unexpected(fresh.error().Wrap("node " + node + ": reading its pods"));
    } else {
      for (const std::string& pod : *fresh) {
        if (KnownOn(node, pod)) continue;
        verdict = Fail(Error::Code::kConflict,
                       "node {}: pod {} runs there but was not in the cache the plan was made "
                       "from; not removing the node on stale data",
                       node, pod);
        break;
      }
    }
    if (!verdict) {
      auto undo = writer_.RemoveTaint(node, std::string(model::kToBeDeletedTaint));
      if (!undo) Warn(undo.error().Wrap(fmt::format("node {}: removing the taint again", node)));
    }
    return verdict;
  }

  static bool IsKey(const model::Pod& p, std::string_view ns, std::string_view name) {
    return p.meta.name == name && p.meta.namespace_ == ns;
  }

  // Whether the view had pod `key` ("namespace/name") on `node`, as a pod that must leave.
  bool KnownOn(const std::string& node, const std::string& key) {
    if (!pods_on_built_) {
      pods_on_built_ = true;
      for (const model::Pod* p : view_.pods) {
        if (p->node_name.empty() || p->IsTerminal() || p->IsDaemonSetPod() || p->IsMirrorPod()) {
          continue;
        }
        pods_on_[p->node_name].push_back(p);
      }
    }
    auto it = pods_on_.find(node);
    if (it == pods_on_.end()) return false;
    auto [ns, name] = SplitKey(key);
    for (const model::Pod* p : it->second)
      if (IsKey(*p, ns, name)) return true;
    return false;
  }

  std::string UidOf(EventObject kind, const std::string& object) {
    if (kind == EventObject::kNode) {
      const model::Node* n = FindNode(object);
      return n != nullptr ? n->meta.uid : "";
    }
    if (kind == EventObject::kProvisioningRequest) {
      for (const model::ProvisioningRequest* r : view_.provisioning_requests)
        if (r->Key() == object) return r->meta.uid;
      return "";
    }
    if (kind == EventObject::kCapacityBuffer) {
      for (const model::CapacityBuffer* b : view_.capacity_buffers)
        if (b->Key() == object) return b->meta.uid;
      return "";
    }
    if (kind != EventObject::kPod) return "";
    auto [ns, name] = SplitKey(object);
    // The driver's model holds the view's pods (pending ones too, in the controller's), by key.
    if (view_.model != nullptr) {
      if (const model::Pod* p = view_.model->FindPod(ns, name)) return p->meta.uid;
    }
    if (!by_name_built_) {
      by_name_built_ = true;
      by_name_.reserve(view_.pods.size());
      for (const model::Pod* p : view_.pods) by_name_.emplace(p->meta.name, p);
    }
    auto [first, last] = by_name_.equal_range(name);
    for (auto it = first; it != last; ++it)
      if (IsKey(*it->second, ns, name)) return it->second->meta.uid;
    return "";
  }

  Result<void> NoStopper(const std::string& pool) const {
    return InvalidArgument(
        "pool {}: provider {} cannot stop machines (scaleDown.mode deallocate needs one that can)",
        pool, provider_.Name());
  }

  cloud::CloudProvider& provider_;
  cloud::MachineStopper* stopper_;
  ClusterWriter& writer_;
  const Clock& clock_;
  Listener* listener_;
  const Observation& view_;
  Autoscaler& loop_;
  // Indexes of the view (views into its objects), built when first needed.
  bool pods_on_built_ = false;
  std::unordered_map<std::string_view, std::vector<const model::Pod*>> pods_on_;
  bool by_name_built_ = false;
  std::unordered_multimap<std::string_view, const model::Pod*> by_name_;
};

size_t Actuator::Carry(std::span<const Action> actions, const Observation& view, Autoscaler& loop,
                       const Proceed& proceed) {
  if (actions.empty()) return 0;  // most Steps decide nothing
  Batch batch(*this, view, loop);
  size_t done = 0;
  for (const Action& a : actions) {
    if (proceed && !proceed(a)) break;
    std::visit(batch, a);
    ++done;
  }
  return done;
}

}  // namespace tidepool::actuator
