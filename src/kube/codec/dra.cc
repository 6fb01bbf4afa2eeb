#include "kube/codec/dra.h"

#include <nlohmann/json.hpp>

#include "kube/codec/decode_common.h"

namespace tidepool::kube::codec {
namespace {

using decode_detail::DecodeMeta;
using decode_detail::DecodeNodeSelectorTerm;
using decode_detail::DecodeObject;
using decode_detail::ExpectObject;
using decode_detail::ForEachItem;

constexpr EnumName<model::AllocationMode> kAllocationModes[] = {
    {"ExactCount", model::AllocationMode::kExactCount},
    {"All", model::AllocationMode::kAll},
};

Result<void> RequireName(const Json& obj, std::string_view key, const FieldPath& path,
                         std::string& out, std::string_view expected) {
  TIDEPOOL_RETURN_IF_ERROR(ReadString(obj, key, path, out));
  if (out.empty()) return std::unexpected(TypeError(path.Key(key), expected, Find(obj, key)));
  return {};
}

// selectors[]: each {cel: {expression}}.
Result<void> DecodeSelectors(const Json& obj, const FieldPath& path,
                             std::vector<std::string>& out) {
  return ForEachItem(obj, "selectors", path,
                     [&](const Json& s, const FieldPath& p) -> Result<void> {
                       TIDEPOOL_RETURN_IF_ERROR(ExpectObject(s, p));
                       TIDEPOOL_ASSIGN_OR_RETURN(const Json* cel, ReadObject(s, "cel", p));
                       return RequireName(*cel, "expression", p.Key("cel"), out.emplace_back(),
                                          "a CEL expression");
                     });
}

// v1.NodeSelector: nodeSelectorTerms[].
Result<void> DecodeNodeSelector(const Json& obj, std::string_view key, const FieldPath& path,
                                std::optional<model::NodeSelector>& out) {
  const Json* sel = Find(obj, key);
  if (sel == nullptr) return {};
  FieldPath sel_path = path.Key(key);
  TIDEPOOL_RETURN_IF_ERROR(ExpectObject(*sel, sel_path));
  model::NodeSelector ns;
  TIDEPOOL_RETURN_IF_ERROR(
      ForEachItem(*sel, "nodeSelectorTerms", sel_path, [&](const Json& t, const FieldPath& p) {
        return DecodeNodeSelectorTerm(t, p, ns.terms.emplace_back());
      }));
  out = std::move(ns);
  return {};
}

Result<void> DecodeSubRequest(const Json& r, const FieldPath& path, model::DeviceSubRequest& out) {
  TIDEPOOL_RETURN_IF_ERROR(ExpectObject(r, path));
  TIDEPOOL_RETURN_IF_ERROR(
      RequireName(r, "deviceClassName", path, out.device_class_name, "the name of a DeviceClass"));
  TIDEPOOL_RETURN_IF_ERROR(DecodeSelectors(r, path, out.selectors));
  TIDEPOOL_RETURN_IF_ERROR(ReadEnum(r, "allocationMode", path, kAllocationModes, out.mode));
  std::optional<int64_t> count;
  TIDEPOOL_RETURN_IF_ERROR(ReadInt64(r, "count", path, count));
  if (count) {
    if (*count < 1 || out.mode != model::AllocationMode::kExactCount) {
      return std::unexpected(TypeError(path.Key("count"),
                                       "a count of at least 1, with allocationMode ExactCount",
                                       Find(r, "count")));
    }
    out.count = *count;
  }
  return {};
}

Result<void> DecodeRequest(const Json& r, const FieldPath& path, model::DeviceRequest& out) {
  TIDEPOOL_RETURN_IF_ERROR(ExpectObject(r, path));
  TIDEPOOL_RETURN_IF_ERROR(RequireName(r, "name", path, out.name, "a request name"));
  const Json* exactly = Find(r, "exactly");
  const Json* first = Find(r, "firstAvailable");
  if ((exactly == nullptr) == (first == nullptr)) {
    return std::unexpected(FieldError(path, "expected exactly one of exactly and firstAvailable"));
  }
  if (exactly != nullptr) {
    out.exactly.emplace();
    out.exactly->name = out.name;
    return DecodeSubRequest(*exactly, path.Key("exactly"), *out.exactly);
  }
  TIDEPOOL_RETURN_IF_ERROR(ForEachItem(
      r, "firstAvailable", path, [&](const Json& s, const FieldPath& p) -> Result<void> {
        auto& sub = out.first_available.emplace_back();
        TIDEPOOL_RETURN_IF_ERROR(ExpectObject(s, p));
        TIDEPOOL_RETURN_IF_ERROR(RequireName(s, "name", p, sub.name, "a subrequest name"));
        return DecodeSubRequest(s, p, sub);
      }));
  if (out.first_available.empty()) {
    return std::unexpected(TypeError(path.Key("firstAvailable"), "at least one subrequest", first));
  }
  return {};
}

Result<void> DecodeClaimSpec(const Json& obj, const FieldPath& root,
                             model::ResourceClaimSpec& out) {
  TIDEPOOL_ASSIGN_OR_RETURN(const Json* spec, ReadObject(obj, "spec", root));
  FieldPath spec_path = root.Key("spec");
  TIDEPOOL_ASSIGN_OR_RETURN(const Json* devices, ReadObject(*spec, "devices", spec_path));
  FieldPath path = spec_path.Key("devices");
  TIDEPOOL_RETURN_IF_ERROR(
      ForEachItem(*devices, "requests", path, [&](const Json& r, const FieldPath& p) {
        return DecodeRequest(r, p, out.requests.emplace_back());
      }));
  return ForEachItem(
      *devices, "constraints", path, [&](const Json& c, const FieldPath& p) -> Result<void> {
        TIDEPOOL_RETURN_IF_ERROR(ExpectObject(c, p));
        auto& constraint = out.constraints.emplace_back();
        TIDEPOOL_RETURN_IF_ERROR(ReadStringList(c, "requests", p, constraint.requests));
        // distinctAttribute and other constraint kinds are not modelled: a constraint without
        // matchAttribute constrains nothing here.
        return ReadString(c, "matchAttribute", p, constraint.match_attribute);
      });
}

Result<void> DecodeAllocation(const Json& status, const FieldPath& path,
                              model::ResourceClaim& claim) {
  const Json* alloc = Find(status, "allocation");
  if (alloc == nullptr) return {};
  FieldPath alloc_path = path.Key("allocation");
  TIDEPOOL_RETURN_IF_ERROR(ExpectObject(*alloc, alloc_path));
  model::AllocationResult result;
  TIDEPOOL_ASSIGN_OR_RETURN(const Json* devices, ReadObject(*alloc, "devices", alloc_path));
  TIDEPOOL_RETURN_IF_ERROR(ForEachItem(
      *devices, "results", alloc_path.Key("devices"),
      [&](const Json& r, const FieldPath& p) -> Result<void> {
        TIDEPOOL_RETURN_IF_ERROR(ExpectObject(r, p));
        auto& d = result.devices.emplace_back();
        TIDEPOOL_RETURN_IF_ERROR(ReadString(r, "request", p, d.request));
        TIDEPOOL_RETURN_IF_ERROR(RequireName(r, "driver", p, d.driver, "a driver name"));
        TIDEPOOL_RETURN_IF_ERROR(RequireName(r, "pool", p, d.pool, "a pool name"));
        return RequireName(r, "device", p, d.device, "a device name");
      }));
  TIDEPOOL_RETURN_IF_ERROR(
      DecodeNodeSelector(*alloc, "nodeSelector", alloc_path, result.node_selector));
  claim.allocation = std::move(result);
  return {};
}

Result<void> DecodeAttribute(const Json& a, const FieldPath& path, model::DeviceAttribute& out) {
  TIDEPOOL_RETURN_IF_ERROR(ExpectObject(a, path));
  int set = 0;
  std::optional<int64_t> i;
  TIDEPOOL_RETURN_IF_ERROR(ReadInt64(a, "int", path, i));
  if (i) out = {.kind = model::DeviceAttribute::Kind::kInt, .int_value = *i}, ++set;
  if (Find(a, "bool") != nullptr) {
    out.kind = model::DeviceAttribute::Kind::kBool;
    TIDEPOOL_RETURN_IF_ERROR(ReadBool(a, "bool", path, out.bool_value));
    ++set;
  }
  if (Find(a, "string") != nullptr) {
    out.kind = model::DeviceAttribute::Kind::kString;
    TIDEPOOL_RETURN_IF_ERROR(ReadString(a, "string", path, out.text));
    ++set;
  }
  if (Find(a, "version") != nullptr) {
    out.kind = model::DeviceAttribute::Kind::kVersion;
    TIDEPOOL_RETURN_IF_ERROR(ReadString(a, "version", path, out.text));
    ++set;
  }
  if (set != 1) {
    return std::unexpected(TypeError(path, "exactly one of int, bool, string and version", &a));
  }
  return {};
}

// A map of name -> {value: quantity} (device capacity, counters).
Result<void> DecodeQuantityMap(const Json& obj, std::string_view key, const FieldPath& path,
                               std::string_view driver,
                               std::map<std::string, model::Quantity, std::less<>>& out) {
  TIDEPOOL_ASSIGN_OR_RETURN(const Json* map, ReadObject(obj, key, path));
  FieldPath map_path = path.Key(key);
  for (const auto& [name, v] : map->items()) {
    FieldPath p = map_path.Key(name);
    TIDEPOOL_RETURN_IF_ERROR(ExpectObject(v, p));
    const Json* value = Find(v, "value");
    if (value == nullptr) return std::unexpected(TypeError(p.Key("value"), "a quantity", value));
    TIDEPOOL_ASSIGN_OR_RETURN(model::Quantity q, QuantityFromJson(*value, p.Key("value")));
    out[driver.empty() ? name : model::QualifiedName(driver, name)] = q;
  }
  return {};
}

Result<void> DecodeDevice(const Json& d, const FieldPath& path, std::string_view driver,
                          model::Device& out) {
  TIDEPOOL_RETURN_IF_ERROR(ExpectObject(d, path));
  TIDEPOOL_RETURN_IF_ERROR(RequireName(d, "name", path, out.name, "a device name"));
  TIDEPOOL_ASSIGN_OR_RETURN(const Json* attrs, ReadObject(d, "attributes", path));
  FieldPath attrs_path = path.Key("attributes");
  for (const auto& [name, v] : attrs->items()) {
    TIDEPOOL_RETURN_IF_ERROR(DecodeAttribute(v, attrs_path.Key(name),
                                             out.attributes[model::QualifiedName(driver, name)]));
  }
  TIDEPOOL_RETURN_IF_ERROR(DecodeQuantityMap(d, "capacity", path, driver, out.capacity));
  return ForEachItem(d, "consumesCounters", path,
                     [&](const Json& c, const FieldPath& p) -> Result<void> {
                       TIDEPOOL_RETURN_IF_ERROR(ExpectObject(c, p));
                       auto& use = out.consumes_counters.emplace_back();
                       TIDEPOOL_RETURN_IF_ERROR(
                           RequireName(c, "counterSet", p, use.counter_set, "a counter set name"));
                       return DecodeQuantityMap(c, "counters", p, "", use.counters);
                     });
}

}  // namespace

Result<model::DeviceClass> DecodeDeviceClass(const nlohmann::json& obj) {
  return decode_detail::DecodeObject<model::DeviceClass>(
      "DeviceClass", obj, [&](model::DeviceClass& dc) -> Result<void> {
        FieldPath root;
        TIDEPOOL_RETURN_IF_ERROR(DecodeMeta(obj, root, dc.meta));
        TIDEPOOL_ASSIGN_OR_RETURN(const Json* spec, ReadObject(obj, "spec", root));
        return DecodeSelectors(*spec, root.Key("spec"), dc.selectors);
      });
}

Result<model::ResourceClaim> DecodeResourceClaim(const nlohmann::json& obj) {
  return DecodeObject<model::ResourceClaim>(
      "ResourceClaim", obj, [&](model::ResourceClaim& claim) -> Result<void> {
        FieldPath root;
        TIDEPOOL_RETURN_IF_ERROR(DecodeMeta(obj, root, claim.meta));
        TIDEPOOL_RETURN_IF_ERROR(DecodeClaimSpec(obj, root, claim.spec));
        TIDEPOOL_ASSIGN_OR_RETURN(const Json* status, ReadObject(obj, "status", root));
        FieldPath status_path = root.Key("status");
        TIDEPOOL_RETURN_IF_ERROR(DecodeAllocation(*status, status_path, claim));
        return ForEachItem(*status, "reservedFor", status_path,
                           [&](const Json& r, const FieldPath& p) -> Result<void> {
                             TIDEPOOL_RETURN_IF_ERROR(ExpectObject(r, p));
                             auto& ref = claim.reserved_for.emplace_back();
                             TIDEPOOL_RETURN_IF_ERROR(ReadString(r, "resource", p, ref.resource));
                             TIDEPOOL_RETURN_IF_ERROR(ReadString(r, "name", p, ref.name));
                             return ReadString(r, "uid", p, ref.uid);
                           });
      });
}

Result<model::ResourceClaimTemplate> DecodeResourceClaimTemplate(const nlohmann::json& obj) {
  return DecodeObject<model::ResourceClaimTemplate>(
      "ResourceClaimTemplate", obj, [&](model::ResourceClaimTemplate& t) -> Result<void> {
        FieldPath root;
        TIDEPOOL_RETURN_IF_ERROR(DecodeMeta(obj, root, t.meta));
        TIDEPOOL_ASSIGN_OR_RETURN(const Json* spec, ReadObject(obj, "spec", root));
        // spec.spec is the claim's spec.
        return DecodeClaimSpec(*spec, root.Key("spec"), t.spec);
      });
}

Result<model::ResourceSlice> DecodeResourceSlice(const nlohmann::json& obj) {
  return DecodeObject<model::ResourceSlice>(
      "ResourceSlice", obj, [&](model::ResourceSlice& s) -> Result<void> {
        FieldPath root;
        TIDEPOOL_RETURN_IF_ERROR(DecodeMeta(obj, root, s.meta));
        TIDEPOOL_ASSIGN_OR_RETURN(const Json* spec, ReadObject(obj, "spec", root));
        FieldPath path = root.Key("spec");
        TIDEPOOL_RETURN_IF_ERROR(RequireName(*spec, "driver", path, s.driver, "a driver name"));
        TIDEPOOL_ASSIGN_OR_RETURN(const Json* pool, ReadObject(*spec, "pool", path));
        TIDEPOOL_RETURN_IF_ERROR(
            RequireName(*pool, "name", path.Key("pool"), s.pool, "a pool name"));
        std::optional<int64_t> generation;
        TIDEPOOL_RETURN_IF_ERROR(ReadInt64(*pool, "generation", path.Key("pool"), generation));
        s.pool_generation = generation.value_or(0);
        TIDEPOOL_RETURN_IF_ERROR(ReadString(*spec, "nodeName", path, s.node_name));
        TIDEPOOL_RETURN_IF_ERROR(DecodeNodeSelector(*spec, "nodeSelector", path, s.node_selector));
        TIDEPOOL_RETURN_IF_ERROR(ReadBool(*spec, "allNodes", path, s.all_nodes));
        int where = !s.node_name.empty() + s.node_selector.has_value() + s.all_nodes;
        if (where != 1) {
          return std::unexpected(
              FieldError(path, "expected exactly one of nodeName, nodeSelector and allNodes"));
        }
        TIDEPOOL_RETURN_IF_ERROR(
            ForEachItem(*spec, "devices", path, [&](const Json& d, const FieldPath& p) {
              return DecodeDevice(d, p, s.driver, s.devices.emplace_back());
            }));
        return ForEachItem(
            *spec, "sharedCounters", path, [&](const Json& c, const FieldPath& p) -> Result<void> {
              TIDEPOOL_RETURN_IF_ERROR(ExpectObject(c, p));
              auto& set = s.shared_counters.emplace_back();
              TIDEPOOL_RETURN_IF_ERROR(RequireName(c, "name", p, set.name, "a counter set name"));
              return DecodeQuantityMap(c, "counters", p, "", set.counters);
            });
      });
}

}  // namespace tidepool::kube::codec
