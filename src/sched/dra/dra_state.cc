// DraState's tables: devices and counters of the cluster's slices and of template nodes, the
// devices each node reaches, claim states, and placing and unplacing pods with their undo log.
#include "sched/dra/dra_state.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/check.h"
#include "sched/dra/dra_detail.h"

namespace tidepool::sched {
namespace {

std::string DeviceKey(std::string_view driver, std::string_view pool, std::string_view device) {
  return fmt::format("{}/{}/{}", driver, pool, device);
}

}  // namespace

DraState::DraState(const model::DraObjects& objects) : impl_(std::make_unique<Impl>(objects)) {
  for (const auto& c : objects.device_classes) impl_->classes.emplace(c.meta.name, &c);
  for (const auto& c : objects.claims) impl_->claims.emplace(c.meta.Key(), &c);
  for (const auto& t : objects.claim_templates) impl_->claim_templates.emplace(t.meta.Key(), &t);
  impl_->AddRealSlices();
  impl_->MarkStatusAllocations();
}

DraState::~DraState() = default;

DeviceId DraState::Impl::AddDevice(const model::Device* d, const model::ResourceSlice* s,
                                   bool node_local) {
  auto id = static_cast<DeviceId>(devices.size());
  DeviceRecord& r = devices.emplace_back();
  r.device = d;
  r.slice = s;
  r.node_local = node_local;
  auto [it, inserted] = protos.emplace(d, id);
  r.proto = it->second;
  in_use.push_back(0);
  return id;
}

// Counter sets are looked up in the device's own pool (the slices of its driver and pool name);
// `ids` maps "set/counter" to the counters made so far for that pool.
void DraState::Impl::ResolveCounters(DeviceRecord& r,
                                     const std::vector<const model::ResourceSlice*>& pool,
                                     std::map<std::string, CounterId>& ids) {
  for (const model::CounterConsumption& use : r.device->consumes_counters) {
    for (const auto& [name, amount] : use.counters) {
      std::string key = use.counter_set + "/" + name;
      auto it = ids.find(key);
      if (it == ids.end()) {
        std::optional<__int128> capacity;
        for (const model::ResourceSlice* s : pool)
          for (const model::CounterSet& set : s->shared_counters)
            if (set.name == use.counter_set)
              if (auto c = set.counters.find(name); c != set.counters.end())
                capacity = c->second.nanos();
        if (!capacity) {
          r.broken = true;
          continue;
        }
        it = ids.emplace(key, static_cast<CounterId>(counter_capacity.size())).first;
        counter_capacity.push_back(*capacity);
        counter_used.push_back(0);
      }
      r.consumes.emplace_back(it->second, amount.nanos());
    }
  }
}

void DraState::Impl::AddRealSlices() {
  std::map<std::pair<std::string_view, std::string_view>, std::vector<const model::ResourceSlice*>>
      pools;
  for (const auto& s : objects.slices) pools[{s.driver, s.pool}].push_back(&s);
  for (const auto& [pool_key, slices] : pools) {
    std::map<std::string, CounterId> counter_ids;
    for (const model::ResourceSlice* s : slices) {
      for (const auto& d : s->devices) {
        DeviceId id = AddDevice(&d, s, !s->node_name.empty());
        real_ids.emplace(DeviceKey(s->driver, s->pool, d.name), id);
        ResolveCounters(devices[id], slices, counter_ids);
      }
    }
  }
}

// Claims allocated in the cluster hold their devices (and the counters those draw from).
void DraState::Impl::MarkStatusAllocations() {
  for (const auto& c : objects.claims) {
    if (!c.allocation) continue;
    ClaimState st;
    st.allocated = true;
    st.in_cluster = true;
    st.selector = c.allocation->node_selector ? &*c.allocation->node_selector : nullptr;
    for (const auto& d : c.allocation->devices) {
      auto it = real_ids.find(DeviceKey(d.driver, d.pool, d.device));
      if (it == real_ids.end() || in_use[it->second] != 0) continue;  // gone, or listed twice
      st.devices.push_back(it->second);
      in_use[it->second] = 1;
      for (const auto& [counter, amount] : devices[it->second].consumes) {
        counter_used[counter] += amount;
      }
    }
    claim_states.emplace(&c, std::move(st));
  }
}

void DraState::AddTemplateNode(const model::Node* node,
                               const std::vector<model::ResourceSlice>* slices) {
  TIDEPOOL_CHECK(node != nullptr && slices != nullptr);
  auto [it, inserted] = impl_->template_nodes.emplace(node, slices);
  if (!inserted && it->second == slices) return;  // the same devices as before: keep them
  it->second = slices;
  impl_->inventories.erase(node);
}

const std::vector<DeviceId>& DraState::Impl::Inventory(const model::Node& node) {
  auto it = inventories.find(&node);
  if (it != inventories.end()) return it->second;
  std::vector<DeviceId> ids;
  auto tmpl = template_nodes.find(&node);
  if (tmpl != template_nodes.end()) {
    // New devices of this node; its counters are its own too.
    std::map<std::pair<std::string_view, std::string_view>,
             std::vector<const model::ResourceSlice*>>
        pools;
    for (const auto& s : *tmpl->second) pools[{s.driver, s.pool}].push_back(&s);
    for (const auto& [pool_key, slices] : pools) {
      std::map<std::string, CounterId> counter_ids;
      for (const model::ResourceSlice* s : slices) {
        for (const auto& d : s->devices) {
          DeviceId id = AddDevice(&d, s, true);
          ResolveCounters(devices[id], slices, counter_ids);
          ids.push_back(id);
        }
      }
    }
  }
  // The cluster's slices: node-local ones of a registered node; shared ones that reach it.
  for (const auto& s : objects.slices) {
    bool reaches = tmpl == template_nodes.end()
                       ? s.AvailableOn(node.labels(), node.name())
                       : s.node_name.empty() && s.AvailableOn(node.labels(), node.name());
    if (!reaches) continue;
    for (const auto& d : s.devices) ids.push_back(real_ids.at(DeviceKey(s.driver, s.pool, d.name)));
  }
  return inventories.emplace(&node, std::move(ids)).first->second;
}

const ClaimState* DraState::Impl::StateOf(const void* key) const {
  auto it = claim_states.find(key);
  return it == claim_states.end() ? nullptr : &it->second;
}

void DraState::Impl::SetState(const void* key, ClaimState state) {
  auto it = claim_states.find(key);
  if (!layers.empty()) {
    UndoEntry e{UndoKind::kClaim, 0, 0, key, std::nullopt};
    if (it != claim_states.end()) e.previous = it->second;
    log.push_back(std::move(e));
  }
  if (it == claim_states.end()) {
    claim_states.emplace(key, std::move(state));
  } else {
    it->second = std::move(state);
  }
}

void DraState::Impl::SetDevice(DeviceId id, uint8_t value) {
  if (!layers.empty()) log.push_back({UndoKind::kDevice, id, in_use[id], nullptr, std::nullopt});
  in_use[id] = value;
  int sign = value != 0 ? 1 : -1;
  AddCounters(id, sign);
}

void DraState::Impl::AddCounters(DeviceId id, int sign) {
  for (const auto& [counter, amount] : devices[id].consumes) {
    __int128 delta = sign * amount;
    if (!layers.empty()) log.push_back({UndoKind::kCounter, counter, delta, nullptr, std::nullopt});
    counter_used[counter] += delta;
  }
}

const PodClaims& DraState::ClaimsOf(const model::Pod& pod) const { return impl_->ClaimsOf(pod); }

bool DraState::CanAllocate(const PodClaims& claims, const model::Node& node) const {
  if (!claims.error.empty()) return false;
  auto pending = impl_->Pending(claims, node);
  if (!pending) return false;
  if (pending->empty()) return true;
  return impl_->Search(*pending, impl_->Inventory(node), nullptr);
}

std::string DraState::Diagnose(const PodClaims& claims, const model::Node& node) const {
  return impl_->Diagnose(claims, node);
}

void DraState::Place(const model::Pod& pod, const model::Node& node) {
  if (pod.resource_claims().empty()) return;
  const PodClaims& claims = impl_->ClaimsOf(pod);
  if (!claims.error.empty()) return;
  auto pending = impl_->Pending(claims, node);
  std::vector<std::vector<DeviceId>> found;
  bool allocate =
      pending && !pending->empty() && impl_->Search(*pending, impl_->Inventory(node), &found);
  for (const PodClaim& c : claims.claims) {
    const void* key = ClaimKey(c);
    const ClaimState* old = impl_->StateOf(key);
    ClaimState st = old != nullptr ? *old : ClaimState{};
    size_t k = allocate ? static_cast<size_t>(std::find(pending->begin(), pending->end(), &c) -
                                              pending->begin())
                        : 0;
    if (allocate && k < pending->size()) {
      for (DeviceId id : st.devices) impl_->SetDevice(id, 0);  // a stale simulated allocation
      st = ClaimState{.users = st.users};
      st.allocated = true;
      st.selector = nullptr;
      st.devices = found[k];
      bool local = false;
      for (DeviceId id : st.devices) {
        impl_->SetDevice(id, 1);
        local = local || impl_->devices[id].node_local;
      }
      st.node = local ? &node : nullptr;
    }
    ++st.users;
    impl_->SetState(key, std::move(st));
  }
}

void DraState::Unplace(const model::Pod& pod) {
  if (pod.resource_claims().empty()) return;
  const PodClaims& claims = impl_->ClaimsOf(pod);
  if (!claims.error.empty()) return;
  for (const PodClaim& c : claims.claims) {
    const void* key = ClaimKey(c);
    const ClaimState* old = impl_->StateOf(key);
    if (old == nullptr || old->users == 0) continue;
    ClaimState st = *old;
    if (--st.users == 0 && st.allocated) {
      for (DeviceId id : st.devices) impl_->SetDevice(id, 0);
      st = ClaimState{};
    }
    impl_->SetState(key, std::move(st));
  }
}

void DraState::Fork() { impl_->layers.push_back(impl_->log.size()); }

void DraState::Revert() {
  TIDEPOOL_CHECK_MSG(!impl_->layers.empty(), "DraState::Revert() without Fork()");
  size_t mark = impl_->layers.back();
  auto& log = impl_->log;
  while (log.size() > mark) {
    Impl::UndoEntry& e = log.back();
    switch (e.kind) {
      case Impl::UndoKind::kDevice:
        impl_->in_use[e.id] = static_cast<uint8_t>(e.amount);
        break;
      case Impl::UndoKind::kCounter:
        impl_->counter_used[e.id] -= e.amount;
        break;
      case Impl::UndoKind::kClaim:
        if (e.previous) {
          impl_->claim_states[e.key] = std::move(*e.previous);
        } else {
          impl_->claim_states.erase(e.key);
        }
        break;
    }
    log.pop_back();
  }
  impl_->layers.pop_back();
}

void DraState::Commit() {
  TIDEPOOL_CHECK_MSG(!impl_->layers.empty(), "DraState::Commit() without Fork()");
  impl_->layers.pop_back();
  if (impl_->layers.empty()) impl_->log.clear();
}

DraState::DeviceUse DraState::UseOf(const model::Node& node) const {
  DeviceUse use;
  for (DeviceId id : impl_->Inventory(node)) {
    if (!impl_->devices[id].node_local) continue;
    ++use.devices;
    if (impl_->in_use[id] != 0) ++use.allocated;
  }
  return use;
}

std::vector<std::string> DraState::ForeignClaimsOn(
    const model::Node& node, const std::vector<const model::Pod*>& pods) const {
  std::vector<uint8_t> on_node(impl_->devices.size(), 0);
  for (DeviceId id : impl_->Inventory(node))
    if (impl_->devices[id].node_local) on_node[id] = 1;
  std::vector<const void*> used;
  for (const model::Pod* p : pods) {
    if (p->resource_claims().empty()) continue;
    for (const PodClaim& c : impl_->ClaimsOf(*p).claims) used.push_back(ClaimKey(c));
  }
  std::vector<std::string> out;
  for (const auto& c : impl_->objects.claims) {
    const ClaimState* st = impl_->StateOf(&c);
    if (st == nullptr || !st->allocated) continue;
    bool here = false;
    for (DeviceId id : st->devices) here = here || on_node[id] != 0;
    if (here && std::find(used.begin(), used.end(), &c) == used.end()) {
      out.push_back(c.meta.Key());
    }
  }
  return out;
}

}  // namespace tidepool::sched
