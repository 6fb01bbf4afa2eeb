// Loading tidepool's configuration file (docs/configuration.md) into model::AutoscalerConfig:
// strict YAML decoding and validation, so a bad config fails at startup with "file:line: ...".
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/error.h"
#include "kube/config/yaml_reader.h"
#include "model/pool.h"

namespace tidepool::kube::config {

// The apiVersion and kind a config file must declare.
inline constexpr std::string_view kConfigApiVersion = "tidepool.dev/v1alpha1";
inline constexpr std::string_view kConfigKind = "AutoscalerConfig";

// A section of the config file that the core does not interpret, kept as its YAML subtree with
// the file name, key path and line, so the layer that owns it parses it strictly with errors
// pointing into the file: `simulation:` is read by sim/ (sim_config.h ParseSimSection), and
// kube/config does not depend on sim/. `plan` and `run` ignore it.
struct RawSection {
  YAML::Node node;
  std::string source;  // the file name
  std::string path;    // "simulation"
  int line = 0;
  // The subtree as a YamlValue; it views `source`, so it must not outlive this RawSection.
  YamlValue value() const { return YamlValue(node, source, path, line); }
};

// A whole config file: the AutoscalerConfig and the sections kept for other layers.
struct ConfigFile {
  model::AutoscalerConfig config;
  std::optional<RawSection> simulation;  // absent when the file has no `simulation:` key
};

// Parses an AutoscalerConfig from YAML text; `source` (the file name) prefixes every error.
//
// Strict: unknown keys anywhere (except provider settings of non-kwok providers, resource
// names under `limits`, and inside `simulation:`, which sim/ checks; see RawSection), wrong types
// (a quoted "10" for an integer, a scalar for a map), values out of range, min > max, duplicate
// pool names and references to unknown pools are errors of code kInvalidArgument whose message
// names the file, the line, the key path and what was expected. An absent section or key keeps the
// defaults of model/pool.h. Never throws.
Result<model::AutoscalerConfig> ParseAutoscalerConfig(std::string_view yaml,
                                                      std::string_view source);
// The same, keeping the `simulation:` section (which must be a map or empty) for sim/.
Result<ConfigFile> ParseConfigFile(std::string_view yaml, std::string_view source);

// Reads the file at `path` and parses it with ParseAutoscalerConfig (errors are prefixed with
// `path` as given). A missing or unreadable file is an error (kInvalidArgument) naming it.
Result<model::AutoscalerConfig> LoadAutoscalerConfig(const std::string& path);

// For the commands that work offline (`plan`, `explain`, `simulate`): an error when the pools'
// shapes come from a live cluster (provider type clusterapi), naming `source` and `command`.
Result<void> RequirePoolsInFile(const model::AutoscalerConfig& config, std::string_view source,
                                std::string_view command);
Result<ConfigFile> LoadConfigFile(const std::string& path);

}  // namespace tidepool::kube::config
