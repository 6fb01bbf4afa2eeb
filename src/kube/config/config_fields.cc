#include "kube/config/config_fields.h"

#include <fmt/format.h>

namespace tidepool::kube::config::config_detail {

Result<void> ReadDurationField(const YamlMap& m, std::string_view key, bool allow_zero,
                               Duration& out) {
  const YamlValue* v = m.Find(key);
  if (v == nullptr) return {};
  TIDEPOOL_ASSIGN_OR_RETURN(out, v->ReadDuration(allow_zero));
  return {};
}

Result<void> ReadDurationField(const YamlMap& m, std::string_view key, bool allow_zero,
                               std::optional<Duration>& out) {
  const YamlValue* v = m.Find(key);
  if (v == nullptr) return {};
  TIDEPOOL_ASSIGN_OR_RETURN(out, v->ReadDuration(allow_zero));
  return {};
}

Result<void> ReadFractionField(const YamlMap& m, std::string_view key, double& out) {
  const YamlValue* v = m.Find(key);
  if (v == nullptr) return {};
  TIDEPOOL_ASSIGN_OR_RETURN(out, v->ReadNumber(0, 1, "a number between 0 and 1"));
  return {};
}

// The resource named by a key of `limits`, `capacity` or `allocatable`. A key that is no
// resource name is an error, so a typo such as "MaxNodes" or "gpu" is not taken for a resource.
Result<model::ResourceId> ReadResourceName(const YamlMap::Entry& e,
                                           std::span<const std::string_view> other_keys) {
  if (!IsResourceName(e.key)) {
    std::string message =
        "unknown resource name (expected cpu, memory, ephemeral-storage, pods, hugepages-<size> "
        "or an extended resource with a domain, such as nvidia.com/gpu)";
    std::string_view hint = ClosestName(e.key, other_keys);
    if (e.key == "gpu" || e.key == "gpus") hint = model::kNvidiaGpu;
    if (!hint.empty()) message += fmt::format("; did you mean \"{}\"?", hint);
    return std::unexpected(e.value.MakeError(message));
  }
  return model::InternResource(e.key);
}

}  // namespace tidepool::kube::config::config_detail
