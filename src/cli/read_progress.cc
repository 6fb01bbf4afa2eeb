#include "cli/read_progress.h"

#include <fmt/format.h>

#include "base/time.h"

namespace tidepool::cli {

std::string ReadProgressLine::Format(const kube::codec::ListProgress& p,
                                     std::chrono::steady_clock::duration elapsed) {
  const double f = p.bytes_total == 0
                       ? 1
                       : static_cast<double>(p.bytes_read) / static_cast<double>(p.bytes_total);
  std::string line = fmt::format("reading {}: {:.0f}% of {:.1f} MB, {} objects", p.source, 100 * f,
                                 static_cast<double>(p.bytes_total) / 1e6, p.items);
  if (f >= 0.01 && f < 1) {
    const auto left = std::chrono::duration_cast<Duration>(elapsed * ((1 - f) / f));
    line += fmt::format(", ETA {}", FormatDuration(std::chrono::ceil<std::chrono::seconds>(left)));
  }
  return line;
}

void ReadProgressLine::Show(const kube::codec::ListProgress& p) {
  if (p.source != source_) {
    source_ = std::string(p.source);
    line_.Begin();
  }
  line_.Update([&](std::chrono::steady_clock::duration elapsed) { return Format(p, elapsed); });
}

}  // namespace tidepool::cli
