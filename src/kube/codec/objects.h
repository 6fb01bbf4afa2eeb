// Decoding of Kubernetes objects (v1 Pod, v1 Node, policy/v1 PodDisruptionBudget, apps/v1
// DaemonSet) from JSON or YAML: single objects, a List, or multi-document YAML, exactly what
// `kubectl get nodes,pods,pdb -A -o yaml|json` prints. Unknown fields and kinds are ignored.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/error.h"
#include "model/daemonset.h"
#include "model/node.h"
#include "model/pdb.h"
#include "model/pod.h"

namespace tidepool::kube::codec {

// Everything a state file held, in file order per kind. Objects of other kinds are counted in
// `ignored` (by "Kind" name) and otherwise skipped.
struct ClusterState {
  std::vector<model::Node> nodes;
  std::vector<model::Pod> pods;
  std::vector<model::PodDisruptionBudget> pdbs;
  std::vector<model::DaemonSet> daemon_sets;
  std::map<std::string, int> ignored;
};

// Decodes one object of the given kind from a JSON tree. Errors name the object and the field
// path, e.g. `Pod default/web-1: spec.containers[0].resources.requests.cpu: expected a
// quantity, got "lots"`.
Result<model::Pod> DecodePod(const nlohmann::json& obj);
Result<model::Node> DecodeNode(const nlohmann::json& obj);
Result<model::PodDisruptionBudget> DecodePdb(const nlohmann::json& obj);
Result<model::DaemonSet> DecodeDaemonSet(const nlohmann::json& obj);

// Parses text that is JSON or YAML (detected by content) into JSON trees: one per document;
// a `List` (kind List or *List with items) is expanded into its items. `source` names the input
// in errors (a file name). YAML plain scalars become JSON numbers/bools/null as YAML 1.2's core
// schema reads them; quoted scalars stay strings.
Result<std::vector<nlohmann::json>> ParseDocuments(std::string_view text, std::string_view source);

// Parses and decodes a whole state input. Errors are prefixed with `source`.
Result<ClusterState> DecodeState(std::string_view text, std::string_view source);
// Reads the file and decodes it; a missing or unreadable file is an error naming it.
Result<ClusterState> LoadStateFile(const std::string& path);
// Reads all files of a directory (*.yaml, *.yml, *.json, sorted by name) into one state.
Result<ClusterState> LoadStatePath(const std::string& path);

// Converts a YAML document (yaml-cpp) into a JSON tree. Exposed for the config loader.
}  // namespace tidepool::kube::codec
