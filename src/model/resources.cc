#include "model/resources.h"

#include <algorithm>
#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>

#include "base/check.h"

namespace tidepool::model {
namespace {

// Interned names. A deque keeps string storage stable so string_views stay valid.
struct Registry {
  std::mutex mu;
  std::deque<std::string> names;
  std::unordered_map<std::string_view, ResourceId> ids;
  // Written under `mu` before an id is handed out, so any holder of an id may read its flag
  // without the lock (the id itself was obtained through the lock).
  std::array<bool, UINT16_MAX + 1> gpu{};

  Registry() {
    for (std::string_view n : {"cpu", "memory", "ephemeral-storage", "pods", "nvidia.com/gpu"})
      Add(n);
  }
  ResourceId Add(std::string_view name) {
    TIDEPOOL_CHECK_MSG(names.size() < UINT16_MAX, "too many distinct resource names");
    names.emplace_back(name);
    auto id = static_cast<ResourceId>(names.size() - 1);
    ids.emplace(names.back(), id);
    std::string_view n = names.back();
    gpu[id] = n.size() > 4 && n.ends_with("/gpu");
    return id;
  }
};

Registry& GetRegistry() {
  static Registry* r = new Registry();
  return *r;
}

}  // namespace

ResourceId InternResource(std::string_view name) {
  if (name == "cpu") return kCpu;
  if (name == "memory") return kMemory;
  if (name == "pods") return kPods;
  if (name == "ephemeral-storage") return kEphemeralStorage;
  if (name == kNvidiaGpu) return kNvidiaGpuId;
  Registry& r = GetRegistry();
  std::lock_guard lock(r.mu);
  auto it = r.ids.find(name);
  if (it != r.ids.end()) return it->second;
  return r.Add(name);
}

std::string_view ResourceName(ResourceId id) {
  // The well-known names need no lock: failure messages on hot paths ask for them most.
  static constexpr std::string_view kBase[] = {"cpu", "memory", "ephemeral-storage", "pods",
                                               kNvidiaGpu};
  if (id < kNumBaseResources) return kBase[id];
  Registry& r = GetRegistry();
  std::lock_guard lock(r.mu);
  TIDEPOOL_CHECK(id < r.names.size());
  return r.names[id];
}

bool IsGpuResource(ResourceId id) {
  if (id < kNumBaseResources) return id == kNvidiaGpuId;
  return GetRegistry().gpu[id];
}

const Resources::Extended Resources::kNoExtended;

int64_t Resources::GetExtended(ResourceId id) const {
  if (!extended_) return 0;
  auto it = std::lower_bound(extended_->begin(), extended_->end(), id,
                             [](const auto& e, ResourceId v) { return e.first < v; });
  return it != extended_->end() && it->first == id ? it->second : 0;
}

void Resources::Set(ResourceId id, int64_t amount) {
  if (id < kNumBaseResources) {
    base_[id] = amount;
    return;
  }
  if (!extended_) {
    if (amount == 0) return;  // absent is zero
    extended_ = std::make_unique<Extended>();
  }
  auto it = std::lower_bound(extended_->begin(), extended_->end(), id,
                             [](const auto& e, ResourceId v) { return e.first < v; });
  if (it != extended_->end() && it->first == id) {
    it->second = amount;
  } else {
    extended_->insert(it, {id, amount});
  }
}

void Resources::SetQuantity(ResourceId id, const Quantity& q) {
  Set(id, id == kCpu ? q.MilliValue() : q.Value());
}

int64_t Resources::gpus() const {
  int64_t n = base_[kNvidiaGpuId];
  for (const auto& [id, amount] : extended())
    if (IsGpuResource(id)) n += amount;
  return n;
}

Resources& Resources::operator+=(const Resources& other) {
  for (size_t i = 0; i < kNumBaseResources; ++i) base_[i] += other.base_[i];
  for (const auto& [id, amount] : other.extended()) Set(id, Get(id) + amount);
  return *this;
}

Resources& Resources::operator-=(const Resources& other) {
  for (size_t i = 0; i < kNumBaseResources; ++i) base_[i] -= other.base_[i];
  for (const auto& [id, amount] : other.extended()) Set(id, Get(id) - amount);
  return *this;
}

void Resources::MaxWith(const Resources& other) {
  for (size_t i = 0; i < kNumBaseResources; ++i) base_[i] = std::max(base_[i], other.base_[i]);
  for (const auto& [id, amount] : other.extended()) Set(id, std::max(Get(id), amount));
}

bool Resources::IsZero() const {
  for (int64_t v : base_)
    if (v != 0) return false;
  for (const auto& e : extended())
    if (e.second != 0) return false;
  return true;
}

bool operator==(const Resources& a, const Resources& b) {
  if (a.base_ != b.base_) return false;
  // Compare extended entries ignoring zero-valued ones.
  auto nonzero = [](const Resources& r) {
    std::vector<std::pair<ResourceId, int64_t>> v;
    for (const auto& e : r.extended())
      if (e.second != 0) v.push_back(e);
    return v;
  };
  return nonzero(a) == nonzero(b);
}

std::string FormatAmount(ResourceId id, int64_t amount) {
  if (id == kCpu) return Quantity::FromMilli(amount).ToString();
  if (id == kMemory || id == kEphemeralStorage || ResourceName(id).starts_with("hugepages-")) {
    return Quantity::FromUnits(amount, Quantity::Format::kBinarySI).ToString();
  }
  return std::to_string(amount);
}

std::string Resources::ToString() const {
  std::string out = "{";
  bool first = true;
  ForEach([&](ResourceId id, int64_t amount) {
    if (!first) out += ", ";
    first = false;
    out += ResourceName(id);
    out += ": ";
    out += FormatAmount(id, amount);
  });
  return out + "}";
}

}  // namespace tidepool::model
