// Fuzz target for state decoding (kube/codec/objects.h): DecodeState on the input as text, which
// runs the JSON/YAML detection, the YAML -> JSON conversion (aliases, merge keys, depth and size
// limits), List expansion and the Pod, Node, PDB and DaemonSet decoders. Besides not crashing:
// every error is prefixed with the source name, and none is kInternal, which DecodeState returns
// only when a library exception reached its last-resort catch (bad input should get a located
// kInvalidArgument error instead).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "kube/codec/objects.h"

using tidepool::Error;
using tidepool::fuzz::Printable;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto state = tidepool::kube::codec::DecodeState(text, "fuzz");
  if (!state) {
    const Error& e = state.error();
    FUZZ_EXPECT(e.message().starts_with("fuzz"),
                "error is not prefixed with the source: " + Printable(e.message()));
    FUZZ_EXPECT(e.code() != Error::Code::kInternal,
                "an exception escaped to the last-resort catch: " + Printable(e.message()));
    return 0;
  }
  for (const auto& pod : state->pods) {
    FUZZ_EXPECT(!pod.meta.name.empty(), "a decoded pod has no name");
  }
  for (const auto& node : state->nodes) {
    FUZZ_EXPECT(!node.meta.name.empty(), "a decoded node has no name");
  }
  return 0;
}
