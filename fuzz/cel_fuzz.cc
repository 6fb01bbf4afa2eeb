// Fuzz target for the device selector subset (sched/cel/cel.h): Program::Compile on the input,
// then Eval against a device with attributes of every kind and a capacity. Besides not crashing
// (deep nesting, bad escapes, huge literals): a refused expression's error quotes it and points
// inside it; a compiled one evaluates to the same verdict through Eval and Matches, and an error
// never matches.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "sched/cel/cel.h"

using tidepool::fuzz::Printable;
namespace cel = tidepool::sched::cel;
using tidepool::model::DeviceAttribute;

namespace {

const tidepool::model::Device& TestDevice() {
  static const tidepool::model::Device* device = [] {
    auto* d = new tidepool::model::Device;
    d->name = "gpu-0";
    d->attributes["gpu.example.com/productName"] = {.kind = DeviceAttribute::Kind::kString,
                                                    .text = "A100"};
    d->attributes["gpu.example.com/index"] = {.kind = DeviceAttribute::Kind::kInt, .int_value = 1};
    d->attributes["gpu.example.com/mig"] = {.kind = DeviceAttribute::Kind::kBool};
    d->attributes["gpu.example.com/driverVersion"] = {.kind = DeviceAttribute::Kind::kVersion,
                                                      .text = "1.2.3-rc.1"};
    d->capacity["gpu.example.com/memory"] = *tidepool::model::Quantity::Parse("80Gi");
    return d;
  }();
  return *device;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto program = cel::Program::Compile(text);
  if (!program) {
    const cel::CompileError& e = program.error();
    FUZZ_EXPECT(e.expression == text, "the error does not quote the expression");
    FUZZ_EXPECT(e.position <= text.size(),
                "error position beyond the expression: " + Printable(text));
    FUZZ_EXPECT(!e.message.empty(), "an error without a message: " + Printable(text));
    return 0;
  }
  cel::DeviceView view{"gpu.example.com", &TestDevice()};
  cel::EvalResult r = program->Eval(view);
  FUZZ_EXPECT(r.matches == program->Matches(view),
              "Eval and Matches disagree on " + Printable(text));
  FUZZ_EXPECT(!(r.matches && !r.error.empty()), "an error matched: " + Printable(text));
  return 0;
}
