// ObjectMeta and owner references: the identity and labels every Kubernetes object carries.
// Labels and annotations are ordered maps so output and hashing are deterministic.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
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

}  // namespace tidepool::model
