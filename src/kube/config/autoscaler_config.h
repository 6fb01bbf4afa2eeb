// Loading tidepool's configuration file (DESIGN §3) into model::AutoscalerConfig: strict YAML
// decoding and validation, so a bad config fails at startup with "file:line: key: expected ...".
#pragma once

#include <string>
#include <string_view>

#include "base/error.h"
#include "model/pool.h"

namespace tidepool::kube::config {

// The apiVersion and kind a config file must declare.
inline constexpr std::string_view kConfigApiVersion = "tidepool.dev/v1alpha1";
inline constexpr std::string_view kConfigKind = "AutoscalerConfig";

// Parses an AutoscalerConfig from YAML text; `source` (the file name) prefixes every error.
//
// Strict: unknown keys anywhere (except provider settings of non-kwok providers and resource
// names under `limits`), wrong types (a quoted "10" for an integer, a scalar for a map), values
// out of range, min > max, duplicate pool names and references to unknown pools are errors of
// code kInvalidArgument whose message names the file, the line, the key path and what was
// expected. An absent section or key keeps the defaults of model/pool.h. Never throws.
Result<model::AutoscalerConfig> ParseAutoscalerConfig(std::string_view yaml,
                                                      std::string_view source);

// Reads the file at `path` and parses it with ParseAutoscalerConfig (errors are prefixed with
// `path` as given). A missing or unreadable file is an error (kInvalidArgument) naming it.
Result<model::AutoscalerConfig> LoadAutoscalerConfig(const std::string& path);

}  // namespace tidepool::kube::config
