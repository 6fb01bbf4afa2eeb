#include "controller/provider_epoch.h"

#include <utility>

namespace tidepool::controller {

void ProviderEpoch::Refreshed(const std::vector<cloud::PoolSize>& sizes, const ClusterView& view,
                              const cloud::CloudProvider& provider) {
  std::vector<std::string> pool_of;
  pool_of.reserve(view.nodes.size());
  for (const model::Node& n : view.nodes) pool_of.push_back(provider.PoolOf(n));
  // Another view (or an unknown one) has other nodes: the version moves with it anyway, and the
  // answers are not comparable; move the epoch too rather than compare.
  bool same =
      view.version != 0 && view.version == view_version_ && sizes == sizes_ && pool_of == pool_of_;
  if (!same) ++epoch_;
  view_version_ = view.version;
  sizes_ = sizes;
  pool_of_ = std::move(pool_of);
}

}  // namespace tidepool::controller
