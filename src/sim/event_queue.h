// The simulator's clockwork: discrete events ordered by (time, sequence), and the record of
// changes the decision loop could observe (and the binding and stepping they call for).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <queue>
#include <string>
#include <vector>

#include "base/check.h"
#include "base/time.h"
#include "sched/cluster_model.h"

namespace tidepool::sim {

enum class EventKind {
  kSubmit,       // index: job
  kNodeBoot,     // index: instance
  kPodFinish,    // index: pod, gen: the pod's run
  kJobFinish,    // index: gang job, gen: the gang's run
  kSpotNotice,   // index: instance
  kSpotKill,     // index: instance
  kStockoutEnd,  // index: pool
  kAdmit,        // index: gang job held by KueueQueue, its request Provisioned
  kRequeue,      // index: gang job held by KueueQueue, its request Failed: a new one
};

struct SimEvent {
  Time at;
  uint64_t seq;
  EventKind kind;
  int index;
  uint64_t gen;
  bool operator>(const SimEvent& o) const { return at != o.at ? at > o.at : seq > o.seq; }
};

class EventQueue {
 public:
  void Push(Time at, EventKind kind, int index, uint64_t gen = 0) {
    queue_.push({at, seq_++, kind, index, gen});
  }
  bool Empty() const { return queue_.empty(); }
  Time NextAt() const { return queue_.top().at; }
  SimEvent Pop() {
    SimEvent e = queue_.top();
    queue_.pop();
    return e;
  }

 private:
  std::priority_queue<SimEvent, std::vector<SimEvent>, std::greater<SimEvent>> queue_;
  uint64_t seq_ = 0;
};

// What happened since the loop last looked. `version` is Observation::version: bumped by every
// change the loop could see (a node, a pod, a taint, a pool's target).
struct WorldChanges {
  uint64_t version = 1;
  bool bind_dirty = false;   // pods may be bound now (room freed, pods pending, a node joined)
  bool step_needed = false;  // the loop should step at once
  void Changed() { ++version; }
  // The joined nodes and the pods, as the binder and the loop see them: every change to a node
  // or a pod is applied here too, as a watch would deliver it (docs/architecture.md, "The
  // cluster model").
  sched::ClusterModel cluster;
  void SetNode(std::shared_ptr<const model::Node> node) {
    TIDEPOOL_CHECK(cluster.SetNode(std::move(node)).has_value());
  }
  void DeleteNode(const std::string& name) { TIDEPOOL_CHECK(cluster.DeleteNode(name).has_value()); }
  void SetPod(std::shared_ptr<const model::Pod> pod) {
    TIDEPOOL_CHECK(cluster.SetPod(std::move(pod)).has_value());
  }
  void DeletePod(const model::Pod& pod) {
    TIDEPOOL_CHECK(cluster.DeletePod(pod.meta.namespace_, pod.meta.name).has_value());
  }
};

}  // namespace tidepool::sim
