// Decoding of v1 Pod objects: metadata, containers and their ports, affinity, topology spread,
// volumes and status; also the pod template of a DaemonSet.
#include <algorithm>
#include <string>
#include <vector>

#include "kube/codec/decode_common.h"

namespace tidepool::kube::codec {
namespace decode_detail {
namespace {

using model::InclusionPolicy;
using model::PodPhase;
using model::TaintEffect;
using model::TolerationOp;
using model::WhenUnsatisfiable;

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

// spec.schedulingGates[i]: {name}, required.
Result<void> DecodeSchedulingGate(const Json& g, const FieldPath& path, std::string& out) {
  TIDEPOOL_RETURN_IF_ERROR(ExpectObject(g, path));
  TIDEPOOL_RETURN_IF_ERROR(ReadString(g, "name", path, out));
  if (out.empty()) {
    return std::unexpected(TypeError(path.Key("name"), "a non-empty gate name", Find(g, "name")));
  }
  return {};
}

// spec.resourceClaims[i]: a name and exactly one of resourceClaimName, resourceClaimTemplateName.
Result<void> DecodePodResourceClaim(const Json& c, const FieldPath& path,
                                    model::PodResourceClaim& out) {
  TIDEPOOL_RETURN_IF_ERROR(ExpectObject(c, path));
  TIDEPOOL_RETURN_IF_ERROR(ReadString(c, "name", path, out.name));
  if (out.name.empty()) {
    return std::unexpected(TypeError(path.Key("name"), "a non-empty name", Find(c, "name")));
  }
  TIDEPOOL_RETURN_IF_ERROR(ReadString(c, "resourceClaimName", path, out.claim_name));
  TIDEPOOL_RETURN_IF_ERROR(ReadString(c, "resourceClaimTemplateName", path, out.template_name));
  if (out.claim_name.empty() == out.template_name.empty()) {
    return std::unexpected(FieldError(
        path, "expected exactly one of resourceClaimName and resourceClaimTemplateName"));
  }
  return {};
}

Result<void> DecodePodSpec(const Json& spec, const FieldPath& path, model::Pod& pod) {
  TIDEPOOL_RETURN_IF_ERROR(ReadString(spec, "nodeName", path, pod.node_name));
  TIDEPOOL_RETURN_IF_ERROR(ReadString(spec, "schedulerName", path, pod.scheduler_name));
  TIDEPOOL_RETURN_IF_ERROR(ReadStringMap(spec, "nodeSelector", path, pod.node_selector));
  TIDEPOOL_RETURN_IF_ERROR(ReadBool(spec, "hostNetwork", path, pod.host_network));
  // The usually empty parts (model::PodExtras) are written only when the object has them.
  if (Find(spec, "affinity") != nullptr)
    TIDEPOOL_RETURN_IF_ERROR(DecodeAffinity(spec, path, pod.mutable_affinity()));
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
                               pod.mutable_init_containers().emplace_back());
      }));
  if (Find(spec, "overhead") != nullptr)
    TIDEPOOL_RETURN_IF_ERROR(ReadResourceList(spec, "overhead", path, pod.mutable_overhead()));
  TIDEPOOL_RETURN_IF_ERROR(ReadInt32(spec, "priority", path, pod.priority));
  if (Find(spec, "priorityClassName") != nullptr) {
    TIDEPOOL_RETURN_IF_ERROR(
        ReadString(spec, "priorityClassName", path, pod.mutable_priority_class_name()));
  }
  TIDEPOOL_RETURN_IF_ERROR(
      ForEachItem(spec, "topologySpreadConstraints", path, [&](const Json& c, const FieldPath& p) {
        return DecodeSpreadConstraint(c, p,
                                      pod.mutable_topology_spread_constraints().emplace_back());
      }));
  TIDEPOOL_RETURN_IF_ERROR(
      ForEachItem(spec, "volumes", path, [&](const Json& v, const FieldPath& p) {
        return DecodeVolume(v, p, pod.meta.name, pod.volumes.emplace_back());
      }));
  TIDEPOOL_RETURN_IF_ERROR(
      ForEachItem(spec, "schedulingGates", path, [&](const Json& g, const FieldPath& p) {
        return DecodeSchedulingGate(g, p, pod.mutable_scheduling_gates().emplace_back());
      }));
  return ForEachItem(spec, "resourceClaims", path, [&](const Json& c, const FieldPath& p) {
    return DecodePodResourceClaim(c, p, pod.mutable_resource_claims().emplace_back());
  });
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
  if (Find(status, "nominatedNodeName") != nullptr) {
    TIDEPOOL_RETURN_IF_ERROR(
        ReadString(status, "nominatedNodeName", path, pod.mutable_nominated_node_name()));
  }
  TIDEPOOL_RETURN_IF_ERROR(ReadTime(status, "startTime", path, pod.start_time));
  return ForEachItem(status, "resourceClaimStatuses", path,
                     [&](const Json& c, const FieldPath& p) -> Result<void> {
                       TIDEPOOL_RETURN_IF_ERROR(ExpectObject(c, p));
                       auto& out = pod.mutable_resource_claim_statuses().emplace_back();
                       TIDEPOOL_RETURN_IF_ERROR(ReadString(c, "name", p, out.name));
                       return ReadString(c, "resourceClaimName", p, out.claim_name);
                     });
}

}  // namespace

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

}  // namespace decode_detail

using decode_detail::DecodeObject;
using decode_detail::DecodePodObject;

Result<model::Pod> DecodePod(const nlohmann::json& obj) {
  return DecodeObject<model::Pod>("Pod", obj, [&](model::Pod& pod) -> Result<void> {
    TIDEPOOL_RETURN_IF_ERROR(DecodePodObject(obj, FieldPath(), pod));
    pod.Finalize();
    return {};
  });
}

}  // namespace tidepool::kube::codec
