// `tidepool plan` and `explain` on a terminal: how far reading the cluster state is, on one line
// of stderr, for state files of tens of thousands of objects that take seconds to read.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

#include "cli/terminal_line.h"
#include "kube/codec/read_progress.h"

namespace tidepool::cli {

class ReadProgressLine {
 public:
  // `delay`: how long reading runs before the line is shown.
  explicit ReadProgressLine(std::FILE* out,
                            TerminalLine::Clock::duration delay = TerminalLine::kDelay)
      : line_(out, delay) {}

  // Shows `p` ("reading state.json: 45% of 20.2 MB, 22500 objects, ETA 1s") once reading has
  // taken `delay`, then at most five times a second.
  void Show(const kube::codec::ListProgress& p);
  // Reading ended: erases the line.
  void End() { line_.End(); }

  // The line for `p`, `elapsed` after its file began.
  static std::string Format(const kube::codec::ListProgress& p,
                            std::chrono::steady_clock::duration elapsed);

 private:
  TerminalLine line_;
  std::string source_;  // the file being shown
};

}  // namespace tidepool::cli
