#include "model/node.h"

#include <fmt/format.h>

namespace tidepool::model {

std::string TaintTimestamp(Time now) {
  return fmt::format(
      "{}", std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count());
}

}  // namespace tidepool::model
