// ScaleDownMemo: what a scale-down pass on the driver's cluster model learned about each node
// that the next pass reuses while the node and its pods are unchanged (docs/architecture.md, "The
// cluster model"). A pass on the model reads every node object (NodeFacts) and, for the nodes
// that may go, their pods that move in namespace/name order with what the drain simulation reads
// of them (PodFacts); on a cluster where few nodes change between passes that is the same answer,
// pass after pass. (Each node's pool is kept apart, for both planners: SlotPools.)
//
// Only what depends on the node and its pods alone is kept, and what consolidation weighs of
// them (a training pod's work lost and expected remaining runtime) at one weigh minute under one
// version of the runtime hints: anything else that depends on the time (delayAfterAdd), on other
// nodes (where pods fit) or on other objects (PDBs) is computed again by every pass. The model's
// stamps (ClusterModel::Stamp) say which nodes changed. Every kFullPassEvery passes the memo
// forgets everything, so a pass reads every node afresh (a safety net); the model's debug mode
// (ClusterModel::SetVerify) compares each pass that used the memo with one that built its own
// snapshot.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "model/node.h"
#include "model/pod.h"
#include "planner/decision.h"
#include "planner/disruption.h"
#include "planner/model_key.h"
#include "planner/scale_down_placer.h"
#include "sched/snapshot.h"

namespace tidepool::sched {
class ClusterModel;
}

namespace tidepool::planner {

class ScaleDownMemo {
 public:
  static constexpr uint64_t kFullPassEvery = 64;

  // One node slot as a pass read it.
  struct Node {
    uint64_t stamp = 0;  // the model's stamp of the slot then; 0: nothing kept
    const model::Node* node = nullptr;
    // `facts` holds the node's pods that move, in namespace/name order, resolved.
    bool own_read = false;
    std::vector<scale_down_detail::PodFacts> facts;
    // The node object's facts, read when the slot was kept.
    scale_down_detail::NodeFacts node_facts;
    // Its utilization (the requests of its pods that move against its allocatable), once read.
    std::optional<NodeUtilization> utilization;

    // What consolidation weighed of its pods at one weigh time (WeighTime) under one version of
    // the runtime hints (RuntimeHints::version): a pure function of those, the node and its pods,
    // so it holds until one of them changes. `pods` by index into `facts` (unset: not weighed
    // yet); `horizon`: the longest expected remaining runtime of its pods that move.
    struct Disruptions {
      Time at{};
      uint64_t hints = 0;
      std::vector<std::optional<PodDisruption>> pods;
      std::optional<Duration> horizon;
    };
    // The record for weigh time `at` and hints version `hints`: this one, emptied first when it
    // was for another.
    Disruptions& DisruptionsAt(Time at, uint64_t hints);

   private:
    friend class ScaleDownMemo;  // Keep empties it
    Disruptions disruptions_;
  };

  // Starts a pass on `model` planned with `config`. Forgets everything when either is not the
  // last pass's, when the model was compacted (its slots were handed out again), and every
  // kFullPassEvery passes.
  void Begin(const sched::ClusterModel& model, const model::AutoscalerConfig& config);

  // What the last passes kept about slot `i`, if it still holds `node` with the pods it held (a
  // pass adds what it reads later, such as the pods of a node that becomes a candidate).
  Node* Find(sched::NodeIndex i, const model::Node* node);
  // Where a pass keeps what it read about slot `i` holding `node`: an entry emptied, stamped
  // with the model's stamp of the slot and holding the node's facts, or nullptr when the model had
  // not handed the slot out at Begin (a node the pass added in its layer). Entries stay where they
  // are until the next Begin.
  Node* Keep(sched::NodeIndex i, const model::Node* node);

  // Passes since the memo last forgot everything (1 during the first).
  uint64_t passes() const { return passes_; }

 private:
  const sched::ClusterModel* model_ = nullptr;  // Begin's, for the stamps
  ModelKey key_;
  uint64_t passes_ = 0;
  std::vector<Node> nodes_;  // by slot
};

}  // namespace tidepool::planner
