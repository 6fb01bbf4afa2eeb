#include "model/pool.h"

namespace tidepool::model {

std::string_view CapacityTypeName(CapacityType t) {
  return t == CapacityType::kSpot ? "spot" : "on-demand";
}

}  // namespace tidepool::model
