#include "model/pdb.h"

namespace tidepool::model {

int32_t IntOrPercent::Resolve(int32_t total, bool round_up) const {
  if (!percent) return value;
  int64_t scaled = int64_t(value) * total;
  return static_cast<int32_t>(round_up ? (scaled + 99) / 100 : scaled / 100);
}

bool PodDisruptionBudget::Selects(const ObjectMeta& pod) const {
  if (!selector || pod.namespace_ != meta.namespace_) return false;
  return selector->Matches(pod.labels);
}

}  // namespace tidepool::model
