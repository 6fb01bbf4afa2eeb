// What the object decoders share (objects.cc, pod_decode.cc, state.cc): array and object
// helpers, metadata, selectors, taints and tolerations, and the checks every object gets.
#pragma once

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "kube/codec/fields.h"
#include "kube/codec/objects.h"

namespace tidepool::kube::codec::decode_detail {

// Calls f(item, item_path) for every element of the array member `key` of `obj`.
template <typename F>
Result<void> ForEachItem(const Json& obj, std::string_view key, const FieldPath& path, F&& f) {
  TIDEPOOL_ASSIGN_OR_RETURN(const Json* arr, ReadArray(obj, key, path));
  FieldPath arr_path = path.Key(key);
  for (size_t i = 0; i < arr->size(); ++i) {
    TIDEPOOL_RETURN_IF_ERROR(f((*arr)[i], arr_path.Index(i)));
  }
  return {};
}

// An array element that must be an object.
Result<void> ExpectObject(const Json& item, const FieldPath& path);

// Decodes obj.metadata (`root` is the path of obj).
Result<void> DecodeMeta(const Json& obj, const FieldPath& root, model::ObjectMeta& meta);

// metav1.LabelSelector: matchLabels and matchExpressions (In, NotIn, Exists, DoesNotExist).
Result<void> DecodeLabelSelector(const Json& sel, const FieldPath& path, model::LabelSelector& out);
// An optional LabelSelector member: absent leaves `out` empty and returns false.
Result<bool> DecodeOptionalLabelSelector(const Json& obj, std::string_view key,
                                         const FieldPath& path, model::LabelSelector& out);
Result<void> DecodeNodeSelectorTerm(const Json& t, const FieldPath& path,
                                    model::NodeSelectorTerm& out);
Result<void> DecodeTaint(const Json& t, const FieldPath& path, model::Taint& out);
Result<void> DecodeToleration(const Json& t, const FieldPath& path, model::Toleration& out);

// A whole pod object (metadata, spec, status) at `root`: a Pod, or a DaemonSet's template.
Result<void> DecodePodObject(const Json& obj, const FieldPath& root, model::Pod& pod);
// The tolerations the DaemonSet controller adds to every pod it creates
// (AddOrUpdateDaemonPodTolerations), so a template pod tolerates what its real pods would.
void AddDaemonPodTolerations(model::Pod& pod);

// "Pod default/web-1", "Node gpu-0", or just "Pod" when the object has no usable name.
std::string ObjectLabel(std::string_view kind, const Json& obj);

// Whether obj.metadata.name is a non-empty string.
bool HasName(const Json& obj);

// Runs `body` for an object of `kind`: checks the shape every object shares (an object, a
// matching kind if one is given, a name), prefixes errors with the object, and turns any
// library exception into an error.
template <typename T, typename F>
Result<T> DecodeObject(std::string_view kind, const Json& obj, F&& body) {
  try {
    FieldPath root;
    if (!obj.is_object()) return std::unexpected(TypeError(root, "an object", &obj).Wrap(kind));
    std::string label = ObjectLabel(kind, obj);
    auto fail = [&](Error e) { return std::unexpected(e.Wrap(label)); };
    if (const Json* k = Find(obj, "kind");
        k != nullptr && !(k->is_string() && k->get_ref<const std::string&>() == kind)) {
      return fail(TypeError(root.Key("kind"), fmt::format("\"{}\"", kind), k));
    }
    auto md = ReadObject(obj, "metadata", root);
    if (!md) return fail(md.error());
    if (!HasName(obj)) {
      return fail(
          TypeError(root.Key("metadata").Key("name"), "a non-empty string", Find(**md, "name")));
    }
    T out;
    auto r = body(out);
    if (!r) return fail(r.error());
    return out;
  } catch (const std::exception& e) {
    return Fail(Error::Code::kInternal, "{}: unexpected error while decoding: {}", kind, e.what());
  }
}

}  // namespace tidepool::kube::codec::decode_detail
