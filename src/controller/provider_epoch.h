// ProviderEpoch: the cloud provider's share of an observation's version (the cluster's share is
// ClusterView::version). It moves when a refresh finds other pool sizes than the last one, or maps
// a node of the view to another pool; between refreshes a provider answers from what it last
// read (cloud/provider.h), so its answers stay what the last refresh made them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cloud/provider.h"
#include "controller/ports.h"

namespace tidepool::controller {

class ProviderEpoch {
 public:
  // After a successful refresh that read `sizes`, with the pass's view. Asks `provider` for the
  // pool of every node of the view: O(nodes), once per refresh.
  void Refreshed(const std::vector<cloud::PoolSize>& sizes, const ClusterView& view,
                 const cloud::CloudProvider& provider);
  // Starts at 0; never goes back.
  uint64_t value() const { return epoch_; }

 private:
  uint64_t epoch_ = 0;
  // What the last refresh read: the view's version, the sizes and the pool of each node of that
  // view, in the view's order.
  uint64_t view_version_ = 0;
  std::vector<cloud::PoolSize> sizes_;
  std::vector<std::string> pool_of_;
};

}  // namespace tidepool::controller
