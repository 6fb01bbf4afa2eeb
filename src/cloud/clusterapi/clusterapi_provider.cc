#include "cloud/clusterapi/clusterapi_provider.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "base/kill_point.h"

namespace tidepool::cloud::clusterapi {

namespace {

bool SameGroup(const NodeGroup& a, const NodeGroup& b) {
  return a.kind == b.kind && a.namespace_ == b.namespace_ && a.name == b.name;
}

bool BelongsTo(const Machine& m, const NodeGroup& g) {
  if (m.namespace_ != g.namespace_) return false;
  switch (g.kind) {
    case GroupKind::kMachineDeployment:
      return m.deployment_name == g.name;
    case GroupKind::kMachineSet:
      return m.set_name == g.name && m.deployment_name.empty();
    case GroupKind::kMachinePool:
      return m.pool_name == g.name;
  }
  return false;
}

// Machines to cancel first: failed, then the newest.
void CancelOrder(std::vector<Machine>& machines) {
  std::stable_sort(machines.begin(), machines.end(), [](const Machine& a, const Machine& b) {
    if (a.Failed() != b.Failed()) return a.Failed();
    return a.created > b.created;
  });
}

}  // namespace

ClusterApiProvider::ClusterApiProvider(ClusterApi api, std::map<std::string, NodeGroup> groups)
    : api_(std::move(api)), started_with_(std::move(groups)) {}

Result<std::unique_ptr<ClusterApiProvider>> ClusterApiProvider::Create(
    ClusterApi api, std::map<std::string, NodeGroup> groups) {
  std::unique_ptr<ClusterApiProvider> p(new ClusterApiProvider(std::move(api), std::move(groups)));
  TIDEPOOL_RETURN_IF_ERROR(p->RollBackMarks());
  TIDEPOOL_RETURN_IF_ERROR(p->Load());
  return p;
}

Result<void> ClusterApiProvider::RollBackMarks() {
  TIDEPOOL_ASSIGN_OR_RETURN(auto objects, api_.ListMachines());
  for (const auto& obj : objects) {
    auto m = ParseMachine(obj);
    if (!m || !m->marked_by_tidepool || m->deleting) continue;
    spdlog::warn(
        "Machine {}/{}: marked for deletion by a tidepool that stopped before lowering its node "
        "group's replicas; taking the mark off (a removal still wanted is started again)",
        m->namespace_, m->name);
    TIDEPOOL_RETURN_IF_ERROR(api_.Unmark(*m));
  }
  return {};
}

void ClusterApiProvider::NoteChange(const std::string& pool, const NodeGroup* now) {
  const NodeGroup& then = started_with_.at(pool);
  std::string change;
  if (now == nullptr) {
    change = fmt::format(
        "{} (pool {}) is gone; the pool keeps its settings until tidepool "
        "restarts",
        then.Describe(), pool);
  } else if (now->min != then.min || now->max != then.max) {
    change = fmt::format(
        "{} (pool {}): size annotations now min {} max {} (were {} and {}); "
        "tidepool reads node groups at startup: restart it to apply them",
        now->Describe(), pool, now->min, now->max, then.min, then.max);
  }
  if (!change.empty() && reported_.insert(change).second) spdlog::warn("{}", change);
}

Result<void> ClusterApiProvider::Load() {
  std::vector<NodeGroup> listed;
  for (GroupKind kind :
       {GroupKind::kMachineDeployment, GroupKind::kMachineSet, GroupKind::kMachinePool}) {
    TIDEPOOL_ASSIGN_OR_RETURN(auto objects, api_.ListGroups(kind));
    for (const auto& obj : objects) {
      auto g = ParseNodeGroup(obj, kind);
      if (g && *g) listed.push_back(std::move(**g));
    }
  }
  std::vector<Machine> machines;
  TIDEPOOL_ASSIGN_OR_RETURN(auto objects, api_.ListMachines());
  for (const auto& obj : objects) {
    auto m = ParseMachine(obj);
    if (m) machines.push_back(std::move(*m));
  }

  std::lock_guard lock(mu_);
  pools_.clear();
  pool_by_provider_id_.clear();
  pool_by_node_name_.clear();
  for (const auto& [pool, then] : started_with_) {
    auto it = std::find_if(listed.begin(), listed.end(),
                           [&](const NodeGroup& g) { return SameGroup(g, then); });
    NoteChange(pool, it == listed.end() ? nullptr : &*it);
    PoolState state{it == listed.end() ? then : *it, {}};
    if (it == listed.end()) state.group.replicas = 0;
    for (const Machine& m : machines) {
      if (!BelongsTo(m, state.group)) continue;
      if (!m.provider_id.empty()) pool_by_provider_id_[m.provider_id] = pool;
      if (!m.node_name.empty()) pool_by_node_name_[m.node_name] = pool;
      if (m.deleting) continue;
      if (m.Failed()) {
        std::string line = fmt::format("Machine {}/{} failed: {}; pool {} reports a stockout",
                                       m.namespace_, m.name, m.failure, pool);
        if (reported_.insert(line).second) spdlog::warn("{}", line);
      }
      state.machines.push_back(m);
    }
    for (const std::string& id : state.group.provider_ids) pool_by_provider_id_[id] = pool;
    pools_[pool] = std::move(state);
  }
  return {};
}

Result<std::vector<PoolSize>> ClusterApiProvider::Refresh(Time) {
  TIDEPOOL_RETURN_IF_ERROR(Load());
  std::lock_guard lock(mu_);
  std::vector<PoolSize> out;
  for (const auto& [name, state] : pools_) {
    PoolSize s;
    s.pool = name;
    s.target = state.group.replicas;
    for (const Machine& m : state.machines) {
      if (!m.Failed()) {
        ++s.instances;
      } else if (!s.stockout) {
        s.stockout = true;
        s.stockout_reason =
            fmt::format("Machine {}/{} failed: {}", m.namespace_, m.name, m.failure);
      }
    }
    if (state.machines.empty() && state.group.kind == GroupKind::kMachinePool) {
      s.instances = static_cast<int>(state.group.provider_ids.size());
    }
    out.push_back(std::move(s));
  }
  return out;
}

Result<ClusterApiProvider::PoolState> ClusterApiProvider::Lookup(const std::string& pool) const {
  std::lock_guard lock(mu_);
  auto it = pools_.find(pool);
  if (it == pools_.end()) {
    return Fail(Error::Code::kNotFound, "clusterapi: no node group for pool \"{}\"", pool);
  }
  return it->second;
}

Result<void> ClusterApiProvider::IncreaseSize(const std::string& pool, int delta, Time) {
  TIDEPOOL_ASSIGN_OR_RETURN(PoolState state, Lookup(pool));
  TIDEPOOL_ASSIGN_OR_RETURN(Scale read, api_.GetScale(state.group));
  if (read.replicas + delta > state.group.max) {
    return Fail(Error::Code::kInvalidArgument, "{}: {} + {} replicas is more than its max size {}",
                state.group.Describe(), read.replicas, delta, state.group.max);
  }
  return api_.SetScale(state.group, read, read.replicas + delta);
}

Result<void> ClusterApiProvider::MarkAndScale(const NodeGroup& group,
                                              const std::vector<Machine>& machines,
                                              const Scale& read, int32_t replicas, Time now) {
  std::vector<const Machine*> marked;
  auto unmark = [&] {
    for (const Machine* m : marked) {
      if (auto ok = api_.Unmark(*m); !ok) spdlog::warn("{}", ok.error().message());
    }
  };
  for (const Machine& m : machines) {
    if (auto ok = api_.Mark(m, now); !ok) {
      unmark();
      return ok;
    }
    marked.push_back(&m);
  }
  ReachKillPoint(KillPoint::kCapiMachineMarked);
  if (auto ok = api_.SetScale(group, read, replicas); !ok) {
    unmark();
    return ok;
  }
  return {};
}

Result<void> ClusterApiProvider::DecreaseTargetSize(const std::string& pool, int delta, Time now) {
  TIDEPOOL_ASSIGN_OR_RETURN(PoolState state, Lookup(pool));
  TIDEPOOL_ASSIGN_OR_RETURN(Scale read, api_.GetScale(state.group));
  const int alive = static_cast<int>(state.machines.size());
  const int not_created = std::max(0, read.replicas - alive);
  std::vector<Machine> cancel;
  for (const Machine& m : state.machines) {
    if (!m.Joined()) cancel.push_back(m);
  }
  CancelOrder(cancel);
  const int to_mark = std::max(0, delta - not_created);
  if (static_cast<int>(cancel.size()) < to_mark || delta > read.replicas) {
    return Fail(Error::Code::kConflict,
                "{}: cannot cancel {} machines: {} replicas, {} not created yet, {} not joined "
                "(the rest have nodes, which are removed one by one)",
                state.group.Describe(), delta, read.replicas, not_created, cancel.size());
  }
  cancel.resize(to_mark);
  return MarkAndScale(state.group, cancel, read, read.replicas - delta, now);
}

Result<void> ClusterApiProvider::DeleteNode(const std::string& pool, const model::Node& node,
                                            Time now) {
  TIDEPOOL_ASSIGN_OR_RETURN(PoolState state, Lookup(pool));
  auto it = std::find_if(state.machines.begin(), state.machines.end(), [&](const Machine& m) {
    return (!node.provider_id.empty() && m.provider_id == node.provider_id) ||
           m.node_name == node.name();
  });
  if (it == state.machines.end()) {
    const auto& ids = state.group.provider_ids;
    if (std::find(ids.begin(), ids.end(), node.provider_id) != ids.end()) {
      // Lowering replicas would let the infrastructure pick any instance, not this one.
      return Fail(Error::Code::kInvalidArgument,
                  "{}: node {} has no Machine; tidepool removes a specific node only through its "
                  "Machine (the MachinePool's infrastructure provider keeps none)",
                  state.group.Describe(), node.name());
    }
    return {};  // gone, or being deleted already
  }
  TIDEPOOL_ASSIGN_OR_RETURN(Scale read, api_.GetScale(state.group));
  if (read.replicas <= 0) {
    return Fail(Error::Code::kConflict, "{}: replicas already 0 while Machine {} exists",
                state.group.Describe(), it->name);
  }
  return MarkAndScale(state.group, {*it}, read, read.replicas - 1, now);
}

std::string ClusterApiProvider::PoolOf(const model::Node& node) const {
  std::lock_guard lock(mu_);
  if (!node.provider_id.empty()) {
    if (auto it = pool_by_provider_id_.find(node.provider_id); it != pool_by_provider_id_.end()) {
      return it->second;
    }
  }
  auto it = pool_by_node_name_.find(node.name());
  return it == pool_by_node_name_.end() ? std::string() : it->second;
}

}  // namespace tidepool::cloud::clusterapi
