#include "sched/cel/cel.h"

#include <fmt/format.h>

#include "sched/cel/cel_ast.h"

namespace tidepool::sched::cel {

std::string CompileError::ToString() const {
  return fmt::format("CEL expression \"{}\" at position {}: {}", expression, position, message);
}

struct Program::Impl {
  std::string expression;
  std::unique_ptr<detail::Node> root;
};

Program::Program(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Program::~Program() = default;
Program::Program(Program&&) noexcept = default;
Program& Program::operator=(Program&&) noexcept = default;

std::expected<Program, CompileError> Program::Compile(std::string_view expression) {
  auto root = detail::Parse(expression);
  if (!root) return std::unexpected(std::move(root.error()));
  auto impl = std::make_unique<Impl>();
  impl->expression = std::string(expression);
  impl->root = std::move(*root);
  return Program(std::move(impl));
}

EvalResult Program::Eval(const DeviceView& device) const {
  EvalResult out;
  detail::Value v = detail::Evaluate(*impl_->root, device, &out.error);
  if (v.type == detail::Value::Type::kBool) {
    out.matches = v.b;
    out.error.clear();
  } else if (out.error.empty()) {
    out.error = "the expression is not a bool";
  }
  return out;
}

bool Program::Matches(const DeviceView& device) const {
  detail::Value v = detail::Evaluate(*impl_->root, device, nullptr);
  return v.type == detail::Value::Type::kBool && v.b;
}

const std::string& Program::expression() const { return impl_->expression; }

}  // namespace tidepool::sched::cel
