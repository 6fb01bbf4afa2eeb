// The scale-up pass behind ScaleUpPlanner, shared by the files that implement it: the order of
// work (scale_up.cc), equivalence keys, the round loop, gangs, warm placeholders and reasons.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "planner/constraint_lists.h"
#include "planner/equivalence.h"
#include "planner/expander.h"
#include "planner/model_fork.h"
#include "planner/scale_up.h"
#include "sched/dra/dra_state.h"
#include "sched/fit.h"
#include "sched/snapshot.h"

namespace tidepool::planner::scale_up_detail {

using model::Node;
using model::Pod;
using model::Pool;
using model::Resources;
using sched::ClusterSnapshot;
using sched::FitChecker;
using sched::NodeIndex;

// Per pool state for one pass.
struct PoolState {
  const Pool* pool = nullptr;
  int current = 0;  // registered nodes plus upcoming ones
  int added = 0;    // committed in this pass
  std::optional<Time> backoff_until;
  std::vector<const Pod*> ds_pods;
  Resources ds_requests;
  Resources ds_use;  // ds_requests with the pods' slots: what DaemonSetUse says

  // Sets ds_pods, and from them ds_requests and ds_use.
  void SetDaemonSetPods(std::vector<const Pod*> pods) {
    ds_pods = std::move(pods);
    ds_requests = {};
    for (const Pod* d : ds_pods) ds_requests += d->requests;
    ds_use = ds_requests;
    ds_use.Set(model::kPods, static_cast<int64_t>(ds_pods.size()));
  }
  // What the DaemonSet pods take on a new node of the pool, pod slots included.
  const Resources& DaemonSetUse() const { return ds_use; }

  // "pool P in backoff until T"; only while backoff_until is set.
  PoolReason BackoffReason() const;
};

// Pools that every pod of the pass sees alike except for their shape and price: equal labels
// (but the instance type, pool name and agent pool labels no pod refers to), taints, DaemonSets,
// priority and capacity type. A new node of a family is flexible, as Karpenter's node claims
// are: it starts as large as the largest shape, keeps the shapes that still hold its pods, and
// gets the expander's choice among them when it is closed. A pool alone forms a family of one.
struct Family {
  std::vector<size_t> members;  // pool indexes, by name
  std::string name;             // the first member's; its new nodes are "new-<name>-<k>"
  // Node objects of the family's new nodes, [k] is "new-<name>-<k>". Those below `used` are in
  // the snapshot (committed, or removed by a Close); the others are made the current largest
  // shape before an estimate adds them, unless they are that already: `from` is the
  // `largest_version` each was copied from (0: none), so an estimate's nodes added again by the
  // winner's Replay, or by the next round's estimate, are not copied again.
  struct MadeUp {
    Node node;
    uint32_t from = 0;
  };
  int used = 0;
  std::deque<MadeUp> new_nodes;
  Node largest;  // a member's template with the largest allocatable of the eligible shapes
  // The eligible shapes `largest` was built from, and its version (raised when it is rebuilt).
  std::vector<size_t> largest_shapes;
  uint32_t largest_version = 0;
  size_t twins = SIZE_MAX;  // its group in Pass::twin_groups_, when it has zone twins
};

// A family an estimate may open nodes in, with its eligible shapes this round (the candidate's
// own family, or one of its zone twins: ScaleUpConfig::balance_zones).
struct Twin {
  Family* family = nullptr;
  std::vector<size_t> shapes;
  int opened = 0;  // Node objects of the family the estimate used
};

// A pod the plan names in ScaleUp::pods and NewNode::pods: not a gang member that is not created
// yet (a nameless copy) nor a warm placeholder.
inline bool ListedInPlan(const Pod& pod) {
  return !pod.meta.name.empty() && pod.meta.Annotation(kWarmPoolAnnotation) == nullptr;
}

// Every amount of `need` fits in `room`.
inline bool Within(const Resources& need, const Resources& room) {
  bool ok = true;
  need.ForEach([&](model::ResourceId id, int64_t v) { ok = ok && v <= room.Get(id); });
  return ok;
}

// One new node of an estimate and the shapes (pool indexes) that still hold what it carries.
struct FlexNode {
  NodeIndex index = sched::kNoNode;
  uint32_t twin = 0;  // its family, in Estimate::twins
  std::vector<size_t> shapes;
  size_t claim = SIZE_MAX;  // the cheapest shape in `shapes` with room for one more node
  double price = 0;         // its price
  Resources room;           // what it has left
  size_t pool = SIZE_MAX;   // the shape chosen when the estimate is closed

  bool HasRoomFor(const Pod& pod) const { return Within(pod.requests, room); }
};

// The cpu and memory room of a run of nodes (an estimate's new nodes, FlexNode::room, or the
// snapshot's nodes, allocatable less requested), with their maxima per block of nodes, so a loop
// that looks for a node with room passes over a block where no node has it instead of checking
// each. Only a filter: the full check (FlexNode::HasRoomFor, FitChecker::Fits) still decides at
// the nodes it stops at, and it rejects every node this passes over.
class RoomIndex {
 public:
  struct Room {
    int64_t cpu;
    int64_t memory;
  };
  // Node `n` (at most one past the last) has this room now.
  void Set(size_t n, Room room);
  void Set(size_t n, const Resources& room) { Set(n, Room{room.cpu_milli(), room.memory()}); }
  // A node after the last: Set(size(), room) without a rescan of its block.
  void Append(Room room);
  // The first node from `n` on whose cpu and memory room hold `need`'s, or size().
  size_t Next(size_t n, const Resources& need) const {
    return Next(n, Room{need.cpu_milli(), need.memory()});
  }
  // The same for amounts that may be negative (held by any room): a positive amount is at most
  // the room.
  size_t Next(size_t n, Room need) const { return Next(n, need, size()); }
  // The first such node in [n, end), or `end` (at most size()).
  size_t Next(size_t n, Room need, size_t end) const;
  size_t size() const { return room_.size(); }
  Room At(size_t n) const { return room_[n]; }

 private:
  static constexpr size_t kBlock = 32;
  // What both full checks ask of cpu and memory: a positive request is at most the room.
  static bool Holds(const Room& need, const Room& r) {
    return (need.cpu <= 0 || need.cpu <= r.cpu) && (need.memory <= 0 || need.memory <= r.memory);
  }

  std::vector<Room> room_;       // per node
  std::vector<Room> block_max_;  // per block of kBlock nodes, each amount's maximum
};

// Node `i`'s room in the snapshot now (a removed node has none).
RoomIndex::Room SnapshotRoom(const ClusterSnapshot& snap, NodeIndex i);

// The cheapest shape (pool index) that holds a pod on a node of its own, and its price.
struct Solo {
  size_t shape = SIZE_MAX;
  double price = 0;
};

// The outcome of bin-packing some pods onto new nodes of one family and its zone twins.
struct Estimate {
  std::vector<Twin> twins;  // the candidate's family first
  std::vector<const Pod*> pods;
  std::vector<uint32_t> pod_node;  // per pod, its FlexNode in `new_nodes`
  std::vector<FlexNode> new_nodes;
  RoomIndex rooms;           // of new_nodes, while packing
  std::vector<int> claimed;  // per pool, the nodes whose claim it is
  Resources requested;       // of the placed pods plus DaemonSets on the new nodes
  Resources allocatable;
  double cost_per_hour = 0;
  // Spread pods placed on nodes outside the estimate (registered, upcoming or added by an
  // earlier round), which take them once the estimate's nodes raise the global minimum; not in
  // `pods`. Node slots below `first_slot` are outside the estimate (Pass::RankEnd gives their
  // walk's end).
  std::vector<std::pair<const Pod*, NodeIndex>> outside;
  std::vector<size_t> outside_at;  // per `outside` entry, the size of `pods` when it was placed
  NodeIndex first_slot = 0;
  // The room of the nodes below `first_slot`, by walk rank (Pass::SlotAt), made when a pod first
  // looks there (while packing: only the pods placed outside change it).
  std::optional<RoomIndex> outside_rooms;
  // Times a node's claim left a shape at its pool's max (TakeOn), letting other nodes take that
  // shape again: placements that failed before may pass now (PackCursor).
  uint64_t released = 0;
  // The node after the one first fit grew last, where the next first fit starts (Pass::FirstFit).
  size_t grow_next = 0;

  Family& family() const { return *twins.front().family; }
  // Node objects of the families this estimate used (new_nodes plus dropped ones).
  int Opened() const {
    int n = 0;
    for (const Twin& t : twins) n += t.opened;
    return n;
  }
};

// Where Pass::Pack's placement loops resume for one equivalence group, so a pod does not check
// again the nodes its group's earlier members found closed to it. Every node before a cursor
// failed the group's pod when it was last checked, and nothing since could open it: adding pods
// and nodes only closes nodes to a pod, but for two changes, which reset the cursors. A spread
// constraint's global minimum rising (FitChecker::SpreadLoosened) opens nodes in the emptier
// domains; a claim given back to a shape at its max (Estimate::released) lets nodes grow into it.
// A node that grows (a pod placed on it by first fit) may have room again in its new shape.
struct PackCursor {
  size_t room = 0;        // best fit: the first new node not known to lack room or fail the pod
  size_t fit = 0;         // first fit: the first new node not known to fail the pod or its growth
  size_t outside = 0;     // the walk rank of the first node outside the estimate not known to
                          // fail the pod
  uint64_t loosened = 0;  // FitChecker::SpreadLoosened() when the cursors were last checked
  uint64_t released = 0;  // Estimate::released likewise
  // First fit resumes where it last grew a node (Estimate::grow_next), so the nodes from there to
  // the end may have failed the pod while those before it were not checked: [failed_from,
  // failed_to) is such a run, which it passes over.
  size_t failed_from = 0, failed_to = 0;
};

// The gangs among the pending pods, and the pods in none.
struct Gangs {
  std::map<std::string, std::vector<const Pod*>> pending;  // gang -> its pending members
  std::map<std::string, int> seen;                         // gang -> members bound or pending
  std::vector<std::string> order;                          // first-seen order
  std::vector<const Pod*> singles;
};

// What a gang's tentative growth changed, to undo when it does not fit whole.
struct Accounting {
  std::vector<int> added;        // per pool
  std::vector<int> family_used;  // per family
  int cluster_nodes = 0;
  LimitedCapacity cluster_capacity;
  size_t pass_nodes = 0;
};

// Stable-sorts `pods` by key(pod), computed once per pod, ordered by `less` on the keys.
template <typename KeyFn, typename Less>
void SortPods(std::vector<const Pod*>& pods, KeyFn key, Less less) {
  using Key = decltype(key(pods.front()));
  std::vector<std::pair<Key, const Pod*>> items;
  items.reserve(pods.size());
  for (const Pod* p : pods) items.emplace_back(key(p), p);
  std::stable_sort(items.begin(), items.end(),
                   [&](const auto& a, const auto& b) { return less(a.first, b.first); });
  for (size_t i = 0; i < items.size(); ++i) pods[i] = items[i].second;
}

// A pending pod's required affinity term or DoNotSchedule spread constraint: the pods its
// selector matches keep their domain of `key` (scale_up_compact.cc).
struct Anchor {
  const model::LabelSelector* selector = nullptr;
  std::string_view key;
  bool spread = false;  // a spread constraint's selector, not an affinity term's
};

// Where a pod may move in a compaction (Pass::PinOf): to a node in the same domain of each of
// `keys`, holding no pod any of `alone` selects.
struct Pin {
  std::vector<std::string_view> keys;
  std::vector<const model::LabelSelector*> alone;
};

// The state of one compaction of the pass's new nodes (scale_up_compact.cc), by pass node
// position.
struct Compaction {
  std::unordered_set<const Pod*> daemon_set_pods;
  std::vector<Anchor> anchors;  // Pass::AnchorSelectors
  RoomIndex rooms;
  // Not a destination: dropped, or holding a gang's pods.
  std::vector<bool> closed;
  std::unordered_set<uint32_t> stuck;  // groups a pod of which found no node
  // Pass::PinOf of the groups with inter-pod rules.
  std::unordered_map<uint32_t, std::optional<Pin>> pinned_groups;
  std::vector<std::pair<const Pod*, size_t>> moves;  // the last MoveOff's (pod, position)
  // Per pool, the pods listed under it as the drops have left them (ScaleUp::pods until Relist).
  std::vector<size_t> listed;
  // Pods moved to another pool's node: the pool that lists them, and the one that will.
  std::unordered_map<const Pod*, std::pair<size_t, size_t>> relisted;
  // The cpu and memory room of the open nodes, summed: SumFree once, then kept by SetRoom and
  // Close.
  int64_t free_cpu = 0, free_memory = 0;

  void SumFree() {
    free_cpu = free_memory = 0;
    for (size_t k = 0; k < rooms.size(); ++k)
      if (!closed[k]) AddFree(rooms.At(k), +1);
  }
  void SetRoom(size_t k, RoomIndex::Room room) {
    if (!closed[k]) {
      AddFree(rooms.At(k), -1);
      AddFree(room, +1);
    }
    rooms.Set(k, room);
  }
  void Close(size_t k) {
    SetRoom(k, RoomIndex::Room{INT64_MIN, INT64_MIN});
    closed[k] = true;
  }

 private:
  void AddFree(RoomIndex::Room room, int sign) {
    free_cpu += sign * std::max<int64_t>(0, room.cpu);
    free_memory += sign * std::max<int64_t>(0, room.memory);
  }
};

class Pass {
 public:
  // `explain_pod`: the one pod whose placement Explain wants to know; others are not tracked.
  Pass(const PlannerInput& in, std::string explain_pod = "", ScaleUpOptions options = {})
      : in_(in),
        cfg_(*in.config),
        snap_(ChooseSnapshot()),
        explain_pod_(std::move(explain_pod)),
        options_(options) {}
  ~Pass();
  Pass(const Pass&) = delete;
  Pass& operator=(const Pass&) = delete;

  ScaleUpPlan Run();

  // For Explain: after Run().
  const std::map<std::string, PoolReason>* ReasonsFor(const std::string& pod) {
    for (auto& [p, notes] : family_note_) {
      if (p->Key() == pod) {
        FlushFamilyNotes(*p);
        break;
      }
    }
    auto it = reasons_.find(pod);
    return it == reasons_.end() ? nullptr : &it->second;
  }
  std::string FitsNodeOf(const std::string& pod) const {
    auto it = fits_node_.find(pod);
    return it == fits_node_.end() ? "" : it->second;
  }
  std::string PoolFor(const std::string& pod) const {
    auto it = pool_for_.find(pod);
    return it == pool_for_.end() ? "" : it->second;
  }

 private:
  // A family that may grow this round, with the remaining pods it or a zone twin fits.
  struct Candidate {
    size_t family;
    std::vector<size_t> shapes;  // EligibleShapes of the family this round
    std::vector<const Pod*> pods;
    std::vector<Twin> twins;  // its zone twins whose shapes match this round
  };

  // The input's cluster model when it serves (it knows every registered node, and neither the
  // input nor a pool template has devices, which it does not model), else own_snap_.
  ClusterSnapshot& ChooseSnapshot();
  bool OnModel() const { return &snap_ != &own_snap_; }
  // The snapshot (scale_up.cc): registered nodes and their pods, then one template node per
  // upcoming node with its pool's DaemonSet pods.
  void BuildSnapshot();
  // On the model, inside a layer the pass reverts when it ends: the registered nodes as the input
  // sees them (its object, with the pods the model holds on it), in input order; the model's
  // other nodes removed.
  void UseModel();
  // Counts a registered node (of `pool`, nullptr if unmanaged) in the cluster and its pool.
  void CountRegistered(const Node& node, const Pool* pool,
                       std::unordered_map<const Pool*, PoolState*>& state_of);
  // Every walk over the nodes goes by rank: the registered and upcoming nodes in input order,
  // then the nodes the pass adds in the order it adds them. With a built snapshot a node's rank
  // is its slot; on the model the registered ones sit wherever the model keeps them.
  size_t Ranks() const { return order_.size() + (snap_.NodeSlots() - base_slots_); }
  NodeIndex SlotAt(size_t rank) const {
    return rank < order_.size() ? order_[rank]
                                : static_cast<NodeIndex>(base_slots_ + (rank - order_.size()));
  }
  // The rank where the nodes from slot `first_new` (one this pass added, or the end) begin.
  size_t RankEnd(NodeIndex first_new) const { return order_.size() + (first_new - base_slots_); }
  // The room of the nodes of ranks below `end`.
  RoomIndex RoomsUpTo(size_t end) const;
  // Creates dra_ when devices matter and gives every pool template its devices.
  void InitDra();
  // A node the pool will create: the pool template's devices (when there is a DraState).
  void GiveTemplateDevices(const Node* node, const Pool& pool) {
    if (dra_) dra_->AddTemplateNode(node, &pool.device_slices);
  }
  void InitPools();
  void AddRegisteredNodes();
  void AddUpcomingNodes();
  // Pending pods, highest priority first, then oldest, then by name.
  std::vector<const Pod*> PendingByPriority() const;
  // Steps 1 and 2: singles that fit existing or upcoming capacity go there, and gangs take room
  // all or nothing, the least flexible first within a priority: a gang goes before the singles
  // that fit more pool templates than its least flexible member does. Returns the singles left.
  std::vector<const Pod*> PlaceGangsAndSingles(Gangs& gangs, ScaleUpPlan& plan,
                                               std::map<std::string, ScaleUp>& ups);
  // PlaceSinglesOnExisting's bound on the registered and upcoming nodes' room over one
  // PlaceGangsAndSingles: taken when first needed and again when a pod it let through fits
  // nowhere after pods were placed. Gangs placed between the calls only take room there (a revert
  // gives it back), so a bound taken before them still lets every pod that fits through.
  struct ExistingRoom {
    std::optional<sched::RoomBound> bound;
    bool placed_since = false;  // pods were placed since `bound` was taken
    // The room of the registered and upcoming nodes by rank, made when a search first goes past
    // its first tries. Those nodes only take pods while singles and gangs are placed (a gang that
    // does not fit is reverted to what it found), so it stays at least their room.
    std::optional<RoomIndex> rooms;
  };
  // The singles [first, last) that fit a registered or upcoming node go there (never on a node
  // the pass added for a gang: those are not capacity that exists); the others join `need`.
  void PlaceSinglesOnExisting(std::vector<const Pod*>::const_iterator first,
                              std::vector<const Pod*>::const_iterator last, ExistingRoom& room,
                              ScaleUpPlan& plan, std::vector<const Pod*>& need);
  // The room of the registered and upcoming nodes, as a bound.
  sched::RoomBound RoomOfExisting() const;
  // Where a pod stands in the order pods take room in: priority descending, then the number of
  // pool templates its group fits (TemplatesFitting), fewest first.
  using Flexibility = std::pair<int64_t, int>;
  Flexibility FlexibilityOf(const Pod* pod);
  // Within a priority, the least flexible pods first (stable).
  void SortByFlexibility(std::vector<const Pod*>& singles);
  // How many pools' templates a pod of `group` fits: FitsTemplate over every pool, without asking
  // each pool when the pod has no nodeName and no claims (PassingByRoomClass).
  int TemplatesFitting(uint32_t group, const Pod& pod);
  // Per room class, how many of its pools' templates pass the node constraints of the pod's set.
  const std::vector<int>& PassingByRoomClass(uint32_t group, const Pod& pod);
  void MakeRoomClasses();  // room_classes_.of and .first
  // Step 3: the singles that need new nodes, round by round; the rest get their reasons.
  void PlanSingles(std::vector<const Pod*>& need, ScaleUpPlan& plan,
                   std::map<std::string, ScaleUp>& ups);
  static void Finish(ScaleUpPlan& plan, std::map<std::string, ScaleUp>& ups);
  // plan.new_nodes from the nodes the pass committed, as the snapshot holds them at the end.
  void ListNewNodes(ScaleUpPlan& plan) const;
  std::unordered_set<const Pod*> DaemonSetPods() const;

  // New nodes the others can do without (scale_up_compact.cc), after the rounds.
  void CompactNewNodes(const std::vector<const Pod*>& pending, const Gangs& gangs,
                       std::map<std::string, ScaleUp>& ups);
  Compaction StartCompaction(const std::vector<const Pod*>& pending, const Gangs& gangs,
                             const std::map<std::string, ScaleUp>& ups);
  // The pending pods' affinity and DoNotSchedule spread selectors with their keys, one pod per
  // equivalence group asked.
  std::vector<Anchor> AnchorSelectors(const std::vector<const Pod*>& pending);
  // Drops pass node `j` when its pods all move to other pass nodes; false (nothing changed)
  // otherwise.
  bool TryDrop(size_t j, Compaction& c, std::map<std::string, ScaleUp>& ups);
  // The pods of pass node `j` that would move, largest first (SortForPacking), or nothing when one
  // of them may not move (a warm placeholder, a pod with claims).
  std::optional<std::vector<const Pod*>> MovablePods(size_t j, const Compaction& c);
  // Where `pod` may move: the domains of the anchors that select it kept, and for a hostname
  // spread's anchor a node without pods it selects; nothing when it may not move (a hostname
  // affinity term selects it).
  std::optional<Pin> PinOf(const Pod& pod, Compaction& c);
  // Cpu and memory only, first fit: whether the other open pass nodes have room for all of
  // `pods`; a filter before MoveOff, which builds a checker per pod. c.rooms is left as it was.
  bool RoomForAll(size_t j, const std::vector<const Pod*>& pods, Compaction& c) const;
  // Removes pass node `j` and places `pods` on the other open pass nodes, each where its pin lets
  // it go; on success the snapshot keeps it and c.moves says where each went, otherwise nothing
  // changed.
  bool MoveOff(size_t j, const std::vector<const Pod*>& pods, const std::vector<Pin>& pins,
               Compaction& c);
  // The pool accounting after pass node `j` was dropped, and where its pods (c.moves) are to be
  // listed.
  void AccountDropped(size_t j, Compaction& c, std::map<std::string, ScaleUp>& ups);
  // Lists every moved pod under the pool that took it, once, after all the drops (a pool's list
  // is searched once, not once per pod).
  void Relist(const Compaction& c, std::map<std::string, ScaleUp>& ups);

  // Families and flexible new nodes (scale_up_families.cc).
  void BuildFamilies(const std::vector<const Pod*>& pending);
  // The family's shapes that may take a node now (not in backoff, below every limit), largest
  // first; sets family.largest from them.
  std::vector<size_t> EligibleShapes(Family& family);
  // TemplateFit(...).fits() on any of `shapes`.
  bool FitsAnyShape(const Pod* pod, const std::vector<size_t>& shapes);
  // Adds the family's k-th new node, as large as family.largest, with its DaemonSet pods.
  NodeIndex AddFlexNode(Family& family, int k);
  // Whether a shape of `node` holds its pods plus `pod` and has room in its pool beside the
  // estimate's other nodes, and then drops the shapes that no longer hold it. A node grows into a
  // dearer shape only when that costs no more than a second node for the pod (`solo`), or when the
  // shape is no dearer per unit than the pod's own.
  bool TakeOn(FlexNode& node, const Pod& pod, const Solo& solo, Estimate& e);
  // Shape `i`'s pool has no node left for the estimate's nodes: its registered, upcoming and
  // added nodes and the estimate's claims on it reach its max.
  bool ClaimsFull(const Estimate& e, size_t i) const {
    const PoolState& ps = pools_[i];
    return ps.current + ps.added + e.claimed[i] >= ps.pool->max;
  }
  // The cheapest of `shapes` that holds `pod` beside the DaemonSets.
  Solo SoloShape(const Pod& pod, const std::vector<size_t>& shapes) const;
  // Gives every new node of the estimate its shape by the expander chain, within the pools'
  // max and the cluster limits; a node no shape may take is removed with its pods.
  void Close(Estimate& e);
  // Nodes given their shape so far by Close: per pool, in all, and their capacity.
  struct Given {
    std::vector<int> per_pool;  // by index in pools_
    int all = 0;
    Resources capacity;
    // No cluster-wide limit (maxNodes, resource limits, maxNodesPerScaleUp) can be reached by
    // this Close's nodes: a shape has room while its pool is below its max.
    bool pool_max_only = false;
  };
  // What one Close asked the expanders, and their answers: nodes of an estimate are mostly alike
  // (the same shapes with room, the same pods), and the chain answers alike nodes alike.
  struct ShapeChoices {
    struct Choice {
      std::vector<size_t> pools;  // the shapes with room, in the node's order
      int pods = 0;
      Resources requested;
      size_t chosen = SIZE_MAX;
    };
    std::vector<Choice> recent;           // the last few distinct questions
    std::vector<ExpanderOption> options;  // scratch
    std::vector<size_t> pools;            // scratch
  };
  // The expander chain's shape for `node` among those with room beside the nodes `given` so
  // far, or SIZE_MAX.
  size_t ChooseShape(const FlexNode& node, const Given& given, ShapeChoices& choices);
  // Removes the `dropped` nodes of the estimate and their pods (noting why for each pod).
  void DropNodes(Estimate& e, const std::vector<bool>& dropped);
  // Why the family cannot take another node (`extra` of its nodes and `cluster_extra` in all
  // opened by the estimate in progress).
  std::optional<PoolReason> FamilyLimitReason(const Family& family,
                                              const std::vector<size_t>& shapes, int extra,
                                              int cluster_extra,
                                              const Resources& extra_capacity) const;
  // Zone twins (scaleUp.balanceZones): families whose keys differ only in the zone.
  void FindZoneTwins(const std::set<std::string, std::less<>>& referenced);
  // The twins of candidate `c` (those not yet in another candidate, `joined`) whose eligible
  // shapes match its own shape for shape, which then join it.
  void JoinTwins(Candidate& c, std::vector<uint8_t>& joined);

  // The round loop (scale_up_rounds.cc).
  // Static fit of a pod on an empty template node of the pool (with its DaemonSet pods).
  sched::FitResult TemplateFit(const Pod& pod, const PoolState& ps) const;
  // TemplateFit(...).fits(), without wording a reason, cached per (equivalence group, pool).
  bool FitsTemplate(const Pod* pod, size_t pool_index) {
    return FitsTemplate(GroupOf(pod), *pod, pool_index);
  }
  // The same for a pod of group `group` (callers that ask about many pools find it once).
  bool FitsTemplate(uint32_t group, const Pod& pod, size_t pool_index);
  // sched::PassesNodeStatic of the pod on the pool's template, cached per node constraint set
  // (NodeConstraintsKey) and pool: many groups share a set (most pods have none).
  bool PassesTemplateConstraints(uint32_t group, const Pod& pod, size_t pool_index);
  // Why the pool cannot take another node now, or nothing when it can. `extra` counts nodes
  // already added by the estimate in progress.
  // `cluster_extra` counts them for the cluster's limit on nodes when it differs (an estimate
  // over several pools).
  std::optional<PoolReason> LimitReason(const PoolState& ps, int extra,
                                        const Resources& extra_capacity,
                                        std::optional<int> cluster_extra = std::nullopt) const;
  // Bin-packs the candidate's pods onto new nodes of its family and zone twins. Leaves the
  // snapshot changed (caller reverts or commits). Records per-pod limit reasons for pods left
  // over.
  Estimate Pack(const Candidate& c);
  // Makes in the snapshot the changes Pack made for `e` when it was packed from the same state,
  // in the same order, without checking a fit again; false (nothing changed) when the estimate
  // dropped nodes, whose traces it does not keep.
  bool Replay(const Estimate& e);
  // Packs one pod onto a node of the estimate or a new one; false when it cannot.
  bool PackOne(const Pod& pod, sched::FitChecker& checker, PackCursor& cursor, Estimate& e,
               const Solo& solo);
  // Opens a node for the pod in the estimate's twin `t` if it takes the pod; notes why not.
  bool OpenNode(const Pod& pod, sched::FitChecker& checker, Estimate& e, uint32_t t,
                const Solo& solo);
  // Packs the pod onto a node already in the estimate, if one takes it.
  // Spread from zero: the checker of a pod with a DoNotSchedule spread constraint on a key other
  // than the hostname counts the domains of every family that may grow now and whose template
  // the constraint's policies let count (FitChecker::OfferDomain).
  void OfferSpreadDomains(const Pod& pod, sched::FitChecker& checker);
  // Which families may take a node this round (no shape in backoff or at a limit), for the above.
  void RefreshOpenFamilies();
  // A spread pod that no node of the estimate takes: the first node outside it that does, now
  // that the estimate's nodes and pods moved the global minimum (Estimate::outside).
  bool PlaceOutsideEstimate(const Pod& pod, sched::FitChecker& checker, PackCursor& cursor,
                            Estimate& e);
  // At the start of a round after nodes were committed: spread pods the new nodes let onto any
  // node of the snapshot go there, with no node of their own.
  void PlaceSpreadPodsAgain(std::vector<const Pod*>& remaining,
                            std::map<std::string, ScaleUp>& ups);
  // A pod placed on `node` without a node of its own is listed under the pool of that node when
  // this pass added it, else under `fallback` (a pool whose new nodes make room for it); without
  // a fallback, `node` must be one this pass added (checked).
  void AccountRetroPod(const Pod& pod, NodeIndex node, std::optional<size_t> fallback,
                       std::map<std::string, ScaleUp>& ups);
  bool PlaceOnEstimate(const Pod& pod, sched::FitChecker& checker, PackCursor& cursor, Estimate& e,
                       const Solo& solo);
  // A pod no node of the estimate has room for goes to the node that grows least for it: the
  // first that holds it after growing by one step (the family's smallest shape), else two,
  // and so on; false when none does short of the pod's whole size (first fit decides then).
  // Growing a node by a little where another would grow by a lot keeps the shapes tight: on
  // Karpenter's diverse mix of 5,000 pods the price over the lower bound falls from 1.147x to
  // 1.098x (the first node that could grow took the pod before).
  bool GrowLeast(const Pod& pod, sched::FitChecker& checker, PackCursor& cursor, Estimate& e,
                 const Solo& solo);
  // The first node of the estimate that takes the pod, growing into a larger shape if it must;
  // in a family of several shapes searched from the node after the one it grew last
  // (Estimate::grow_next) and around. Starting at the first node each time made a few nodes
  // grow into the largest shapes, full in one resource and half empty in the other, while the
  // rest kept the smallest: going round spreads the growth, so later pods of the other resource
  // find room on every node. On Karpenter's diverse mix of 20,000 pods the price over the lower
  // bound falls from 1.157x to 1.091x.
  bool FirstFit(const Pod& pod, sched::FitChecker& checker, PackCursor& cursor, Estimate& e,
                const Solo& solo);
  // The next node from `n` a loop looking for room for `need` checks: RoomIndex::Next, or `n`
  // itself without placement cursors.
  size_t NextWithRoom(const RoomIndex& rooms, size_t n, const Resources& need) const {
    return options_.placement_cursors ? rooms.Next(n, need) : n;
  }
  // Resets the cursors the checker's or the estimate's changes since they were set invalidate.
  void SyncCursor(PackCursor& cursor, const sched::FitChecker& checker, const Estimate& e) const;
  void Place(const Pod& pod, sched::FitChecker& checker, Estimate& e, size_t node);
  // Tries to place one pod on any node already in the snapshot (of the first `ranks` by walk
  // rank, when fewer). Returns its index or kNoNode.
  // With `rooms` (placement cursors on), the search passes over the nodes it says have no room
  // (made over the first `ranks` when empty; the same `ranks` at every call with one index) and
  // keeps it up to date with the pod placed.
  NodeIndex PlaceOnExisting(const Pod& pod, uint32_t group, size_t ranks = SIZE_MAX,
                            std::optional<RoomIndex>* rooms = nullptr);
  // One round of "choose the best pool for these pods and commit it". Returns false when no
  // pool can take any of them.
  // `balance_zones`: candidates take their zone twins in (not for a gang, whose members stay in
  // one zone: a distributed run split over zones pays for every exchange between them).
  bool GrowOnce(std::vector<const Pod*>& remaining, std::map<std::string, ScaleUp>& ups,
                bool balance_zones = true);
  // The pools that may grow now, each with the remaining pods its template fits.
  std::vector<Candidate> Candidates(const std::vector<const Pod*>& remaining, bool balance_zones);
  // Why the pools that could host the pods cannot grow, for the reasons.
  void NoteLimits(const std::vector<const Pod*>& remaining);
  // Orders the candidates best first by a fluid (resources only) estimate.
  void RankByFluidEstimate(std::vector<Candidate>& candidates);
  // Exact estimates of the candidates, in batches until one places pods; each with the index
  // of its candidate, in candidate order. With the priority expander first, a batch is packed
  // highest priority first and the candidates below the first priority that places pods are not
  // packed (no option of theirs could win); `outranked` receives their pools' names.
  std::vector<std::pair<size_t, Estimate>> PackCandidates(const std::vector<Candidate>& candidates,
                                                          std::vector<std::string>& outranked);
  int32_t PriorityOf(const Candidate& c) const {
    return pools_[families_[c.family].members.front()].pool->priority;
  }
  // The estimate as the expander chain sees it.
  ExpanderOption OptionOf(const Estimate& e) const;
  void AccountCommitted(const Estimate& e, std::map<std::string, ScaleUp>& ups,
                        const std::string& why);

  // Gangs, all or nothing (scale_up_gangs.cc).
  Gangs CollectGangs(const std::vector<const Pod*>& pending) const;
  void PlanGang(const std::string& gang, Gangs& gangs, ScaleUpPlan& plan,
                std::map<std::string, ScaleUp>& ups);
  // Adds copies of a pending member for the members not created yet; returns the gang's size.
  int AddUncreatedMembers(std::vector<const Pod*>& members, int seen);
  Accounting SaveAccounting() const;
  void RestoreAccounting(const Accounting& a);
  // Every member of a gang that does not fit whole gets the same reason per pool.
  void RejectGang(const std::string& gang, int size, const std::vector<const Pod*>& members,
                  const std::vector<const Pod*>& left, ScaleUpPlan& plan);

  // Warm placeholders, step 4 (scale_up_warm.cc): a node of the placeholder's pool with room
  // for it, or kNoNode. Real nodes are matched by PoolOf, so nodes found by the agentpool label
  // count. `daemon_set_pods`: the pods every node of a pool runs (an idle node holds only those).
  NodeIndex FindWarmRoom(const Pod& pod, const std::unordered_set<const Pod*>& daemon_set_pods);
  void PlanWarm(ScaleUpPlan& plan, std::map<std::string, ScaleUp>& ups);
  // Why the placeholders of each pool left in `need` could not all be placed.
  void NoteWarmUnmet(const std::vector<const Pod*>& need, ScaleUpPlan& plan);

  // Reasons (scale_up_reasons.cc).
  void RecordStaticReasons(const std::vector<const Pod*>& pods);
  void NoteReason(const Pod& pod, const std::string& pool, PoolReason reason) {
    FlushFamilyNotes(pod);
    reasons_[pod.Key()][pool] = std::move(reason);
  }
  // The same reason for every pool of the family. Estimates repeat verdicts on a pod round after
  // round (a spread pod its zone cannot take yet) and most such pods are placed later, so the
  // note is kept per family and written to every pool only when something reads or overrides the
  // pod's reasons (FlushFamilyNotes); a note for the same family replaces the one before.
  void NoteFamilyReason(const Pod& pod, const Family& family, const PoolReason& why);
  // Writes the pod's family notes to its per-pool reasons, in the order they were noted.
  void FlushFamilyNotes(const Pod& pod);

  // The equivalence group of a pod, computed once per pod per pass.
  uint32_t GroupOf(const Pod* pod) {
    auto it = group_of_.find(pod);
    if (it != group_of_.end()) return it->second;
    auto [git, inserted] = group_ids_.emplace(EquivalenceKey(*pod), group_ids_.size());
    group_of_.emplace(pod, git->second);
    return git->second;
  }
  // First-fit decreasing order: bigger pods first (GPUs, cpu, memory), members of one group
  // together; otherwise the incoming (deterministic) order is kept.
  void SortForPacking(std::vector<const Pod*>& pods) {
    SortPods(
        pods,
        [&](const Pod* p) {
          // Negated sizes sort biggest first; the group ascending.
          return std::tuple(-p->requests.gpus(), -p->requests.cpu_milli(), -p->requests.memory(),
                            GroupOf(p));
        },
        std::less<>());
  }
  // For a family of several shapes, the order that keeps growing nodes balanced. Each pod's
  // dominant resource is the one it takes the largest share of in `largest`; the pods of each
  // dominant resource are sorted biggest first (vector bin-packing's first fit decreasing),
  // members of a group together; then the next group comes from the resource the pods ordered so
  // far take the least of. A node grows into the cheapest shape that holds what it carries, so
  // when the pods that land on it alternate between cpu-heavy and memory-heavy, its resources
  // fill evenly and it ends in a smaller shape than if it had taken all of one kind first.
  void SortForBalance(std::vector<const Pod*>& pods, const Node& largest);

  const PlannerInput& in_;
  const model::AutoscalerConfig& cfg_;
  const PoolNames pool_names_{cfg_};  // for the pool of each registered node
  // Devices and claims, when the input has DRA objects or a pool has template devices; attached
  // to snap_ (declared before it, so it outlives the snapshot).
  std::unique_ptr<sched::DraState> dra_;
  // ChooseSnapshot's finds: the registered nodes and their model slots, in input order (declared
  // before snap_, whose initialization fills it).
  ModelNodes model_nodes_;
  // A real node's name may start as a new or upcoming node's does ("new-", "upcoming-"): each
  // made-up node's name is then looked up (AddNumberedNode). On the model, found once per pass.
  bool numbered_may_clash_ = true;
  ClusterSnapshot own_snap_;
  ClusterSnapshot& snap_;         // own_snap_ or the input model's (ChooseSnapshot)
  std::vector<NodeIndex> order_;  // the registered and upcoming nodes' slots, by rank
  size_t base_slots_ = 0;         // snap_.NodeSlots() once they were in
  std::deque<Node> upcoming_nodes_;
  std::deque<Pod> phantom_pods_;
  std::vector<PoolState> pools_;  // sorted by pool name
  std::vector<Family> families_;
  std::vector<size_t> family_of_;                 // per pool
  std::vector<std::vector<size_t>> twin_groups_;  // families that are zone twins, by index
  std::vector<uint8_t> family_open_;              // per family, RefreshOpenFamilies
  // Per equivalence group, the open families whose templates offer it a domain (this round).
  std::unordered_map<uint32_t, std::vector<size_t>> offering_families_;
  // Nodes committed in this pass with their shape (pool index), in order.
  std::vector<std::pair<NodeIndex, size_t>> pass_nodes_;
  size_t retried_at_ = 0;       // pass_nodes_.size() at the last PlaceSpreadPodsAgain
  int cluster_nodes_ = 0;       // registered + upcoming + added in this pass
  int base_cluster_nodes_ = 0;  // cluster_nodes_ before this pass added any
  LimitedCapacity cluster_capacity_{cfg_.limits};  // of the same nodes
  std::unordered_map<uint32_t, size_t> hints_;     // group -> rank of the last node a member fit
  std::unordered_map<uint32_t, int> templates_fitting_;  // group -> TemplatesFitting
  // Groups that fit no node of the snapshot as it had no_fit_node_ranks_ nodes to walk. Valid
  // while only pods are added: more pods never make room. New nodes clear it.
  std::unordered_set<uint32_t> no_fit_groups_;
  size_t no_fit_node_ranks_ = 0;
  // PlaceOnExisting's walks by node constraints, over ranks. Ranks only grow while it is used
  // (singles walk the first ones only), except when a gang's revert drops the nodes the gang
  // added (and it forgets).
  ConstraintLists constraint_lists_;
  static constexpr uint32_t kNoConstraintSet = UINT32_MAX;
  std::vector<uint32_t> constraint_set_of_group_;  // group -> ConstraintLists id
  uint32_t ConstraintSetOf(const Pod& pod, uint32_t group);
  std::unordered_map<std::string, uint32_t> group_ids_;
  std::vector<std::vector<int8_t>> static_fit_;  // [group][pool]: -1 unknown, 0 no, 1 yes
  // [constraint set][pool]: whether the template passes the node-local filters that read no
  // amounts (sched::PassesNodeStatic), the same for every pod of the set without a nodeName.
  std::vector<std::vector<int8_t>> constraint_fit_;
  std::vector<size_t> holders_;  // TakeOn's scratch: the shapes that hold the node's pods
  // Pools by room class: equal template allocatable and DaemonSet use, so a pod's resources fit
  // all of a class or none. `of` per pool, `first` the first pool of each class, `passing`
  // [constraint set][class] (empty: not counted yet). Built when first asked.
  struct RoomClasses {
    std::vector<uint32_t> of;
    std::vector<size_t> first;
    std::vector<std::vector<int>> passing;
  } room_classes_;
  std::unordered_map<const Pod*, uint32_t> group_of_;
  std::map<std::string, std::map<std::string, PoolReason>> reasons_;  // pod -> pool -> why
  // Per pod, the last NoteFamilyReason per family not yet written to reasons_.
  std::unordered_map<const Pod*, std::vector<std::pair<const Family*, PoolReason>>> family_note_;
  std::map<std::string, std::string> fits_node_;
  std::map<std::string, std::string> pool_for_;
  int round_ = 0;
  std::string explain_pod_;
  ScaleUpOptions options_;
};

}  // namespace tidepool::planner::scale_up_detail
