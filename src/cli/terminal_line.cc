#include "cli/terminal_line.h"

namespace tidepool::cli {

void TerminalLine::Begin() { began_ = Clock::now(); }

void TerminalLine::Update(const std::function<std::string(Clock::duration)>& text) {
  const auto now = Clock::now();
  if (!began_) began_ = now;
  // Quick work shows nothing; long work is redrawn five times a second.
  if (now - *began_ < delay_) return;
  if (shown_ && now - last_ < std::chrono::milliseconds(200)) return;
  std::fprintf(out_, "\r\033[K%s", text(now - *began_).c_str());
  std::fflush(out_);
  shown_ = true;
  last_ = now;
}

void TerminalLine::End() {
  if (shown_) std::fprintf(out_, "\r\033[K");
  std::fflush(out_);
  shown_ = false;
  began_.reset();
}

}  // namespace tidepool::cli
