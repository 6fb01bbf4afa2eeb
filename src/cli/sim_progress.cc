#include "cli/sim_progress.h"

#include <fmt/format.h>

#include "base/time.h"

namespace tidepool::cli {
namespace {

double Days(Duration d) { return Hours(d) / 24.0; }

// How much of the run is done: the jobs done, or the simulated time while none is.
double Fraction(const sim::Progress& p) {
  if (p.jobs > 0 && p.jobs_done > 0) return static_cast<double>(p.jobs_done) / p.jobs;
  if (p.trace_span.count() > 0) return std::min(1.0, Days(p.simulated) / Days(p.trace_span));
  return 0;
}

}  // namespace

std::string ProgressLine::Format(const sim::Progress& p,
                                 std::chrono::steady_clock::duration elapsed) {
  std::string line = p.run.empty() ? std::string("simulate") : fmt::format("simulate {}", p.run);
  line += fmt::format(": {}/{} jobs done, day {:.1f} of {:.1f}", p.jobs_done, p.jobs,
                      Days(p.simulated), Days(p.trace_span));
  const double f = Fraction(p);
  if (f >= 0.01 && f < 1) {
    const auto left = std::chrono::duration_cast<Duration>(elapsed * ((1 - f) / f));
    line += fmt::format(", ETA {}", FormatDuration(std::chrono::ceil<std::chrono::seconds>(left)));
  }
  return line;
}

void ProgressLine::Show(const sim::Progress& p) {
  if (run_ != p.run) {
    run_ = std::string(p.run);
    line_.Begin();
  }
  if (p.finished) {
    line_.End();
    run_.reset();
    return;
  }
  line_.Update([&](std::chrono::steady_clock::duration elapsed) { return Format(p, elapsed); });
}

}  // namespace tidepool::cli
