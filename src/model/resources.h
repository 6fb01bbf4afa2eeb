// Resources: amounts per resource kind (cpu in millicores, everything else in whole units), the
// currency of fit checks. Resource names are interned so a fit check compares a few integers.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/error.h"
#include "model/quantity.h"

namespace tidepool::model {

using ResourceId = uint16_t;
// Well-known resources have fixed ids; every other name gets the next id on first use.
inline constexpr ResourceId kCpu = 0;
inline constexpr ResourceId kMemory = 1;
inline constexpr ResourceId kEphemeralStorage = 2;
inline constexpr ResourceId kPods = 3;
// nvidia.com/gpu is a base resource too: GPU pods and nodes are this project's daily work, and
// a base amount is stored inline, so their Resources are copied and added without allocating.
inline constexpr ResourceId kNvidiaGpuId = 4;
inline constexpr ResourceId kNumBaseResources = 5;

inline constexpr std::string_view kNvidiaGpu = "nvidia.com/gpu";
inline constexpr std::string_view kAmdGpu = "amd.com/gpu";

// Returns the id for a resource name, interning it on first sight. Thread-safe.
ResourceId InternResource(std::string_view name);
// The name behind an id returned by InternResource. Thread-safe.
std::string_view ResourceName(ResourceId id);
// True for GPU resources (nvidia.com/gpu, amd.com/gpu, and any "<domain>/gpu").
bool IsGpuResource(ResourceId id);

// Resource amounts. Absent means zero. Values: cpu in milli-cores (Quantity::MilliValue),
// others in units (Quantity::Value). Value type; cheap to copy when there are no extended
// resources beside nvidia.com/gpu (no allocation). Other extended resources are rare, so they
// live behind one pointer: a Resources is 48 bytes, and a cluster model holds millions of them.
class Resources {
 public:
  using Extended = std::vector<std::pair<ResourceId, int64_t>>;

  Resources() = default;
  Resources(const Resources& other) { *this = other; }
  Resources& operator=(const Resources& other) {
    base_ = other.base_;
    extended_ = other.extended_ ? std::make_unique<Extended>(*other.extended_) : nullptr;
    return *this;
  }
  Resources(Resources&&) noexcept = default;
  Resources& operator=(Resources&&) noexcept = default;

  // Inline for the base resources: fit checks and bin-packing read them per node.
  int64_t Get(ResourceId id) const { return id < kNumBaseResources ? base_[id] : GetExtended(id); }
  void Set(ResourceId id, int64_t amount);
  // Sets from a Quantity using the scheduler's conversion (milli for cpu, units otherwise).
  void SetQuantity(ResourceId id, const Quantity& q);

  int64_t cpu_milli() const { return base_[kCpu]; }
  int64_t memory() const { return base_[kMemory]; }
  int64_t pods() const { return base_[kPods]; }
  // Sum of all GPU resources (see IsGpuResource).
  int64_t gpus() const;

  Resources& operator+=(const Resources& other);
  Resources& operator-=(const Resources& other);
  friend Resources operator+(Resources a, const Resources& b) { return a += b; }
  friend Resources operator-(Resources a, const Resources& b) { return a -= b; }
  // Per resource max(this, other); used for init containers.
  void MaxWith(const Resources& other);
  bool IsZero() const;
  friend bool operator==(const Resources& a, const Resources& b);

  // Calls f(id, amount) for every resource with a non-zero amount, base resources first, then
  // extended ones in id order.
  template <typename F>
  void ForEach(F&& f) const {
    for (ResourceId i = 0; i < kNumBaseResources; ++i)
      if (base_[i] != 0) f(i, base_[i]);
    for (const auto& [id, amount] : extended())
      if (amount != 0) f(id, amount);
  }

  // Kubernetes-style rendering, e.g. {cpu: 1500m, memory: 4Gi, nvidia.com/gpu: 1}.
  std::string ToString() const;

  // Sorted by id; may hold zero entries after subtraction.
  const Extended& extended() const { return extended_ ? *extended_ : kNoExtended; }

 private:
  int64_t GetExtended(ResourceId id) const;

  std::array<int64_t, kNumBaseResources> base_{};
  static const Extended kNoExtended;
  std::unique_ptr<Extended> extended_;  // null: none
};

// Renders one amount as a Kubernetes quantity string ("1500m" for cpu, "4Gi" for memory).
std::string FormatAmount(ResourceId id, int64_t amount);

}  // namespace tidepool::model
