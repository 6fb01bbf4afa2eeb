// ModelFeed: keeps the controller's sched::ClusterModel current from its informers' changes
// (docs/architecture.md, "The cluster model").
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "base/shared_list.h"
#include "model/node.h"
#include "model/pod.h"
#include "sched/cluster_model.h"

namespace tidepool::controller {

// The informers only mark a key as changed, inside their cache lock (InformerBase::SetMarker);
// Sync, on the thread that runs passes, applies each marked key as the pass's view has it: set
// when the view holds the object, deleted when not. A relist reports what it changed as ordinary
// changes, so a watch cut or a 410 needs nothing of its own here.
//
// Since a change is marked before any view can hold it, every change in the view was marked by
// the time Sync runs: the model then holds exactly the view's nodes and pods, no older and no
// newer. A key whose cache moved on after the view was taken stays marked for the next Sync.
//
// A delta the model refuses (a malformed object, which decoding should never let through) keeps
// its key marked and makes Sync answer null, so the passes build their own snapshot from the
// view instead of planning on a model that misses an object; the key is tried again at every
// Sync, and the first one that applies it hands the model out again.
class ModelFeed {
 public:
  using PodLookup = std::function<std::shared_ptr<const model::Pod>(const std::string& key)>;
  using NodeLookup = std::function<std::shared_ptr<const model::Node>(const std::string& name)>;
  // What a pass sees, each list in key order ("namespace/name" for pods, the name for nodes).
  struct View {
    const SharedList<model::Pod>& pods;
    const SharedList<model::Node>& nodes;
  };

  // The lookups read the caches now: a key whose object there is not the view's stays marked.
  ModelFeed(PodLookup pods, NodeLookup nodes);

  // Thread-safe. A pod's key is "namespace/name"; a node's is its name.
  void PodChanged(const std::string& key);
  void NodeChanged(const std::string& name);

  // Applies every change marked so far as `view` has it; `view` must be read from the caches
  // after the changes it holds were marked. Returns the model, or null while a delta is refused.
  // Only from the pass thread, and never while a pass holds a layer of the model open.
  sched::ClusterModel* Sync(View view);

  struct Stats {
    uint64_t applied = 0;  // deltas the model took
    uint64_t refused = 0;  // deltas it refused (each try counts)
  };
  Stats stats() const { return stats_; }
  // For tests and the debug mode: the model as the last Sync left it.
  sched::ClusterModel& model() { return model_; }

 private:
  // Applies one key as the view has it; false when the model refused it. `again` is set when
  // the cache has moved past the view.
  bool ApplyNode(const std::string& name, View view, bool& again);
  bool ApplyPod(const std::string& key, View view, bool& again);
  // Counts the outcome and warns once per key that stays refused.
  bool Applied(const Result<void>& done, std::string_view kind, const std::string& key);

  PodLookup pods_;
  NodeLookup nodes_;
  std::mutex mu_;
  std::set<std::string> changed_pods_;   // guarded by mu_
  std::set<std::string> changed_nodes_;  // guarded by mu_
  // The rest belongs to the pass thread.
  sched::ClusterModel model_;
  Stats stats_;
  // Keys refused at their last try (pod keys hold a slash, node names never do).
  std::set<std::string> refused_;
};

}  // namespace tidepool::controller
