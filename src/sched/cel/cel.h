// Device selectors of Dynamic Resource Allocation: the subset of CEL that DeviceClasses and
// ResourceClaims use, compiled once per expression and evaluated against one device at a time.
//
// Why an own subset instead of cel-go: tidepool is a C++ binary and no C++ CEL library is
// packaged; linking cel-go (or kube-scheduler's allocator) would mean a cgo archive, a Go
// toolchain in every build of the autoscaler (testenv's is only for tests) and a second runtime
// in the process, for expressions that in practice are a handful of comparisons. The subset is
// exact where it is implemented and refuses the rest: an expression that uses anything else
// fails to compile with the position of the first unsupported construct, so a pool is reported
// as not fitting with that reason instead of being matched by a guess.
//
// Supported: `device.driver`; `device.attributes["domain"].name` and
// `device.attributes["domain"]["name"]`; the same for `device.capacity`; string (single or
// double quoted), int and bool literals; list literals; `==`, `!=`, `<`, `<=`, `>`, `>=`, `&&`,
// `||`, `!`, unary `-`, `in` (a list, or a key of the attribute/capacity maps); parentheses;
// `quantity("80Gi")` with `.compareTo()`, `.isGreaterThan()`, `.isLessThan()`; `semver("1.2.3")`
// and version attributes with the same three methods; strings' `.startsWith()`, `.endsWith()`,
// `.contains()`, `.matches()` (ECMAScript regular expressions, which agree with RE2 on the
// patterns selectors use) and `size()`.
//
// Evaluation follows CEL: a missing map key, or operands of types no operator takes, is an
// error, and `false && error` is false, `true || error` true. An error never matches a device;
// its message is kept for the reason.
#pragma once

#include <cstddef>
#include <expected>
#include <memory>
#include <string>
#include <string_view>

#include "model/dra.h"

namespace tidepool::sched::cel {

// Why an expression was refused: the expression, the byte offset of the offending token and what
// was found there.
struct CompileError {
  std::string expression;
  size_t position = 0;
  std::string message;

  // `CEL expression "..." at position 12: unsupported function "exists"`.
  std::string ToString() const;
};

// The device an expression is evaluated against.
struct DeviceView {
  std::string_view driver;
  const model::Device* device = nullptr;
};

struct EvalResult {
  bool matches = false;
  std::string error;  // set when evaluation failed (then matches is false)
};

class Program {
 public:
  ~Program();
  Program(Program&&) noexcept;
  Program& operator=(Program&&) noexcept;

  // Parses and checks `expression`; never throws.
  static std::expected<Program, CompileError> Compile(std::string_view expression);

  // True when the expression is true for the device. Allocation-free unless it fails.
  EvalResult Eval(const DeviceView& device) const;
  // Just the verdict, for the hot path.
  bool Matches(const DeviceView& device) const;

  const std::string& expression() const;

 private:
  struct Impl;
  explicit Program(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tidepool::sched::cel
