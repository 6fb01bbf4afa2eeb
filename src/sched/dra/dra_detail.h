// What DraState's files share (dra_state.cc, dra_claims.cc, dra_search.cc, dra_diagnose.cc): the
// device and counter tables, per-node device lists, claim states and the undo log.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sched/dra/dra_state.h"

namespace tidepool::sched {

using CounterId = uint32_t;

struct DeviceRecord {
  const model::Device* device = nullptr;
  const model::ResourceSlice* slice = nullptr;
  DeviceId proto = 0;  // the first record of the same Device (template nodes share matches)
  bool node_local = true;
  bool broken = false;  // consumes a counter set its pool does not define: never allocated
  std::vector<std::pair<CounterId, __int128>> consumes;
};

struct ClaimState {
  bool allocated = false;
  const model::Node* node = nullptr;              // allocated in the simulation, node-local
  const model::NodeSelector* selector = nullptr;  // allocated in the cluster (status)
  std::vector<DeviceId> devices;
  int users = 0;
  bool in_cluster = false;  // allocated in the cluster (status.allocation), not by the simulation

  // Whether a pod on `node` can use the allocation.
  bool UsableOn(const model::Node& n) const {
    if (node != nullptr) return node == &n;
    return selector == nullptr || selector->Matches(n.labels(), n.name());
  }
};

// One step of the search: a request of a claim to allocate.
struct Slot {
  const PodClaim* claim;
  size_t claim_index;  // in the pending list
  const CompiledRequest* request;
};

struct DraState::Impl {
  explicit Impl(const model::DraObjects& o) : objects(o) {}

  const model::DraObjects& objects;

  // Devices and counters. Real slices' come first, in slice order; template nodes add their own.
  std::vector<DeviceRecord> devices;
  std::vector<uint8_t> in_use;  // per device: 0 free, 1 allocated, 2 taken by the search
  std::vector<__int128> counter_capacity, counter_used;
  std::unordered_map<std::string, DeviceId> real_ids;  // "driver/pool/device"
  std::unordered_map<const model::Device*, DeviceId> protos;

  std::unordered_map<const model::Node*, const std::vector<model::ResourceSlice>*> template_nodes;
  std::unordered_map<const model::Node*, std::vector<DeviceId>> inventories;

  std::unordered_map<std::string, const model::DeviceClass*> classes;
  std::unordered_map<std::string, const model::ResourceClaim*> claims;  // by ns/name
  std::unordered_map<std::string, const model::ResourceClaimTemplate*> claim_templates;
  std::unordered_map<std::string, std::unique_ptr<cel::Program>> programs;
  std::unordered_map<std::string, std::string> program_errors;
  std::unordered_map<const model::ResourceClaimSpec*, std::unique_ptr<CompiledSpec>> specs;
  uint32_t next_sub_id = 0;
  std::unordered_map<const model::Pod*, std::unique_ptr<PodClaims>> pod_claims;
  std::vector<std::vector<int8_t>> matches;  // [proto][sub id]: -1 unknown, 0 no, 1 yes

  // Claim states by key: the ResourceClaim, or the PodClaim of a per-pod claim from a template.
  std::unordered_map<const void*, ClaimState> claim_states;

  enum class UndoKind : uint8_t { kDevice, kCounter, kClaim };
  struct UndoEntry {
    UndoKind kind;
    uint32_t id;                         // kDevice, kCounter
    __int128 amount;                     // kCounter
    const void* key;                     // kClaim
    std::optional<ClaimState> previous;  // kClaim: absent when the key had no state
  };
  std::vector<UndoEntry> log;
  std::vector<size_t> layers;

  // dra_state.cc
  void AddRealSlices();
  void MarkStatusAllocations();
  DeviceId AddDevice(const model::Device* d, const model::ResourceSlice* s, bool node_local);
  void ResolveCounters(DeviceRecord& r, const std::vector<const model::ResourceSlice*>& pool,
                       std::map<std::string, CounterId>& ids);
  const std::vector<DeviceId>& Inventory(const model::Node& node);
  const ClaimState* StateOf(const void* key) const;
  void SetState(const void* key, ClaimState state);
  void SetDevice(DeviceId id, uint8_t value);
  void AddCounters(DeviceId id, int sign);

  // dra_claims.cc
  const cel::Program* CompileSelector(const std::string& expr, std::string& error);
  const CompiledSpec* Compile(const model::ResourceClaimSpec& spec);
  const PodClaims& ClaimsOf(const model::Pod& pod);

  // dra_search.cc
  bool Matches(const CompiledSubRequest& sub, DeviceId id);
  // Pending claims of `claims` for the node, or nullopt when an allocated one is unusable there.
  std::optional<std::vector<const PodClaim*>> Pending(const PodClaims& claims,
                                                      const model::Node& node) const;
  // Searches an allocation of every pending claim from `inventory`; on success, `out` holds
  // each claim's devices (when not null).
  bool Search(const std::vector<const PodClaim*>& pending, const std::vector<DeviceId>& inventory,
              std::vector<std::vector<DeviceId>>* out);

  // dra_diagnose.cc
  std::string Diagnose(const PodClaims& claims, const model::Node& node);
};

// The key of a claim's state: the existing claim, or the per-pod claim of a template entry.
inline const void* ClaimKey(const PodClaim& c) {
  return c.claim != nullptr ? static_cast<const void*>(c.claim) : static_cast<const void*>(&c);
}

}  // namespace tidepool::sched
