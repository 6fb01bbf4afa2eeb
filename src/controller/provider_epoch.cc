#include "controller/provider_epoch.h"

#include "planner/cluster.h"

namespace tidepool::controller {

std::vector<std::pair<size_t, const model::Pool*>> ProviderEpoch::Placed(
    const ClusterView& view, const cloud::CloudProvider& provider, bool every_node) const {
  planner::PlannerInput input;
  input.config = &config_;
  input.provider_pool_of = [&provider](const model::Node& n) { return provider.PoolOf(n); };
  planner::PoolNames names(config_);
  std::vector<std::pair<size_t, const model::Pool*>> out;
  auto place = [&](size_t i) {
    bool lasting = true;
    const model::Pool* pool = planner::PoolOf(view.nodes[i], input, names, &lasting);
    if (!lasting) out.emplace_back(i, pool);
  };
  if (every_node) {
    for (size_t i = 0; i < view.nodes.size(); ++i) place(i);
  } else {
    for (const auto& [i, _] : placed_) place(i);
  }
  return out;
}

void ProviderEpoch::Refreshed(const std::vector<cloud::PoolSize>& sizes, const ClusterView& view,
                              const cloud::CloudProvider& provider) {
  const bool same_view = view.version != 0 && view.version == view_version_;
  const bool same_sizes = sizes == sizes_;
  view_version_ = view.version;
  sizes_ = sizes;
  if (!same_view) {
    ++epoch_;
    placed_known_ = false;
    placed_.clear();
    return;
  }
  if (!placed_known_) {
    placed_ = Placed(view, provider, /*every_node=*/true);
    placed_known_ = true;
    ++epoch_;  // nothing to compare with: the provider may have changed since the view did
    return;
  }
  std::vector<std::pair<size_t, const model::Pool*>> placed =
      Placed(view, provider, /*every_node=*/false);
  if (!same_sizes || placed != placed_) ++epoch_;
  placed_ = std::move(placed);
}

}  // namespace tidepool::controller
