// Decoding of Kubernetes objects (v1 Pod, v1 Node, policy/v1 PodDisruptionBudget, apps/v1
// DaemonSet) from JSON or YAML: single objects, a List, or multi-document YAML, exactly what
// `kubectl get nodes,pods,pdb -A -o yaml|json` prints. Unknown fields and kinds are ignored.
#pragma once

#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "kube/codec/read_progress.h"
#include "model/capacity_buffer.h"
#include "model/daemonset.h"
#include "model/dra.h"
#include "model/node.h"
#include "model/pdb.h"
#include "model/pod.h"
#include "model/provisioning_request.h"

namespace YAML {
class Node;
}  // namespace YAML

namespace tidepool::kube::codec {

// Everything a state file held, in file order per kind. Objects of other kinds are counted in
// `ignored` (by "Kind" name) and otherwise skipped.
struct ClusterState {
  std::vector<model::Node> nodes;
  std::vector<model::Pod> pods;
  std::vector<model::PodDisruptionBudget> pdbs;
  std::vector<model::DaemonSet> daemon_sets;
  std::vector<model::ProvisioningRequest> provisioning_requests;
  std::vector<model::PodTemplate> pod_templates;
  std::vector<model::CapacityBuffer> capacity_buffers;
  std::vector<model::Deployment> deployments;
  model::DraObjects dra;  // resource.k8s.io/v1 (kube/codec/dra.h)
  std::map<std::string, int> ignored;
};

// Decodes one object of the given kind from a JSON tree. Errors name the object and the field
// path, e.g. `Pod default/web-1: spec.containers[0].resources.requests.cpu: expected a
// quantity, got "lots"`. A missing metadata.name, a `kind` other than the expected one, a
// field of the wrong type and an enum value Kubernetes does not define are errors; unknown
// fields are ignored and JSON null reads as absent. Never throws.
//
// What the API server would have defaulted is applied, so a hand-written object decodes like
// one read back from a cluster: a limit without a request is the request; a host-network
// pod's ports get hostPort = containerPort; an empty toleration operator is Equal. A generic
// ephemeral volume is a PVC named "<pod>-<volume>". The returned Pod is Finalize()d.
Result<model::Pod> DecodePod(const nlohmann::json& obj);
// status.allocatable falls back to status.capacity when absent (or empty); ready is the Ready
// condition being "True".
Result<model::Node> DecodeNode(const nlohmann::json& obj);
// minAvailable/maxUnavailable: a non-negative integer or "N%" with N <= 100.
Result<model::PodDisruptionBudget> DecodePdb(const nlohmann::json& obj);
// pod_template is spec.template decoded as a pod the DaemonSet controller would create: the
// DaemonSet's namespace, its name unless the template names itself, a controller owner
// reference to the DaemonSet (so IsDaemonSetPod()), and the tolerations the controller adds
// (not-ready and unreachable NoExecute; disk-, memory-, pid-pressure and unschedulable
// NoSchedule; network-unavailable for host-network pods). Finalize()d.
Result<model::DaemonSet> DecodeDaemonSet(const nlohmann::json& obj);

// Parses text that is JSON or YAML (detected by content) into JSON trees: one per document;
// a `List` (kind List or *List with items) is expanded into its items. `source` names the input
// in errors (a file name). YAML plain scalars become JSON numbers/bools/null as YAML 1.2's core
// schema reads them; quoted scalars stay strings.
Result<std::vector<nlohmann::json>> ParseDocuments(std::string_view text, std::string_view source);

// Parses and decodes a whole state input. Errors are prefixed with `source`; an object without
// a name, and a document without `kind`, are also located ("document 2, items[5]"). Decoded:
// v1 Pod and Node (apiVersion v1 or absent), PodDisruptionBudget of policy/v1 and
// policy/v1beta1, DaemonSet of apps/* and extensions/*, ProvisioningRequest of
// autoscaling.x-k8s.io/v1 and v1 PodTemplate (kube/codec/provisioning.h), CapacityBuffer of
// autoscaling.x-k8s.io/v1beta1 and Deployment of apps/v1 (kube/codec/capacity_buffer.h; a
// Deployment whose template does not decode is kept with its error), DeviceClass,
// ResourceClaim, ResourceClaimTemplate and ResourceSlice of resource.k8s.io/v1
// (kube/codec/dra.h); anything else is counted in `ignored`
// (a known kind of another apiVersion as "Kind (apiVersion)"). Empty input is an empty state.
// `progress`, when set, is told how far a JSON List is read (kube/codec/list_stream.h).
// `threads` 2 decodes a JSON List's items on a second thread while the first parses the next
// ones (kube/codec/decode_pipeline.h); the state is the same as with 1.
Result<ClusterState> DecodeState(std::string_view text, std::string_view source,
                                 const OnListProgress& progress = {}, int threads = 1);
// Reads the file and decodes it; a missing or unreadable file is an error naming it (code
// kNotFound when it does not exist).
Result<ClusterState> LoadStateFile(const std::string& path, const OnListProgress& progress = {},
                                   int threads = 1);
// A file, or all files of a directory (*.yaml, *.yml, *.json, sorted by name, not recursive)
// into one state. A directory without such files is an error.
Result<ClusterState> LoadStatePath(const std::string& path, const OnListProgress& progress = {},
                                   int threads = 1);

// Converts a YAML document (yaml-cpp) into a JSON tree. Exposed for the config loader.
// Same scalar rules as ParseDocuments; duplicate keys are errors, merge keys (`<<`) are
// applied. Errors name `source` and the line.
Result<nlohmann::json> YamlToJson(const YAML::Node& node, std::string_view source);

}  // namespace tidepool::kube::codec
