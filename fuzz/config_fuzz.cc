// Fuzz target for kube/config's ParseAutoscalerConfig (strict YAML decoding and validation of
// tidepool's config file). Besides not crashing: every error is kInvalidArgument and prefixed with
// the source name, and none comes from the last-resort catch of a non-YAML exception ("cannot
// read the config: ...", "cannot parse YAML: ..."), which would mean a library exception escaped
// the reader instead of a located error. A config that parses has 0 <= min <= max per pool,
// unique pool names, and names only known pools as unavailable.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "kube/config/autoscaler_config.h"

using tidepool::Error;
using tidepool::fuzz::Printable;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto config = tidepool::kube::config::ParseAutoscalerConfig(text, "fuzz");
  if (!config) {
    const Error& e = config.error();
    const std::string& m = e.message();
    FUZZ_EXPECT(m.starts_with("fuzz"), "error is not prefixed with the source: " + Printable(m));
    FUZZ_EXPECT(e.code() == Error::Code::kInvalidArgument,
                "error code is not kInvalidArgument: " + Printable(m));
    // (Prefix checks: the input itself may contain these words, and libFuzzer will put them in.)
    FUZZ_EXPECT(!m.starts_with("fuzz: cannot read the config:") &&
                    !m.starts_with("fuzz: cannot parse YAML:"),
                "an exception escaped to the last-resort catch: " + Printable(m));
    return 0;
  }
  std::set<std::string> names;
  for (const auto& pool : config->pools) {
    FUZZ_EXPECT(pool.min >= 0 && pool.min <= pool.max,
                "pool \"" + Printable(pool.name) + "\" has min " + std::to_string(pool.min) +
                    " and max " + std::to_string(pool.max));
    FUZZ_EXPECT(names.insert(pool.name).second,
                "pool name \"" + Printable(pool.name) + "\" appears twice");
  }
  for (const auto& name : config->provider.unavailable_pools) {
    FUZZ_EXPECT(config->FindPool(name) != nullptr,
                "unavailable pool \"" + Printable(name) + "\" is not a pool");
  }
  return 0;
}
