// Doubling delays: a pool's scale-up backoff and a refused eviction's retry both wait
// `initial`, then twice as long after each further failure, up to `max`.
#pragma once

#include <algorithm>

#include "base/time.h"

namespace tidepool::autoscaler {

// initial × 2^doublings, capped at max (never above max, even when initial is).
inline Duration DoublingDelay(Duration initial, Duration max, int doublings) {
  Duration d = initial;
  for (int i = 0; i < doublings && d < max; ++i) d *= 2;
  return std::min(d, max);
}

}  // namespace tidepool::autoscaler
