#include "model/capacity_buffer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>

namespace tidepool::model {

std::string_view BufferConditionName(BufferConditionType type) {
  switch (type) {
    case BufferConditionType::kReadyForProvisioning:
      return "ReadyForProvisioning";
    case BufferConditionType::kProvisioning:
      return "Provisioning";
  }
  return "";
}

std::optional<BufferConditionType> BufferConditionFrom(std::string_view name) {
  for (auto t : {BufferConditionType::kReadyForProvisioning, BufferConditionType::kProvisioning}) {
    if (BufferConditionName(t) == name) return t;
  }
  return std::nullopt;
}

const BufferCondition* BufferStatus::Find(BufferConditionType type) const {
  for (const BufferCondition& c : conditions)
    if (c.type == type) return &c;
  return nullptr;
}

namespace {

// The copies whose total request fits within the limits, or nullopt when the pod requests none
// of the limited resources.
std::optional<int32_t> LimitCopies(const CapacityBuffer& buffer, const Resources& request) {
  std::optional<int64_t> copies;
  for (ResourceId id : buffer.limited) {
    int64_t per = request.Get(id);
    if (per <= 0) continue;
    int64_t n = buffer.limits->Get(id) / per;
    copies = copies ? std::min(*copies, n) : n;
  }
  if (!copies) return std::nullopt;
  return static_cast<int32_t>(std::min<int64_t>(*copies, std::numeric_limits<int32_t>::max()));
}

}  // namespace

Result<BufferReplicas> ResolveBufferReplicas(const CapacityBuffer& buffer, const Resources& request,
                                             std::optional<int32_t> scalable_replicas) {
  BufferReplicas out;
  std::optional<int32_t> wanted;
  std::vector<std::string> words;
  if (buffer.percentage) {
    if (!buffer.scalable_ref || !scalable_replicas) {
      return Fail(Error::Code::kInvalidArgument,
                  "spec.percentage applies only to a buffer with a spec.scalableRef");
    }
    int64_t n = (static_cast<int64_t>(*scalable_replicas) * *buffer.percentage + 99) / 100;
    if (n < 1 && *scalable_replicas > 0 && *buffer.percentage > 0) n = 1;
    wanted = static_cast<int32_t>(n);
    words.push_back(fmt::format("percentage {}% of {} {} replicas = {}", *buffer.percentage,
                                buffer.scalable_ref->kind, *scalable_replicas, n));
  }
  if (buffer.replicas) {
    if (!wanted || *buffer.replicas < *wanted) wanted = *buffer.replicas;
    words.push_back(fmt::format("replicas {}", *buffer.replicas));
  }
  std::optional<int32_t> limit;
  if (buffer.limits) limit = LimitCopies(buffer, request);
  if (!wanted) {
    out.replicas = limit.value_or(0);
    out.capped_by_limits = limit.has_value();
    out.words = limit ? fmt::format("as many as the limits allow: {}", *limit)
                      : std::string("no replicas, percentage or limits that apply: 0");
    return out;
  }
  out.replicas = *wanted;
  std::string said = fmt::format("{}", fmt::join(words, ", "));
  if (limit && *limit < *wanted) {
    out.replicas = *limit;
    out.capped_by_limits = true;
    out.words = fmt::format("{}; capped to {} by limits", said, *limit);
  } else {
    out.words = words.size() > 1 ? fmt::format("{}: the smaller, {}", said, *wanted) : said;
  }
  return out;
}

}  // namespace tidepool::model
