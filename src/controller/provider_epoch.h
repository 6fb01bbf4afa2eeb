// ProviderEpoch: the cloud provider's share of an observation's version (the cluster's share is
// ClusterView::version). It moves when a refresh finds other pool sizes than the last one, or puts
// a node of the view in another pool; between refreshes a provider answers from what it last read
// (cloud/provider.h), so its answers stay what the last refresh made them.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "cloud/provider.h"
#include "controller/ports.h"
#include "model/pool.h"

namespace tidepool::controller {

class ProviderEpoch {
 public:
  // `config` must outlive the epoch and not change.
  explicit ProviderEpoch(const model::AutoscalerConfig& config) : config_(config) {}

  // After a successful refresh that read `sizes`, with the pass's view. A view that changed since
  // the last refresh moves the epoch at once (its pass plans anyway). The first refresh that sees
  // a view again finds each node's pool as the planners do (planner::PoolOf: labels first, the
  // provider's mapping for the nodes they leave unplaced), O(nodes), and moves it too; the next
  // ones ask the provider about those nodes only, and move it when an answer or the sizes differ.
  void Refreshed(const std::vector<cloud::PoolSize>& sizes, const ClusterView& view,
                 const cloud::CloudProvider& provider);
  // Starts at 0; never goes back.
  uint64_t value() const { return epoch_; }

 private:
  // Where the provider's mapping puts each node its labels leave unplaced.
  std::vector<std::pair<size_t, const model::Pool*>> Placed(const ClusterView& view,
                                                            const cloud::CloudProvider& provider,
                                                            bool every_node) const;

  const model::AutoscalerConfig& config_;
  uint64_t epoch_ = 0;
  // What the last refresh read: the view's version and the sizes; and, once a refresh saw that
  // view again, the nodes the provider placed (by index in the view) with their pools (nullptr:
  // unmanaged).
  uint64_t view_version_ = 0;
  std::vector<cloud::PoolSize> sizes_;
  bool placed_known_ = false;
  std::vector<std::pair<size_t, const model::Pool*>> placed_;
};

}  // namespace tidepool::controller
