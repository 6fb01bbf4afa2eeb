// One status line on a terminal, rewritten in place, for work that takes seconds: shown once the
// work has taken `delay` (half a second unless told), redrawn at most five times a second, erased
// when it ends.
#pragma once

#include <chrono>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace tidepool::cli {

class TerminalLine {
 public:
  using Clock = std::chrono::steady_clock;

  // How long work runs before its line is shown: quick work shows nothing.
  static constexpr std::chrono::milliseconds kDelay{500};

  explicit TerminalLine(std::FILE* out, Clock::duration delay = kDelay)
      : out_(out), delay_(delay) {}

  // The delay for a --progress mode: `always` shows the line from the start, however quick the
  // work; `auto` waits kDelay.
  static Clock::duration DelayFor(std::string_view mode) {
    return mode == "always" ? Clock::duration::zero() : Clock::duration(kDelay);
  }

  // A new piece of work starts: its line waits half a second again.
  void Begin();
  // Draws the line `text(elapsed since Begin)` gives, when one is due (Begin is implied).
  void Update(const std::function<std::string(Clock::duration)>& text);
  // The work ended: erases the line if it was drawn.
  void End();

 private:
  std::FILE* out_;
  Clock::duration delay_;
  std::optional<Clock::time_point> began_;
  Clock::time_point last_{};
  bool shown_ = false;
};

}  // namespace tidepool::cli
