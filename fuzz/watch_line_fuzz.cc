// Fuzz target for the watch-stream decoder of kube/client: LineSplitter over the input cut into
// pieces at positions the input's first byte chooses, then DecodeWatchLine on every line (and
// StatusObjectToError on ERROR events). Besides not crashing: cutting the stream differently never
// changes the lines (compared with feeding it whole), a line never contains '\n' and is never
// empty, errors are kInvalidArgument starting with "watch event", and a decoded event's object is
// a JSON object.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.h"
#include "kube/client/api_client.h"

using tidepool::Error;
using tidepool::fuzz::Printable;
using tidepool::kube::LineSplitter;
using tidepool::kube::WatchEvent;

namespace {

std::vector<std::string> Lines(std::string_view text, size_t step) {
  LineSplitter splitter;
  std::vector<std::string> lines;
  auto on_line = [&](std::string_view line) {
    lines.emplace_back(line);
    return true;
  };
  for (size_t i = 0; i < text.size(); i += step) {
    splitter.Feed(text.substr(i, step), on_line);
  }
  return lines;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  size_t step = 1 + data[0] % 17;
  std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::vector<std::string> whole = Lines(text, text.size() + 1);
  std::vector<std::string> pieces = Lines(text, step);
  FUZZ_EXPECT(whole == pieces,
              "lines differ when the stream is cut every " + std::to_string(step) + " bytes");
  for (const auto& line : whole) {
    FUZZ_EXPECT(!line.empty(), "an empty line was handed on");
    FUZZ_EXPECT(line.find('\n') == std::string::npos, "a line contains a newline");
    auto event = tidepool::kube::DecodeWatchLine(line);
    if (!event) {
      const std::string& m = event.error().message();
      FUZZ_EXPECT(event.error().code() == Error::Code::kInvalidArgument,
                  "error code is not kInvalidArgument: " + Printable(m));
      FUZZ_EXPECT(m.starts_with("watch event"), "error does not say where: " + Printable(m));
      continue;
    }
    FUZZ_EXPECT(event->object.is_object(), "decoded event without an object");
    if (event->type == WatchEvent::Type::kError) {
      Error e = tidepool::kube::StatusObjectToError("GET", "/api/v1/pods", event->object);
      FUZZ_EXPECT(e.message().starts_with("GET /api/v1/pods: watch error"),
                  "unexpected message: " + Printable(e.message()));
    }
  }
  return 0;
}
