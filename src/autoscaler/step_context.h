// One Step's view of its observation: nodes by name, their pools and classes, the pending pods,
// and the actions decided so far. Built by the loop at the start of a Step, read by every tracker.
#pragma once

#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "autoscaler/action.h"
#include "autoscaler/observation.h"
#include "base/name_map.h"
#include "base/time.h"
#include "model/node.h"
#include "model/pod.h"
#include "model/pool.h"
#include "model/resources.h"
#include "planner/cluster.h"
#include "planner/decision.h"

namespace tidepool::autoscaler {

// What a managed node counts as in this Step.
enum class NodeClass {
  kReady,     // capacity
  kStarting,  // not usable yet, within the provision timeout: counted as upcoming
  kUnusable,  // not usable past the provision timeout (or no longer ready): no capacity
  kGone,      // the loop is deleting it or deleted it: counts for nothing
};

// Warm capacity of one pool in this Step (WarmPlanner::Update).
struct WarmPoolStep {
  model::Resources whole_request;          // a whole-node placeholder: the template less DaemonSets
  int spare = 0;                           // whole-node placeholders for warm.spareNodes
  int prewarm = 0;                         // whole-node placeholders held for a predicted burst
  int approved = 0;                        // of those, new pre-warm nodes approved in this Step
  std::vector<model::Resources> headroom;  // headroom placeholders, each fits one node
  std::string headroom_words;              // "nvidia.com/gpu 4"
  std::string prewarm_reason;              // "warm: predicted burst ..." when prewarm > 0
};

// Nodes of warm pools: requests of their non-terminal pods, and whether any must leave.
struct NodeLoad {
  model::Resources requested;
  bool busy = false;
};

struct StepContext {
  StepContext(const Observation& o, Time t) : obs(o), now(t) {}

  const model::Node* Find(std::string_view name) const {
    auto it = nodes.find(name);
    return it == nodes.end() ? nullptr : it->second;
  }
  const std::vector<const model::Pod*>& PodsOn(std::string_view node) const {
    static const std::vector<const model::Pod*> kNone;
    auto it = pods_on.find(node);
    return it == pods_on.end() ? kNone : it->second;
  }
  NodeClass ClassOf(std::string_view node) const { return node_class.at(node); }
  // A copy of `node` the loop may change for the planner's eyes; stable address.
  model::Node& Copy(const model::Node& node) { return copies.emplace_back(node); }

  const Observation& obs;
  const Time now;
  std::vector<Action> actions;
  planner::PlannerInput base;           // config, pods, PDBs, DaemonSets, now, provider mapping
  NameMap<const model::Node*> nodes;    // by name, first of duplicates
  NameMap<const model::Pool*> pool_of;  // managed nodes only
  NameMap<NodeClass> node_class;        // managed nodes only
  // Managed nodes with the ToBeDeleted taint, in name order (most Steps: none).
  std::vector<std::string_view> tainted;
  // The Step's nodes are the model's live nodes (planner::InModelOrder): the model's
  // NamesVersion() then says whether their names changed since an earlier Step.
  bool nodes_are_model = false;
  // Pods on the nodes the loop is removing or finds tainted ToBeDeleted.
  std::map<std::string_view, std::vector<const model::Pod*>> pods_on;
  std::vector<const model::Pod*> pending;
  std::unordered_set<std::string> pending_keys;
  std::deque<model::Node> copies;
  std::optional<Time> next_starting_deadline;

  // Warm capacity, per pool with pools[].warm.
  std::map<std::string, WarmPoolStep, std::less<>> warm;
  std::deque<model::Pod> warm_pods;  // the placeholders (stable addresses)
  std::vector<const model::Pod*> placeholders;
  std::map<std::string_view, NodeLoad> loads;

  // ProvisioningRequests (ProvisioningTracker): the pods they stand for in this Step (stable
  // addresses; in base.pods), the keys of those planned as pending (they get no pod Events) with
  // the key of the request each stands for, and the scale-up plan of this Step, when one was made.
  std::deque<model::Pod> provisioning_pods;
  std::map<std::string, std::string, std::less<>> provisioning_keys;
  std::optional<planner::ScaleUpPlan> plan;

  // CapacityBuffers (BufferTracker): the pending copies of each buffer's pod in this Step (stable
  // addresses; in base.pods), by key, with the key of the buffer each stands for.
  std::deque<model::Pod> buffer_pods;
  std::map<std::string, std::string, std::less<>> buffer_keys;
};

// Node taints the loop reads.
bool HasTaint(const model::Node& node, std::string_view key);
// Taints a node carries while it is still starting, whatever its Ready condition says.
bool HasStartupTaint(const model::Node& node);
// A pod that must leave before its node goes: not finished, not a DaemonSet or mirror pod.
bool MustLeave(const model::Pod& pod);

}  // namespace tidepool::autoscaler
