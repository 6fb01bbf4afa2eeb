#include "kube/codec/objects.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kube/codec/documents.h"
#include "kube/codec/fields.h"

namespace tidepool::kube::codec {
namespace {

using model::InclusionPolicy;
using model::PodPhase;
using model::SelectorOp;
using model::TaintEffect;
using model::TolerationOp;
using model::WhenUnsatisfiable;

// ---- enum spellings (the Kubernetes API's) -----------------------------------------------

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
constexpr EnumName<WhenUnsatisfiable> kWhenUnsatisfiable[] = {
    {"DoNotSchedule", WhenUnsatisfiable::kDoNotSchedule},
    {"ScheduleAnyway", WhenUnsatisfiable::kScheduleAnyway},
};
constexpr EnumName<InclusionPolicy> kInclusionPolicies[] = {
    {"Honor", InclusionPolicy::kHonor},
    {"Ignore", InclusionPolicy::kIgnore},
};
constexpr EnumName<PodPhase> kPodPhases[] = {
    {"Pending", PodPhase::kPending},     {"Running", PodPhase::kRunning},
    {"Succeeded", PodPhase::kSucceeded}, {"Failed", PodPhase::kFailed},
    {"Unknown", PodPhase::kUnknown},
};
constexpr EnumName<std::string_view> kProtocols[] = {
    {"TCP", "TCP"},
    {"UDP", "UDP"},
    {"SCTP", "SCTP"},
};

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
Result<void> ExpectObject(const Json& item, const FieldPath& path) {
  if (!item.is_object()) return std::unexpected(TypeError(path, "an object", &item));
  return {};
}

// ---- metadata -----------------------------------------------------------------------------

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

// Decodes obj.metadata (`root` is the path of obj).
Result<void> DecodeMeta(const Json& obj, const FieldPath& root, model::ObjectMeta& meta) {
  TIDEPOOL_ASSIGN_OR_RETURN(const Json* md, ReadObject(obj, "metadata", root));
  FieldPath path = root.Key("metadata");
  TIDEPOOL_RETURN_IF_ERROR(ReadString(*md, "name", path, meta.name));
  TIDEPOOL_RETURN_IF_ERROR(ReadString(*md, "namespace", path, meta.namespace_));
  TIDEPOOL_RETURN_IF_ERROR(ReadString(*md, "uid", path, meta.uid));
  TIDEPOOL_RETURN_IF_ERROR(ReadString(*md, "resourceVersion", path, meta.resource_version));
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

// ---- pods ---------------------------------------------------------------------------------

Result<void> DecodePort(const Json& p, const FieldPath& path, bool host_network,
                        model::ContainerPort& out) {
  TIDEPOOL_RETURN_IF_ERROR(ExpectObject(p, path));
  TIDEPOOL_RETURN_IF_ERROR(ReadInt32(p, "containerPort", path, out.container_port));
  TIDEPOOL_RETURN_IF_ERROR(ReadInt32(p, "hostPort", path, out.host_port));
  std::string_view protocol = out.protocol;
  TIDEPOOL_RETURN_IF_ERROR(ReadEnum(p, "protocol", path, kProtocols, protocol));
  out.protocol = std::string(protocol);
  TIDEPOOL_RETURN_IF_ERROR(ReadString(p, "hostIP", path, out.host_ip));
  // The API server defaults the host port of a host-network pod to its container port.
  if (host_network && out.host_port == 0) out.host_port = out.container_port;
  return {};
}

Result<void> DecodeContainer(const Json& c, const FieldPath& path, bool init, bool host_network,
                             model::Container& out) {
  TIDEPOOL_RETURN_IF_ERROR(ExpectObject(c, path));
  TIDEPOOL_RETURN_IF_ERROR(ReadString(c, "name", path, out.name));
  TIDEPOOL_ASSIGN_OR_RETURN(const Json* resources, ReadObject(c, "resources", path));
  FieldPath res_path = path.Key("resources");
  TIDEPOOL_RETURN_IF_ERROR(ReadResourceList(*resources, "requests", res_path, out.requests));
  // A limit without a request is also the request (the API server's defaulting).
  const Json* requests = Find(*resources, "requests");
  TIDEPOOL_RETURN_IF_ERROR(ReadResourceList(*resources, "limits", res_path, out.requests,
                                            requests != nullptr ? requests : &EmptyObject()));
  TIDEPOOL_RETURN_IF_ERROR(ForEachItem(c, "ports", path, [&](const Json& p, const FieldPath& pp) {
    return DecodePort(p, pp, host_network, out.ports.emplace_back());
  }));
  if (init) {
    std::string restart_policy;
    TIDEPOOL_RETURN_IF_ERROR(ReadString(c, "restartPolicy", path, restart_policy));
    out.restartable = restart_policy == "Always";
  }
  return {};
}

Result<void> DecodePodAffinityTerm(const Json& t, const FieldPath& path,
                                   model::PodAffinityTerm& out) {
  TIDEPOOL_RETURN_IF_ERROR(ExpectObject(t, path));
  TIDEPOOL_ASSIGN_OR_RETURN(
      out.has_label_selector,
      DecodeOptionalLabelSelector(t, "labelSelector", path, out.label_selector));
  TIDEPOOL_RETURN_IF_ERROR(ReadStringList(t, "namespaces", path, out.namespaces));
  model::LabelSelector ns_selector;
  TIDEPOOL_ASSIGN_OR_RETURN(bool has_ns_selector,
                            DecodeOptionalLabelSelector(t, "namespaceSelector", path, ns_selector));
  if (has_ns_selector) out.namespace_selector = std::move(ns_selector);
  TIDEPOOL_RETURN_IF_ERROR(ReadString(t, "topologyKey", path, out.topology_key));
  return {};
}

// affinity.{podAffinity,podAntiAffinity}.requiredDuringSchedulingIgnoredDuringExecution.
Result<void> DecodePodAffinityTerms(const Json& affinity, std::string_view key,
                                    const FieldPath& path,
                                    std::vector<model::PodAffinityTerm>& out) {
  TIDEPOOL_ASSIGN_OR_RETURN(const Json* a, ReadObject(affinity, key, path));
  return ForEachItem(*a, "requiredDuringSchedulingIgnoredDuringExecution", path.Key(key),
                     [&](const Json& t, const FieldPath& p) {
                       return DecodePodAffinityTerm(t, p, out.emplace_back());
                     });
}

Result<void> DecodeAffinity(const Json& spec, const FieldPath& spec_path, model::Affinity& out) {
  TIDEPOOL_ASSIGN_OR_RETURN(const Json* affinity, ReadObject(spec, "affinity", spec_path));
  FieldPath path = spec_path.Key("affinity");
  TIDEPOOL_ASSIGN_OR_RETURN(const Json* node_affinity, ReadObject(*affinity, "nodeAffinity", path));
  FieldPath na_path = path.Key("nodeAffinity");
  constexpr std::string_view kRequired = "requiredDuringSchedulingIgnoredDuringExecution";
  if (Find(*node_affinity, kRequired) != nullptr) {
    TIDEPOOL_ASSIGN_OR_RETURN(const Json* required, ReadObject(*node_affinity, kRequired, na_path));
    model::NodeSelector selector;
    TIDEPOOL_RETURN_IF_ERROR(ForEachItem(*required, "nodeSelectorTerms", na_path.Key(kRequired),
                                         [&](const Json& t, const FieldPath& p) {
                                           return DecodeNodeSelectorTerm(
                                               t, p, selector.terms.emplace_back());
                                         }));
    out.node_required = std::move(selector);
  }
  TIDEPOOL_RETURN_IF_ERROR(
      DecodePodAffinityTerms(*affinity, "podAffinity", path, out.pod_affinity_required));
  TIDEPOOL_RETURN_IF_ERROR(
      DecodePodAffinityTerms(*affinity, "podAntiAffinity", path, out.pod_anti_affinity_required));
  return {};
}

Result<void> DecodeSpreadConstraint(const Json& c, const FieldPath& path,
                                    model::TopologySpreadConstraint& out) {
  TIDEPOOL_RETURN_IF_ERROR(ExpectObject(c, path));
  TIDEPOOL_RETURN_IF_ERROR(ReadInt32(c, "maxSkew", path, out.max_skew));
  TIDEPOOL_RETURN_IF_ERROR(ReadString(c, "topologyKey", path, out.topology_key));
  TIDEPOOL_RETURN_IF_ERROR(
      ReadEnum(c, "whenUnsatisfiable", path, kWhenUnsatisfiable, out.when_unsatisfiable));
  TIDEPOOL_ASSIGN_OR_RETURN(
      out.has_label_selector,
      DecodeOptionalLabelSelector(c, "labelSelector", path, out.label_selector));
  TIDEPOOL_RETURN_IF_ERROR(ReadInt32(c, "minDomains", path, out.min_domains));
  TIDEPOOL_RETURN_IF_ERROR(
      ReadEnum(c, "nodeAffinityPolicy", path, kInclusionPolicies, out.node_affinity_policy));
  TIDEPOOL_RETURN_IF_ERROR(
      ReadEnum(c, "nodeTaintsPolicy", path, kInclusionPolicies, out.node_taints_policy));
  TIDEPOOL_RETURN_IF_ERROR(ReadStringList(c, "matchLabelKeys", path, out.match_label_keys));
  return {};
}

Result<void> DecodeVolume(const Json& v, const FieldPath& path, const std::string& pod_name,
                          model::Volume& out) {
  using Kind = model::Volume::Kind;
  TIDEPOOL_RETURN_IF_ERROR(ExpectObject(v, path));
  TIDEPOOL_RETURN_IF_ERROR(ReadString(v, "name", path, out.name));
  if (Find(v, "emptyDir") != nullptr) {
    TIDEPOOL_ASSIGN_OR_RETURN(const Json* empty_dir, ReadObject(v, "emptyDir", path));
    std::string medium;
    TIDEPOOL_RETURN_IF_ERROR(ReadString(*empty_dir, "medium", path.Key("emptyDir"), medium));
    out.kind = Kind::kEmptyDir;
    out.empty_dir_in_memory = medium == "Memory";
  } else if (Find(v, "hostPath") != nullptr) {
    out.kind = Kind::kHostPath;
  } else if (Find(v, "persistentVolumeClaim") != nullptr) {
    TIDEPOOL_ASSIGN_OR_RETURN(const Json* pvc, ReadObject(v, "persistentVolumeClaim", path));
    TIDEPOOL_RETURN_IF_ERROR(
        ReadString(*pvc, "claimName", path.Key("persistentVolumeClaim"), out.claim_name));
    out.kind = Kind::kPersistentVolumeClaim;
  } else if (Find(v, "ephemeral") != nullptr) {
    // A generic ephemeral volume is a PVC the control plane names "<pod>-<volume>".
    out.kind = Kind::kPersistentVolumeClaim;
    if (!pod_name.empty()) out.claim_name = pod_name + "-" + out.name;
  } else {
    out.kind = Kind::kOther;
  }
  return {};
}

Result<void> DecodePodSpec(const Json& spec, const FieldPath& path, model::Pod& pod) {
  TIDEPOOL_RETURN_IF_ERROR(ReadString(spec, "nodeName", path, pod.node_name));
  TIDEPOOL_RETURN_IF_ERROR(ReadString(spec, "schedulerName", path, pod.scheduler_name));
  TIDEPOOL_RETURN_IF_ERROR(ReadStringMap(spec, "nodeSelector", path, pod.node_selector));
  TIDEPOOL_RETURN_IF_ERROR(ReadBool(spec, "hostNetwork", path, pod.host_network));
  TIDEPOOL_RETURN_IF_ERROR(DecodeAffinity(spec, path, pod.affinity));
  TIDEPOOL_RETURN_IF_ERROR(
      ForEachItem(spec, "tolerations", path, [&](const Json& t, const FieldPath& p) {
        return DecodeToleration(t, p, pod.tolerations.emplace_back());
      }));
  TIDEPOOL_RETURN_IF_ERROR(
      ForEachItem(spec, "containers", path, [&](const Json& c, const FieldPath& p) {
        return DecodeContainer(c, p, /*init=*/false, pod.host_network,
                               pod.containers.emplace_back());
      }));
  TIDEPOOL_RETURN_IF_ERROR(
      ForEachItem(spec, "initContainers", path, [&](const Json& c, const FieldPath& p) {
        return DecodeContainer(c, p, /*init=*/true, pod.host_network,
                               pod.init_containers.emplace_back());
      }));
  TIDEPOOL_RETURN_IF_ERROR(ReadResourceList(spec, "overhead", path, pod.overhead));
  TIDEPOOL_RETURN_IF_ERROR(ReadInt32(spec, "priority", path, pod.priority));
  TIDEPOOL_RETURN_IF_ERROR(ReadString(spec, "priorityClassName", path, pod.priority_class_name));
  TIDEPOOL_RETURN_IF_ERROR(
      ForEachItem(spec, "topologySpreadConstraints", path, [&](const Json& c, const FieldPath& p) {
        return DecodeSpreadConstraint(c, p, pod.topology_spread_constraints.emplace_back());
      }));
  TIDEPOOL_RETURN_IF_ERROR(
      ForEachItem(spec, "volumes", path, [&](const Json& v, const FieldPath& p) {
        return DecodeVolume(v, p, pod.meta.name, pod.volumes.emplace_back());
      }));
  return {};
}

Result<void> DecodePodStatus(const Json& status, const FieldPath& path, model::Pod& pod) {
  TIDEPOOL_RETURN_IF_ERROR(ReadEnum(status, "phase", path, kPodPhases, pod.phase));
  TIDEPOOL_RETURN_IF_ERROR(ForEachItem(
      status, "conditions", path, [&](const Json& c, const FieldPath& p) -> Result<void> {
        TIDEPOOL_RETURN_IF_ERROR(ExpectObject(c, p));
        std::string type, value, reason;
        TIDEPOOL_RETURN_IF_ERROR(ReadString(c, "type", p, type));
        TIDEPOOL_RETURN_IF_ERROR(ReadString(c, "status", p, value));
        TIDEPOOL_RETURN_IF_ERROR(ReadString(c, "reason", p, reason));
        if (type == "PodScheduled" && value == "False" && reason == "Unschedulable") {
          pod.unschedulable_condition = true;
        }
        return {};
      }));
  TIDEPOOL_RETURN_IF_ERROR(ReadString(status, "nominatedNodeName", path, pod.nominated_node_name));
  TIDEPOOL_RETURN_IF_ERROR(ReadTime(status, "startTime", path, pod.start_time));
  return {};
}

// Decodes metadata, spec and status of a pod object at `root` (a Pod, or a pod template, which
// has no status). Does not call Finalize().
Result<void> DecodePodObject(const Json& obj, const FieldPath& root, model::Pod& pod) {
  TIDEPOOL_RETURN_IF_ERROR(DecodeMeta(obj, root, pod.meta));
  TIDEPOOL_ASSIGN_OR_RETURN(const Json* spec, ReadObject(obj, "spec", root));
  TIDEPOOL_RETURN_IF_ERROR(DecodePodSpec(*spec, root.Key("spec"), pod));
  TIDEPOOL_ASSIGN_OR_RETURN(const Json* status, ReadObject(obj, "status", root));
  TIDEPOOL_RETURN_IF_ERROR(DecodePodStatus(*status, root.Key("status"), pod));
  return {};
}

// The tolerations the DaemonSet controller adds to every pod it creates
// (AddOrUpdateDaemonPodTolerations), so a template pod tolerates what its real pods would.
void AddDaemonPodTolerations(model::Pod& pod) {
  struct Added {
    std::string_view key;
    TaintEffect effect;
  };
  std::vector<Added> added = {
      {"node.kubernetes.io/not-ready", TaintEffect::kNoExecute},
      {"node.kubernetes.io/unreachable", TaintEffect::kNoExecute},
      {"node.kubernetes.io/disk-pressure", TaintEffect::kNoSchedule},
      {"node.kubernetes.io/memory-pressure", TaintEffect::kNoSchedule},
      {"node.kubernetes.io/pid-pressure", TaintEffect::kNoSchedule},
      {"node.kubernetes.io/unschedulable", TaintEffect::kNoSchedule},
  };
  if (pod.host_network) {
    added.push_back({"node.kubernetes.io/network-unavailable", TaintEffect::kNoSchedule});
  }
  for (const auto& a : added) {
    bool present = std::any_of(
        pod.tolerations.begin(), pod.tolerations.end(), [&](const model::Toleration& t) {
          return t.key == a.key && t.op == TolerationOp::kExists && t.effect == a.effect;
        });
    if (present) continue;
    model::Toleration t;
    t.key = std::string(a.key);
    t.op = TolerationOp::kExists;
    t.effect = a.effect;
    pod.tolerations.push_back(std::move(t));
  }
}

// ---- the object boundary ------------------------------------------------------------------

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

void Append(ClusterState& into, ClusterState&& from) {
  auto move_all = [](auto& dst, auto& src) {
    dst.insert(dst.end(), std::make_move_iterator(src.begin()), std::make_move_iterator(src.end()));
  };
  move_all(into.nodes, from.nodes);
  move_all(into.pods, from.pods);
  move_all(into.pdbs, from.pdbs);
  move_all(into.daemon_sets, from.daemon_sets);
  for (const auto& [kind, n] : from.ignored) into.ignored[kind] += n;
}

}  // namespace

Result<model::Pod> DecodePod(const nlohmann::json& obj) {
  return DecodeObject<model::Pod>("Pod", obj, [&](model::Pod& pod) -> Result<void> {
    TIDEPOOL_RETURN_IF_ERROR(DecodePodObject(obj, FieldPath(), pod));
    pod.Finalize();
    return {};
  });
}

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

namespace {

Result<ClusterState> DecodeStateUnguarded(std::string_view text, std::string_view source) {
  TIDEPOOL_ASSIGN_OR_RETURN(auto docs, ParseSourcedDocuments(text, source));
  ClusterState state;
  for (const auto& doc : docs) {
    const Json& obj = doc.value;
    auto at_doc = [&](Error e) { return std::unexpected(e.Wrap(doc.origin).Wrap(source)); };
    if (!obj.is_object()) return at_doc(TypeError(FieldPath(), "an object", &obj));
    const Json* kind_json = Find(obj, "kind");
    if (kind_json == nullptr) {
      return at_doc(
          FieldError(FieldPath(), "missing \"kind\" (each object needs apiVersion and kind)"));
    }
    if (!kind_json->is_string() || kind_json->get_ref<const std::string&>().empty()) {
      return at_doc(TypeError(FieldPath().Key("kind"), "a non-empty string", kind_json));
    }
    const std::string& kind = kind_json->get_ref<const std::string&>();
    std::string api_version;
    if (auto r = ReadString(obj, "apiVersion", FieldPath(), api_version); !r) {
      return at_doc(r.error());
    }
    std::string_view group = api_version.find('/') == std::string::npos
                                 ? std::string_view()
                                 : std::string_view(api_version).substr(0, api_version.find('/'));
    bool core = api_version.empty() || api_version == "v1";

    // Errors of named objects name the object; unnamed ones are found by their position.
    auto fail = [&](const Error& e) {
      if (!HasName(obj)) return std::unexpected(e.Wrap(doc.origin).Wrap(source));
      return std::unexpected(e.Wrap(source));
    };
    if (kind == "Pod" && core) {
      auto pod = DecodePod(obj);
      if (!pod) return fail(pod.error());
      state.pods.push_back(std::move(*pod));
    } else if (kind == "Node" && core) {
      auto node = DecodeNode(obj);
      if (!node) return fail(node.error());
      state.nodes.push_back(std::move(*node));
    } else if (kind == "PodDisruptionBudget" &&
               (api_version == "policy/v1" || api_version == "policy/v1beta1")) {
      auto pdb = DecodePdb(obj);
      if (!pdb) return fail(pdb.error());
      state.pdbs.push_back(std::move(*pdb));
    } else if (kind == "DaemonSet" && (group == "apps" || group == "extensions")) {
      auto ds = DecodeDaemonSet(obj);
      if (!ds) return fail(ds.error());
      state.daemon_sets.push_back(std::move(*ds));
    } else if (kind == "Pod" || kind == "Node" || kind == "PodDisruptionBudget" ||
               kind == "DaemonSet") {
      // A known kind of an API version tidepool does not read (e.g. a CRD named "Node").
      ++state.ignored[fmt::format("{} ({})", kind, api_version)];
    } else {
      ++state.ignored[kind];
    }
  }
  return state;
}

Result<ClusterState> LoadStateFileUnguarded(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) return Fail(Error::Code::kNotFound, "{}: no such file", path);
  if (fs::is_directory(st)) {
    return InvalidArgument("{}: is a directory (expected a state file)", path);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidArgument("{}: cannot open: {}", path, std::strerror(errno));
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) return InvalidArgument("{}: cannot read: {}", path, std::strerror(errno));
  return DecodeState(buf.str(), path);
}

Result<ClusterState> LoadStatePathUnguarded(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return LoadStateFileUnguarded(path);
  std::vector<fs::path> files;
  fs::directory_iterator it(path, ec);
  if (ec) return InvalidArgument("{}: cannot list directory: {}", path, ec.message());
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) return InvalidArgument("{}: cannot list directory: {}", path, ec.message());
    std::error_code file_ec;
    if (!it->is_regular_file(file_ec)) continue;
    std::string ext = it->path().extension().string();
    if (ext == ".yaml" || ext == ".yml" || ext == ".json") files.push_back(it->path());
  }
  if (ec) return InvalidArgument("{}: cannot list directory: {}", path, ec.message());
  if (files.empty()) {
    return InvalidArgument("{}: no state files (*.yaml, *.yml, *.json) in the directory", path);
  }
  std::sort(files.begin(), files.end(),
            [](const fs::path& a, const fs::path& b) { return a.filename() < b.filename(); });
  ClusterState state;
  for (const auto& f : files) {
    TIDEPOOL_ASSIGN_OR_RETURN(ClusterState part, LoadStateFileUnguarded(f.string()));
    Append(state, std::move(part));
  }
  return state;
}

// Runs f, turning an escaping exception (allocation failure, a library surprise) into an error.
template <typename F>
Result<ClusterState> Guard(std::string_view what, F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    return Fail(Error::Code::kInternal, "{}: unexpected error: {}", what, e.what());
  }
}

}  // namespace

Result<ClusterState> DecodeState(std::string_view text, std::string_view source) {
  return Guard(source, [&] { return DecodeStateUnguarded(text, source); });
}

Result<ClusterState> LoadStateFile(const std::string& path) {
  return Guard(path, [&] { return LoadStateFileUnguarded(path); });
}

Result<ClusterState> LoadStatePath(const std::string& path) {
  return Guard(path, [&] { return LoadStatePathUnguarded(path); });
}

}  // namespace tidepool::kube::codec
