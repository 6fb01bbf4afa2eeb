// ObjectMeta and owner references: the identity and labels every Kubernetes object carries.
// Labels and annotations are ordered maps so output and hashing are deterministic.
#pragma once

#include <concepts>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/time.h"

namespace tidepool::model {

using Labels = std::map<std::string, std::string, std::less<>>;
using Annotations = std::map<std::string, std::string, std::less<>>;

struct OwnerReference {
  std::string api_version;  // "apps/v1", "batch/v1", "kubeflow.org/v1", ...
  std::string kind;         // "ReplicaSet", "Job", "DaemonSet", "PyTorchJob", ...
  std::string name;
  std::string uid;
  bool controller = false;
  friend bool operator==(const OwnerReference&, const OwnerReference&) = default;
};

struct ObjectMeta {
  std::string name;
  std::string namespace_;  // empty for cluster-scoped objects
  std::string uid;
  std::string resource_version;
  // metadata.generation (0 when the object has none).
  int64_t generation = 0;
  Labels labels;
  Annotations annotations;
  std::vector<OwnerReference> owner_references;
  std::optional<Time> creation_timestamp;
  std::optional<Time> deletion_timestamp;

  // Field by field, resource_version included (SameButVersion leaves it out).
  friend bool operator==(const ObjectMeta&, const ObjectMeta&) = default;

  // "namespace/name", or "name" for cluster-scoped objects.
  std::string Key() const {
    if (namespace_.empty()) return name;
    std::string key;
    key.reserve(namespace_.size() + 1 + name.size());
    key.append(namespace_).append(1, '/').append(name);
    return key;
  }
  // The owner reference with controller=true, if any.
  const OwnerReference* Controller() const {
    for (const auto& o : owner_references)
      if (o.controller) return &o;
    return nullptr;
  }
  // The annotation value, or nullptr.
  const std::string* Annotation(std::string_view key) const {
    auto it = annotations.find(key);
    return it == annotations.end() ? nullptr : &it->second;
  }
  const std::string* Label(std::string_view key) const {
    auto it = labels.find(key);
    return it == labels.end() ? nullptr : &it->second;
  }
};

// Whether `fresh`, decoded from a later write of the object `old` was decoded from, holds what
// `old` holds: equal in everything but metadata.resourceVersion. A write that changes nothing a
// decoder reads (a kubelet's node status heartbeat, a pod condition no field here keeps) is one.
// `fresh` comes back as it was.
template <typename T>
requires std::equality_comparable<T> && requires(T& t) { t.meta.resource_version; }
bool SameButVersion(const T& old, T& fresh) {
  std::string version = std::exchange(fresh.meta.resource_version, old.meta.resource_version);
  const bool same = old == fresh;
  fresh.meta.resource_version = std::move(version);
  return same;
}

}  // namespace tidepool::model
