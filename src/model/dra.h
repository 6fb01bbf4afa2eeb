// Dynamic Resource Allocation (resource.k8s.io/v1): DeviceClass, ResourceClaim(Template) and
// ResourceSlice as plain values, the part of each that scheduling reads. Decoded by kube/codec.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/meta.h"
#include "model/quantity.h"
#include "model/selector.h"

namespace tidepool::model {

// One attribute value of a device: exactly one of int, bool, string or version (semver text).
struct DeviceAttribute {
  enum class Kind : uint8_t { kInt, kBool, kString, kVersion };
  Kind kind = Kind::kString;
  int64_t int_value = 0;
  bool bool_value = false;
  std::string text;  // kString and kVersion

  friend bool operator==(const DeviceAttribute&, const DeviceAttribute&) = default;
};

// Attribute and capacity names are fully qualified here ("gpu.nvidia.com/productName"): the
// decoder prefixes a name without a domain with the driver's name, as the API defines it.
using DeviceAttributes = std::map<std::string, DeviceAttribute, std::less<>>;
using DeviceCapacity = std::map<std::string, Quantity, std::less<>>;
using Counters = std::map<std::string, Quantity, std::less<>>;

// sharedCounters[] of a slice: a named set of counters devices of the pool draw from.
struct CounterSet {
  std::string name;
  Counters counters;
};

// consumesCounters[] of a device: what it takes from a counter set when allocated, so that
// partitions of one physical device (MIG profiles of a GPU) exclude each other.
struct CounterConsumption {
  std::string counter_set;
  Counters counters;
};

struct Device {
  std::string name;
  DeviceAttributes attributes;
  DeviceCapacity capacity;
  std::vector<CounterConsumption> consumes_counters;
};

// Where a slice's devices are: on one node, on the nodes a selector picks, or on every node.
struct ResourceSlice {
  ObjectMeta meta;
  std::string driver;
  std::string pool;
  int64_t pool_generation = 0;
  std::string node_name;
  std::optional<NodeSelector> node_selector;
  bool all_nodes = false;
  std::vector<Device> devices;
  std::vector<CounterSet> shared_counters;

  // Whether the devices can be used by pods on this node.
  bool AvailableOn(const Labels& node_labels, std::string_view node_name) const;
};

struct DeviceClass {
  ObjectMeta meta;
  std::vector<std::string> selectors;  // CEL expressions, all must be true
};

enum class AllocationMode : uint8_t { kExactCount, kAll };

// `exactly` of a request, or one alternative of `firstAvailable`.
struct DeviceSubRequest {
  std::string name;  // the request's name, or the alternative's
  std::string device_class_name;
  std::vector<std::string> selectors;  // CEL expressions, all must be true
  AllocationMode mode = AllocationMode::kExactCount;
  int64_t count = 1;  // kExactCount only
};

struct DeviceRequest {
  std::string name;
  std::optional<DeviceSubRequest> exactly;
  std::vector<DeviceSubRequest> first_available;  // tried in order when `exactly` is absent
};

// constraints[]: every device allocated for `requests` (all requests when empty) has the same
// value of the attribute `match_attribute` (fully qualified).
struct DeviceConstraint {
  std::vector<std::string> requests;
  std::string match_attribute;
};

struct ResourceClaimSpec {
  std::vector<DeviceRequest> requests;
  std::vector<DeviceConstraint> constraints;
};

struct AllocatedDevice {
  std::string request;  // "<request>" or "<request>/<subrequest>"
  std::string driver;
  std::string pool;
  std::string device;
};

struct AllocationResult {
  std::vector<AllocatedDevice> devices;
  std::optional<NodeSelector> node_selector;  // absent: usable from any node
};

struct ConsumerReference {
  std::string resource;  // "pods"
  std::string name;
  std::string uid;
};

struct ResourceClaim {
  ObjectMeta meta;
  ResourceClaimSpec spec;
  std::optional<AllocationResult> allocation;
  std::vector<ConsumerReference> reserved_for;
};

struct ResourceClaimTemplate {
  ObjectMeta meta;
  ResourceClaimSpec spec;
};

// The DRA objects of a cluster, as one state input or the informers hold them.
struct DraObjects {
  std::vector<DeviceClass> device_classes;
  std::vector<ResourceClaim> claims;
  std::vector<ResourceClaimTemplate> claim_templates;
  std::vector<ResourceSlice> slices;

  bool empty() const {
    return device_classes.empty() && claims.empty() && claim_templates.empty() && slices.empty();
  }
};

// "gpu.nvidia.com/memory" for ("gpu.nvidia.com", "memory"); a name that has a domain stays.
std::string QualifiedName(std::string_view driver, std::string_view name);

}  // namespace tidepool::model
