// `tidepool simulate` on a terminal: one progress line on stderr, rewritten in place, so a run of
// minutes says how far it is and how long it has left.
#pragma once

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>

#include "cli/terminal_line.h"
#include "sim/simulator.h"

namespace tidepool::cli {

class ProgressLine {
 public:
  // `delay`: how long a run goes before its line is shown.
  explicit ProgressLine(std::FILE* out, TerminalLine::Clock::duration delay = TerminalLine::kDelay)
      : line_(out, delay) {}

  // Shows `p` ("simulate ca-like: 4512/8152 jobs done, day 12.3 of 39.9, ETA 3s") once its run
  // has taken `delay`, then at most five times a second; a run's last call erases it.
  void Show(const sim::Progress& p);

  // The line for `p`, `elapsed` after its run began (for tests).
  static std::string Format(const sim::Progress& p, std::chrono::steady_clock::duration elapsed);

 private:
  TerminalLine line_;
  std::optional<std::string> run_;  // the run being shown
};

}  // namespace tidepool::cli
