// Error and Result<T>: the one way every layer reports a failure across an I/O or parse boundary.
// An error says what went wrong, where, and what was expected; it never throws.
#pragma once

#include <fmt/format.h>

#include <expected>
#include <string>
#include <utility>

namespace tidepool {

// A failure with a human-readable message. `code` groups failures for callers that branch on
// them (exit codes, retry decisions); the message is for people and is never parsed.
class [[nodiscard]] Error {
 public:
  enum class Code {
    kInvalidArgument,  // bad input: config, state file, object, flag
    kNotFound,
    kConflict,     // 409 / precondition failed
    kUnavailable,  // transient: connection, 5xx, timeout; retrying may help
    kThrottled,    // 429
    kExpired,      // 410 Gone: a resourceVersion or continue token too old; relist
    kPermissionDenied,
    kInternal,
  };

  Error(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  Code code() const { return code_; }
  const std::string& message() const { return message_; }

  // Returns a copy whose message is prefixed with `context: `, for adding where-information
  // (a file name, an object name, a field path) as the error travels outwards.
  Error Wrap(std::string_view context) const {
    return Error(code_, fmt::format("{}: {}", context, message_));
  }

 private:
  Code code_;
  std::string message_;
};

// std::expected<T, Error> that must not be ignored: a dropped Result is a compile error under
// -Werror (the CI build). Drop one on purpose with `(void)`, and say why.
template <typename T>
class [[nodiscard]] Result : public std::expected<T, Error> {
 public:
  using Base = std::expected<T, Error>;
  using Base::Base;
  Result() = default;
  Result(const Base& b) : Base(b) {}        // NOLINT: implicit, as std::expected converts
  Result(Base&& b) : Base(std::move(b)) {}  // NOLINT
};

// Shorthand for `return std::unexpected(Error(...))` with fmt-style formatting.
template <typename... Args>
std::unexpected<Error> Fail(Error::Code code, fmt::format_string<Args...> f, Args&&... args) {
  return std::unexpected(Error(code, fmt::format(f, std::forward<Args>(args)...)));
}

template <typename... Args>
std::unexpected<Error> InvalidArgument(fmt::format_string<Args...> f, Args&&... args) {
  return Fail(Error::Code::kInvalidArgument, f, std::forward<Args>(args)...);
}

}  // namespace tidepool

// Propagates the error of an expression returning Result<T>; otherwise evaluates to nothing.
#define TIDEPOOL_RETURN_IF_ERROR(expr)                           \
  do {                                                           \
    auto _tp_status = (expr);                                    \
    if (!_tp_status) return std::unexpected(_tp_status.error()); \
  } while (0)

#define TIDEPOOL_CONCAT_INNER(a, b) a##b
#define TIDEPOOL_CONCAT(a, b) TIDEPOOL_CONCAT_INNER(a, b)
// `TIDEPOOL_ASSIGN_OR_RETURN(auto x, Parse(...));` binds the value or returns the error.
#define TIDEPOOL_ASSIGN_OR_RETURN(lhs, expr) \
  TIDEPOOL_ASSIGN_OR_RETURN_IMPL(TIDEPOOL_CONCAT(_tp_result_, __LINE__), lhs, expr)
#define TIDEPOOL_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr)      \
  auto tmp = (expr);                                        \
  if (!tmp) return std::unexpected(std::move(tmp).error()); \
  lhs = std::move(*tmp)
