// The field readers the config loader's files share (autoscaler_config.cc, pool_config.cc):
// integers, durations and fractions with range checks, and resource names and lists.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string_view>

#include "base/error.h"
#include "base/time.h"
#include "kube/config/yaml_reader.h"
#include "model/pool.h"
#include "model/quantity.h"
#include "model/resources.h"

namespace tidepool::kube::config::config_detail {

inline constexpr int64_t kInt32Min = std::numeric_limits<int32_t>::min();
inline constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
inline constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// Reads `key` of `m` as an integer in [lo, hi] into `out` when present.
template <typename Int>
Result<void> ReadIntField(const YamlMap& m, std::string_view key, int64_t lo, int64_t hi,
                          std::string_view what, Int& out) {
  const YamlValue* v = m.Find(key);
  if (v == nullptr) return {};
  TIDEPOOL_ASSIGN_OR_RETURN(int64_t n, v->ReadInt(lo, hi, what));
  out = static_cast<Int>(n);
  return {};
}

// Reads `key` of `m` as a duration into `out` when present.
Result<void> ReadDurationField(const YamlMap& m, std::string_view key, bool allow_zero,
                               Duration& out);
Result<void> ReadDurationField(const YamlMap& m, std::string_view key, bool allow_zero,
                               std::optional<Duration>& out);
// Reads `key` of `m` as a number between 0 and 1 into `out` when present.
Result<void> ReadFractionField(const YamlMap& m, std::string_view key, double& out);

// The resource named by a key of `limits`, `capacity` or `allocatable`. A key that is no
// resource name is an error, so a typo such as "MaxNodes" or "gpu" is not taken for a resource.
Result<model::ResourceId> ReadResourceName(const YamlMap::Entry& e,
                                           std::span<const std::string_view> other_keys = {});

// A resource list (`capacity:`, `allocatable:`): every entry is a valid resource name with a
// non-negative quantity. Calls `set(id, amount, entry)` for each.
template <typename F>
Result<void> ParseResourceList(const YamlMap& m, F&& set) {
  for (const auto& e : m.entries()) {
    TIDEPOOL_ASSIGN_OR_RETURN(model::ResourceId id, ReadResourceName(e));
    TIDEPOOL_ASSIGN_OR_RETURN(model::Quantity q, e.value.ReadQuantity());
    model::Resources one;
    one.SetQuantity(id, q);
    TIDEPOOL_RETURN_IF_ERROR(set(id, one.Get(id), e.value));
  }
  return {};
}

// The key and value lists of `pools:`, defined with the loader's other lists in
// autoscaler_config.cc, where the configuration reference test reads them all.
extern const std::string_view kPoolKeys[13];
extern const std::string_view kWarmKeys[4];
extern const std::string_view kPredictiveKeys[4];
extern const std::string_view kTemplateKeys[5];
extern const std::string_view kTaintKeys[3];
extern const std::string_view kDeviceKeys[4];
extern const std::string_view kCapacityTypes[2];
extern const std::string_view kTaintEffects[3];
extern const std::string_view kPoolScaleDownKeys[2];
extern const std::string_view kScaleDownModes[2];
// The provider types that can stop machines (scaleDown.mode deallocate).
extern const std::string_view kStoppingProviders[4];

// One item of `pools:`.
// kConfig: the config defines the pool whole. kNodeGroup (provider type clusterapi): the pool is a
// node group whose size and template come from the cluster; min, max and template are refused.
enum class PoolSource { kConfig, kNodeGroup };
// `provider_type` is provider.type, against which pools[].scaleDown.mode is checked.
Result<void> ParsePool(const YamlValue& v, model::Pool& pool, PoolSource source,
                       std::string_view provider_type);

}  // namespace tidepool::kube::config::config_detail
