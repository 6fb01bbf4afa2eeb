#include "kube/codec/decode_common.h"

namespace tidepool::kube::codec::decode_detail {
namespace {

using model::SelectorOp;
using model::TaintEffect;
using model::TolerationOp;

constexpr EnumName<TaintEffect> kTaintEffects[] = {
    {"NoSchedule", TaintEffect::kNoSchedule},
    {"PreferNoSchedule", TaintEffect::kPreferNoSchedule},
    {"NoExecute", TaintEffect::kNoExecute},
};
constexpr EnumName<TolerationOp> kTolerationOps[] = {
    {"Equal", TolerationOp::kEqual},
    {"Exists", TolerationOp::kExists},
};
constexpr EnumName<SelectorOp> kLabelSelectorOps[] = {
    {"In", SelectorOp::kIn},
    {"NotIn", SelectorOp::kNotIn},
    {"Exists", SelectorOp::kExists},
    {"DoesNotExist", SelectorOp::kDoesNotExist},
};
constexpr EnumName<SelectorOp> kNodeSelectorOps[] = {
    {"In", SelectorOp::kIn},         {"NotIn", SelectorOp::kNotIn},
    {"Exists", SelectorOp::kExists}, {"DoesNotExist", SelectorOp::kDoesNotExist},
    {"Gt", SelectorOp::kGt},         {"Lt", SelectorOp::kLt},
};
}  // namespace

// An array element that must be an object.
Result<void> ExpectObject(const Json& item, const FieldPath& path) {
  if (!item.is_object()) return std::unexpected(TypeError(path, "an object", &item));
  return {};
}

// ---- metadata -----------------------------------------------------------------------------

namespace {

Result<void> DecodeOwnerReference(const Json& o, const FieldPath& path,
                                  model::OwnerReference& out) {
  TIDEPOOL_RETURN_IF_ERROR(ExpectObject(o, path));
  TIDEPOOL_RETURN_IF_ERROR(ReadString(o, "apiVersion", path, out.api_version));
  TIDEPOOL_RETURN_IF_ERROR(ReadString(o, "kind", path, out.kind));
  TIDEPOOL_RETURN_IF_ERROR(ReadString(o, "name", path, out.name));
  TIDEPOOL_RETURN_IF_ERROR(ReadString(o, "uid", path, out.uid));
  TIDEPOOL_RETURN_IF_ERROR(ReadBool(o, "controller", path, out.controller));
  return {};
}

}  // namespace

// Decodes obj.metadata (`root` is the path of obj).
Result<void> DecodeMeta(const Json& obj, const FieldPath& root, model::ObjectMeta& meta) {
  TIDEPOOL_ASSIGN_OR_RETURN(const Json* md, ReadObject(obj, "metadata", root));
  FieldPath path = root.Key("metadata");
  TIDEPOOL_RETURN_IF_ERROR(ReadString(*md, "name", path, meta.name));
  TIDEPOOL_RETURN_IF_ERROR(ReadString(*md, "namespace", path, meta.namespace_));
  TIDEPOOL_RETURN_IF_ERROR(ReadString(*md, "uid", path, meta.uid));
  TIDEPOOL_RETURN_IF_ERROR(ReadString(*md, "resourceVersion", path, meta.resource_version));
  std::optional<int64_t> generation;
  TIDEPOOL_RETURN_IF_ERROR(ReadInt64(*md, "generation", path, generation));
  meta.generation = generation.value_or(0);
  TIDEPOOL_RETURN_IF_ERROR(ReadStringMap(*md, "labels", path, meta.labels));
  TIDEPOOL_RETURN_IF_ERROR(ReadStringMap(*md, "annotations", path, meta.annotations));
  TIDEPOOL_RETURN_IF_ERROR(
      ForEachItem(*md, "ownerReferences", path, [&](const Json& o, const FieldPath& p) {
        return DecodeOwnerReference(o, p, meta.owner_references.emplace_back());
      }));
  TIDEPOOL_RETURN_IF_ERROR(ReadTime(*md, "creationTimestamp", path, meta.creation_timestamp));
  TIDEPOOL_RETURN_IF_ERROR(ReadTime(*md, "deletionTimestamp", path, meta.deletion_timestamp));
  return {};
}

// ---- selectors, taints, tolerations ------------------------------------------------------

namespace {

template <size_t N>
Result<void> DecodeRequirement(const Json& r, const FieldPath& path,
                               const EnumName<SelectorOp> (&ops)[N],
                               model::SelectorRequirement& out) {
  TIDEPOOL_RETURN_IF_ERROR(ExpectObject(r, path));
  TIDEPOOL_RETURN_IF_ERROR(ReadString(r, "key", path, out.key));
  // The operator is required; an absent one is reported like a wrong one.
  if (Find(r, "operator") == nullptr) {
    std::string_view names[N];
    for (size_t i = 0; i < N; ++i) names[i] = ops[i].name;
    return std::unexpected(EnumError(path.Key("operator"), names, nullptr));
  }
  TIDEPOOL_RETURN_IF_ERROR(ReadEnum(r, "operator", path, ops, out.op));
  TIDEPOOL_RETURN_IF_ERROR(ReadStringList(r, "values", path, out.values));
  return {};
}

}  // namespace

// metav1.LabelSelector: matchLabels and matchExpressions (In, NotIn, Exists, DoesNotExist).
Result<void> DecodeLabelSelector(const Json& sel, const FieldPath& path,
                                 model::LabelSelector& out) {
  TIDEPOOL_RETURN_IF_ERROR(ExpectObject(sel, path));
  TIDEPOOL_RETURN_IF_ERROR(ReadStringMap(sel, "matchLabels", path, out.match_labels));
  return ForEachItem(sel, "matchExpressions", path, [&](const Json& r, const FieldPath& p) {
    return DecodeRequirement(r, p, kLabelSelectorOps, out.match_expressions.emplace_back());
  });
}

// An optional LabelSelector member: absent leaves `out` empty and returns false.
Result<bool> DecodeOptionalLabelSelector(const Json& obj, std::string_view key,
                                         const FieldPath& path, model::LabelSelector& out) {
  const Json* sel = Find(obj, key);
  if (sel == nullptr) return false;
  TIDEPOOL_RETURN_IF_ERROR(DecodeLabelSelector(*sel, path.Key(key), out));
  return true;
}

Result<void> DecodeNodeSelectorTerm(const Json& t, const FieldPath& path,
                                    model::NodeSelectorTerm& out) {
  TIDEPOOL_RETURN_IF_ERROR(ExpectObject(t, path));
  TIDEPOOL_RETURN_IF_ERROR(
      ForEachItem(t, "matchExpressions", path, [&](const Json& r, const FieldPath& p) {
        return DecodeRequirement(r, p, kNodeSelectorOps, out.match_expressions.emplace_back());
      }));
  return ForEachItem(t, "matchFields", path, [&](const Json& r, const FieldPath& p) {
    return DecodeRequirement(r, p, kNodeSelectorOps, out.match_fields.emplace_back());
  });
}

Result<void> DecodeTaint(const Json& t, const FieldPath& path, model::Taint& out) {
  TIDEPOOL_RETURN_IF_ERROR(ExpectObject(t, path));
  TIDEPOOL_RETURN_IF_ERROR(ReadString(t, "key", path, out.key));
  TIDEPOOL_RETURN_IF_ERROR(ReadString(t, "value", path, out.value));
  // The effect of a taint is required (unlike a toleration's).
  if (Find(t, "effect") == nullptr) {
    std::string_view names[] = {"NoSchedule", "PreferNoSchedule", "NoExecute"};
    return std::unexpected(EnumError(path.Key("effect"), names, nullptr));
  }
  return ReadEnum(t, "effect", path, kTaintEffects, out.effect);
}

Result<void> DecodeToleration(const Json& t, const FieldPath& path, model::Toleration& out) {
  TIDEPOOL_RETURN_IF_ERROR(ExpectObject(t, path));
  TIDEPOOL_RETURN_IF_ERROR(ReadString(t, "key", path, out.key));
  // An empty operator is Equal, as the API defaults it.
  const Json* op = Find(t, "operator");
  if (!(op != nullptr && op->is_string() && op->get_ref<const std::string&>().empty())) {
    TIDEPOOL_RETURN_IF_ERROR(ReadEnum(t, "operator", path, kTolerationOps, out.op));
  }
  TIDEPOOL_RETURN_IF_ERROR(ReadString(t, "value", path, out.value));
  // An empty effect matches every effect.
  const Json* effect = Find(t, "effect");
  if (effect != nullptr &&
      !(effect->is_string() && effect->get_ref<const std::string&>().empty())) {
    TaintEffect e = TaintEffect::kNoSchedule;
    TIDEPOOL_RETURN_IF_ERROR(ReadEnum(t, "effect", path, kTaintEffects, e));
    out.effect = e;
  }
  TIDEPOOL_RETURN_IF_ERROR(ReadInt64(t, "tolerationSeconds", path, out.toleration_seconds));
  return {};
}

// "Pod default/web-1", "Node gpu-0", or just "Pod" when the object has no usable name.
std::string ObjectLabel(std::string_view kind, const Json& obj) {
  const Json* md = Find(obj, "metadata");
  const Json* name = md != nullptr ? Find(*md, "name") : nullptr;
  if (name == nullptr || !name->is_string() || name->get_ref<const std::string&>().empty()) {
    return std::string(kind);
  }
  const Json* ns = Find(*md, "namespace");
  if (ns != nullptr && ns->is_string() && !ns->get_ref<const std::string&>().empty()) {
    return fmt::format("{} {}/{}", kind, ns->get_ref<const std::string&>(),
                       name->get_ref<const std::string&>());
  }
  return fmt::format("{} {}", kind, name->get_ref<const std::string&>());
}

bool HasName(const Json& obj) {
  const Json* md = Find(obj, "metadata");
  const Json* name = md != nullptr ? Find(*md, "name") : nullptr;
  return name != nullptr && name->is_string() && !name->get_ref<const std::string&>().empty();
}

}  // namespace tidepool::kube::codec::decode_detail
