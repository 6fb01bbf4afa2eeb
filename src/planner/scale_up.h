// ScaleUpPlanner: which pools grow by how many nodes for the pending pods, and for every pod
// no pool can help, the reason per pool. Pure and deterministic: no I/O, no clock reads.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "planner/cluster.h"
#include "planner/decision.h"

namespace tidepool::planner {

// What `tidepool explain POD` shows for one pending pod.
struct PodExplanation {
  std::string pod;
  bool found = false;
  bool pending = false;            // false: bound, terminal, gated, DaemonSet or expendable
  std::string not_pending_reason;  // why it is not considered, when !pending
  std::string fits_node;           // an existing or upcoming node it would fit on, if any
  std::string scale_up_pool;       // the pool the plan grows for it, if any
  // Per pool: "fits the template" or the reason it does not, with what would unblock it.
  std::map<std::string, std::string> pools;
};

// Knobs of a scale-up pass. The defaults are tidepool's policy; the simulator's comparison
// policies (e.g. the Cluster Autoscaler-like one) turn some off.
struct ScaleUpOptions {
  // Gangs (GangOf) are planned all or nothing. Off: each member is planned as a single pod, so a
  // pass may add nodes for part of a gang (what the Cluster Autoscaler does).
  bool gang_aware = true;
  // Pools that differ only in shape and price form a family whose new nodes stay flexible
  // (scale_up_pass.h, Family). Off: every pool is packed on its own, as before families.
  bool flexible_nodes = true;
  // Packing resumes each placement where the pod's group last failed (PackCursor), and packing
  // and the search of the registered and upcoming nodes pass over blocks of nodes without room for
  // the pod (RoomIndex). Off: every placement checks every node from the first (the search, every
  // node from its group's last), which must give the same plan (for tests).
  bool placement_cursors = true;
  // After the rounds, a new node whose pods all fit the other new nodes is dropped
  // (scale_up_compact.cc). Off: the rounds' nodes as they were opened (for tests and benchmarks).
  bool compact_new_nodes = true;
  // With the priority expander first, the candidates of a lower priority than options that place
  // pods are not estimated: none of them could win (PackCandidates). On: every candidate of a
  // batch is estimated, which must give the same plan (for tests).
  bool estimate_outranked = false;
  // Fill ScaleUpPlan::new_nodes (a key per planned pod again: 4 ms at 51,000 pods).
  bool list_new_nodes = false;
};

class ScaleUpPlanner {
 public:
  ScaleUpPlan Plan(const PlannerInput& input, const ScaleUpOptions& options = {}) const;
  PodExplanation Explain(const PlannerInput& input, std::string_view pod_key) const;
};

}  // namespace tidepool::planner
