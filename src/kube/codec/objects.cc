#include "kube/codec/objects.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "kube/codec/decode_common.h"

namespace tidepool::kube::codec {
namespace {

using decode_detail::AddDaemonPodTolerations;
using decode_detail::DecodeMeta;
using decode_detail::DecodeObject;
using decode_detail::DecodeOptionalLabelSelector;
using decode_detail::DecodePodObject;
using decode_detail::DecodeTaint;
using decode_detail::ExpectObject;
using decode_detail::ForEachItem;

}  // namespace

Result<model::Node> DecodeNode(const nlohmann::json& obj) {
  return DecodeObject<model::Node>("Node", obj, [&](model::Node& node) -> Result<void> {
    FieldPath root;
    TIDEPOOL_RETURN_IF_ERROR(DecodeMeta(obj, root, node.meta));

    TIDEPOOL_ASSIGN_OR_RETURN(const Json* spec, ReadObject(obj, "spec", root));
    FieldPath spec_path = root.Key("spec");
    TIDEPOOL_RETURN_IF_ERROR(ReadBool(*spec, "unschedulable", spec_path, node.unschedulable));
    TIDEPOOL_RETURN_IF_ERROR(
        ForEachItem(*spec, "taints", spec_path, [&](const Json& t, const FieldPath& p) {
          return DecodeTaint(t, p, node.taints.emplace_back());
        }));
    TIDEPOOL_RETURN_IF_ERROR(ReadString(*spec, "providerID", spec_path, node.provider_id));

    TIDEPOOL_ASSIGN_OR_RETURN(const Json* status, ReadObject(obj, "status", root));
    FieldPath status_path = root.Key("status");
    TIDEPOOL_RETURN_IF_ERROR(ReadResourceList(*status, "capacity", status_path, node.capacity));
    // A node without allocatable (a hand-written one) can use its whole capacity.
    const Json* allocatable = Find(*status, "allocatable");
    if (allocatable == nullptr || (allocatable->is_object() && allocatable->empty())) {
      node.allocatable = node.capacity;
    } else {
      TIDEPOOL_RETURN_IF_ERROR(
          ReadResourceList(*status, "allocatable", status_path, node.allocatable));
    }
    return ForEachItem(*status, "conditions", status_path,
                       [&](const Json& c, const FieldPath& p) -> Result<void> {
                         TIDEPOOL_RETURN_IF_ERROR(ExpectObject(c, p));
                         std::string type, value;
                         TIDEPOOL_RETURN_IF_ERROR(ReadString(c, "type", p, type));
                         TIDEPOOL_RETURN_IF_ERROR(ReadString(c, "status", p, value));
                         if (type == "Ready") node.ready = value == "True";
                         return {};
                       });
  });
}

namespace {

// intstr.IntOrString for minAvailable/maxUnavailable: a non-negative integer or "N%" (N <= 100).
Result<void> ReadIntOrPercent(const Json& obj, std::string_view key, const FieldPath& path,
                              std::optional<model::IntOrPercent>& out) {
  const Json* v = Find(obj, key);
  if (v == nullptr) return {};
  constexpr std::string_view kExpected = "a non-negative integer or a percentage such as \"50%\"";
  if (v->is_string()) {
    std::string_view s = v->get_ref<const std::string&>();
    if (s.size() >= 2 && s.back() == '%' && s.size() <= 5) {
      std::string_view digits = s.substr(0, s.size() - 1);
      if (std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        int32_t n = 0;
        for (char c : digits) n = n * 10 + (c - '0');
        if (n <= 100) {
          out = model::IntOrPercent{n, true};
          return {};
        }
      }
    }
    return std::unexpected(TypeError(path.Key(key), kExpected, v));
  }
  std::optional<int32_t> n;
  if (!ReadInt32(obj, key, path, n) || *n < 0) {
    return std::unexpected(TypeError(path.Key(key), kExpected, v));
  }
  out = model::IntOrPercent{*n, false};
  return {};
}

}  // namespace

Result<model::PodDisruptionBudget> DecodePdb(const nlohmann::json& obj) {
  return DecodeObject<model::PodDisruptionBudget>(
      "PodDisruptionBudget", obj, [&](model::PodDisruptionBudget& pdb) -> Result<void> {
        FieldPath root;
        TIDEPOOL_RETURN_IF_ERROR(DecodeMeta(obj, root, pdb.meta));
        TIDEPOOL_ASSIGN_OR_RETURN(const Json* spec, ReadObject(obj, "spec", root));
        FieldPath spec_path = root.Key("spec");
        model::LabelSelector selector;
        TIDEPOOL_ASSIGN_OR_RETURN(
            bool has_selector, DecodeOptionalLabelSelector(*spec, "selector", spec_path, selector));
        if (has_selector) pdb.selector = std::move(selector);
        TIDEPOOL_RETURN_IF_ERROR(
            ReadIntOrPercent(*spec, "minAvailable", spec_path, pdb.min_available));
        TIDEPOOL_RETURN_IF_ERROR(
            ReadIntOrPercent(*spec, "maxUnavailable", spec_path, pdb.max_unavailable));

        TIDEPOOL_ASSIGN_OR_RETURN(const Json* status, ReadObject(obj, "status", root));
        FieldPath status_path = root.Key("status");
        TIDEPOOL_RETURN_IF_ERROR(
            ReadInt32(*status, "disruptionsAllowed", status_path, pdb.disruptions_allowed));
        TIDEPOOL_RETURN_IF_ERROR(
            ReadInt32(*status, "currentHealthy", status_path, pdb.current_healthy));
        TIDEPOOL_RETURN_IF_ERROR(
            ReadInt32(*status, "desiredHealthy", status_path, pdb.desired_healthy));
        TIDEPOOL_RETURN_IF_ERROR(
            ReadInt32(*status, "expectedPods", status_path, pdb.expected_pods));
        return {};
      });
}

Result<model::DaemonSet> DecodeDaemonSet(const nlohmann::json& obj) {
  return DecodeObject<model::DaemonSet>(
      "DaemonSet", obj, [&](model::DaemonSet& ds) -> Result<void> {
        FieldPath root;
        TIDEPOOL_RETURN_IF_ERROR(DecodeMeta(obj, root, ds.meta));
        TIDEPOOL_ASSIGN_OR_RETURN(const Json* spec, ReadObject(obj, "spec", root));
        FieldPath spec_path = root.Key("spec");
        TIDEPOOL_ASSIGN_OR_RETURN(const Json* tmpl, ReadObject(*spec, "template", spec_path));
        model::Pod& pod = ds.pod_template;
        // The name decides the claim names of ephemeral volumes; the controller's pods are named
        // "<daemonset>-<random>", the template stands for them under the DaemonSet's name.
        pod.meta.name = ds.meta.name;
        TIDEPOOL_RETURN_IF_ERROR(DecodePodObject(*tmpl, spec_path.Key("template"), pod));
        pod.meta.namespace_ = ds.meta.namespace_;
        pod.meta.owner_references.clear();
        pod.meta.owner_references.push_back(model::OwnerReference{
            .api_version = "apps/v1",
            .kind = "DaemonSet",
            .name = ds.meta.name,
            .uid = ds.meta.uid,
            .controller = true,
        });
        AddDaemonPodTolerations(pod);
        pod.Finalize();
        return {};
      });
}

}  // namespace tidepool::kube::codec
