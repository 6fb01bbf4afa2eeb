// The parser of device selectors: a lexer and a precedence-climbing parser for the CEL subset
// that sched/cel/cel.h lists. Anything else is a CompileError at the first token outside it.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <utility>

#include "sched/cel/cel_ast.h"

namespace tidepool::sched::cel::detail {
namespace {

enum class Tok : uint8_t { kEnd, kIdent, kInt, kString, kPunct };

struct Token {
  Tok kind = Tok::kEnd;
  size_t position = 0;
  std::string text;  // identifier, punctuation, or the decoded string
  int64_t int_value = 0;
};

constexpr size_t kMaxDepth = 64;

bool IsIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

class Parser {
 public:
  explicit Parser(std::string_view expr) : expr_(expr) {}

  std::expected<std::unique_ptr<Node>, CompileError> Run() {
    if (!Next()) return std::unexpected(error_);
    auto node = ParseOr(0);
    if (!node) return std::unexpected(error_);
    if (tok_.kind != Tok::kEnd) return std::unexpected(Fail(tok_.position, Unexpected()));
    return node;
  }

 private:
  CompileError Fail(size_t position, std::string message) {
    error_ = CompileError{std::string(expr_), position, std::move(message)};
    return error_;
  }
  std::string Unexpected() const {
    if (tok_.kind == Tok::kEnd) return "unexpected end of expression";
    if (tok_.kind == Tok::kString) return fmt::format("unexpected string \"{}\"", tok_.text);
    return fmt::format("unexpected \"{}\"", tok_.text);
  }
  bool Is(std::string_view punct) const { return tok_.kind == Tok::kPunct && tok_.text == punct; }

  // Reads the next token into tok_; false (with error_) on a lexical error.
  bool Next() {
    while (pos_ < expr_.size() && (expr_[pos_] == ' ' || expr_[pos_] == '\t' ||
                                   expr_[pos_] == '\n' || expr_[pos_] == '\r')) {
      ++pos_;
    }
    tok_ = Token{};
    tok_.position = pos_;
    if (pos_ >= expr_.size()) return true;
    char c = expr_[pos_];
    if (IsIdentStart(c)) {
      size_t start = pos_;
      while (pos_ < expr_.size() && (IsIdentStart(expr_[pos_]) || IsDigit(expr_[pos_]))) ++pos_;
      tok_.kind = Tok::kIdent;
      tok_.text = expr_.substr(start, pos_ - start);
      if (pos_ < expr_.size() && (expr_[pos_] == '"' || expr_[pos_] == '\'')) {
        Fail(start, "raw and byte string literals are not supported");
        return false;
      }
      return true;
    }
    if (IsDigit(c)) return LexInt();
    if (c == '"' || c == '\'') return LexString(c);
    static constexpr std::string_view kTwo[] = {"==", "!=", "<=", ">=", "&&", "||"};
    for (std::string_view two : kTwo) {
      if (expr_.substr(pos_, 2) == two) {
        tok_.kind = Tok::kPunct;
        tok_.text = two;
        pos_ += 2;
        return true;
      }
    }
    static constexpr std::string_view kOne = "<>!()[].,-";
    if (kOne.find(c) != std::string_view::npos) {
      tok_.kind = Tok::kPunct;
      tok_.text = std::string(1, c);
      ++pos_;
      return true;
    }
    Fail(pos_, fmt::format("unsupported character '{}'", c));
    return false;
  }

  bool LexInt() {
    size_t start = pos_;
    while (pos_ < expr_.size() && IsDigit(expr_[pos_])) ++pos_;
    if (pos_ < expr_.size() && (expr_[pos_] == '.' || expr_[pos_] == 'e' || expr_[pos_] == 'E' ||
                                expr_[pos_] == 'u' || expr_[pos_] == 'U' || expr_[pos_] == 'x')) {
      Fail(start, "only decimal int literals are supported (no doubles, uints or hex)");
      return false;
    }
    auto [ptr, ec] = std::from_chars(expr_.data() + start, expr_.data() + pos_, tok_.int_value);
    if (ec != std::errc()) {
      Fail(start, "int literal out of range");
      return false;
    }
    tok_.kind = Tok::kInt;
    tok_.text = expr_.substr(start, pos_ - start);
    return true;
  }

  bool LexString(char quote) {
    size_t start = pos_;
    if (expr_.substr(pos_, 3) == std::string(3, quote)) {
      Fail(start, "triple-quoted strings are not supported");
      return false;
    }
    ++pos_;
    std::string out;
    while (pos_ < expr_.size() && expr_[pos_] != quote) {
      char c = expr_[pos_++];
      if (c == '\n') break;
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (pos_ >= expr_.size()) break;
      char e = expr_[pos_++];
      switch (e) {
        case '\\':
        case '"':
        case '\'':
        case '`':
        case '?':
          out.push_back(e);
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'r':
          out.push_back('\r');
          break;
        default:
          Fail(pos_ - 2, fmt::format("unsupported escape \\{}", e));
          return false;
      }
    }
    if (pos_ >= expr_.size() || expr_[pos_] != quote) {
      Fail(start, "unterminated string literal");
      return false;
    }
    ++pos_;
    tok_.kind = Tok::kString;
    tok_.text = std::move(out);
    return true;
  }

  std::unique_ptr<Node> Make(Op op, size_t position) {
    auto n = std::make_unique<Node>();
    n->op = op;
    n->position = position;
    return n;
  }

  // Binary operators by precedence: 1 ||, 2 &&, 3 relations.
  static int Precedence(const Token& t, Op& op) {
    if (t.kind == Tok::kIdent && t.text == "in") return op = Op::kIn, 3;
    if (t.kind != Tok::kPunct) return 0;
    if (t.text == "||") return op = Op::kOr, 1;
    if (t.text == "&&") return op = Op::kAnd, 2;
    if (t.text == "==") return op = Op::kEq, 3;
    if (t.text == "!=") return op = Op::kNe, 3;
    if (t.text == "<") return op = Op::kLt, 3;
    if (t.text == "<=") return op = Op::kLe, 3;
    if (t.text == ">") return op = Op::kGt, 3;
    if (t.text == ">=") return op = Op::kGe, 3;
    return 0;
  }

  std::unique_ptr<Node> ParseOr(int min_precedence) {
    if (++depth_ > kMaxDepth) {
      Fail(tok_.position, "expression nested too deeply");
      return nullptr;
    }
    auto left = ParseUnary();
    while (left) {
      Op op;
      int prec = Precedence(tok_, op);
      if (prec == 0 || prec <= min_precedence) break;
      size_t position = tok_.position;
      if (!Next()) return nullptr;
      auto right = ParseOr(prec);
      if (!right) return nullptr;
      auto n = Make(op, position);
      n->children.push_back(std::move(left));
      n->children.push_back(std::move(right));
      left = std::move(n);
    }
    --depth_;
    if (left && Is("-")) {
      Fail(tok_.position, "arithmetic is not supported");
      return nullptr;
    }
    return left;
  }

  std::unique_ptr<Node> ParseUnary() {
    if (Is("!") || Is("-")) {
      auto n = Make(Is("!") ? Op::kNot : Op::kNeg, tok_.position);
      if (!Next()) return nullptr;
      if (++depth_ > kMaxDepth) {
        Fail(n->position, "expression nested too deeply");
        return nullptr;
      }
      auto operand = ParseUnary();
      --depth_;
      if (!operand) return nullptr;
      if (n->op == Op::kNeg && operand->op == Op::kInt) {
        operand->int_value = -operand->int_value;
        operand->position = n->position;
        return operand;
      }
      n->children.push_back(std::move(operand));
      return n;
    }
    return ParsePostfix(ParsePrimary());
  }

  std::unique_ptr<Node> ParsePrimary() {
    size_t position = tok_.position;
    switch (tok_.kind) {
      case Tok::kInt: {
        auto n = Make(Op::kInt, position);
        n->int_value = tok_.int_value;
        return Next() ? std::move(n) : nullptr;
      }
      case Tok::kString: {
        auto n = Make(Op::kString, position);
        n->text = tok_.text;
        return Next() ? std::move(n) : nullptr;
      }
      case Tok::kIdent:
        return ParseIdent();
      case Tok::kPunct:
        if (Is("(")) {
          if (!Next()) return nullptr;
          auto inner = ParseOr(0);
          if (!inner) return nullptr;
          if (!Is(")")) return Fail(tok_.position, "expected \")\""), nullptr;
          return Next() ? std::move(inner) : nullptr;
        }
        if (Is("[")) return ParseList();
        break;
      case Tok::kEnd:
        break;
    }
    Fail(position, Unexpected());
    return nullptr;
  }

  std::unique_ptr<Node> ParseList() {
    auto n = Make(Op::kList, tok_.position);
    if (!Next()) return nullptr;
    while (!Is("]")) {
      auto item = ParseOr(0);
      if (!item) return nullptr;
      if (item->op != Op::kString && item->op != Op::kInt && item->op != Op::kBool) {
        Fail(item->position, "list elements must be string, int or bool literals");
        return nullptr;
      }
      n->children.push_back(std::move(item));
      if (Is(",")) {
        if (!Next()) return nullptr;
      } else if (!Is("]")) {
        Fail(tok_.position, "expected \",\" or \"]\"");
        return nullptr;
      }
    }
    return Next() ? std::move(n) : nullptr;
  }

  std::unique_ptr<Node> ParseIdent() {
    std::string name = tok_.text;
    size_t position = tok_.position;
    if (!Next()) return nullptr;
    if (name == "true" || name == "false") {
      auto n = Make(Op::kBool, position);
      n->bool_value = name == "true";
      return n;
    }
    if (Is("(")) {
      Op op;
      if (name == "quantity")
        op = Op::kQuantity;
      else if (name == "semver")
        op = Op::kSemver;
      else if (name == "size")
        op = Op::kSize;
      else
        return Fail(position, fmt::format("unsupported function \"{}\"", name)), nullptr;
      auto n = Make(op, position);
      if (!ParseArgs(*n, 1)) return nullptr;
      return Fold(std::move(n), 0);
    }
    if (name != "device") {
      Fail(position, fmt::format("unknown variable \"{}\" (selectors see only \"device\")", name));
      return nullptr;
    }
    return Make(Op::kDevice, position);
  }

  // "(" args ")" with the current token at "(".
  bool ParseArgs(Node& n, size_t want) {
    size_t first = n.children.size();
    if (!Next()) return false;
    while (!Is(")")) {
      auto arg = ParseOr(0);
      if (!arg) return false;
      n.children.push_back(std::move(arg));
      if (Is(",")) {
        if (!Next()) return false;
      } else if (!Is(")")) {
        Fail(tok_.position, "expected \",\" or \")\"");
        return false;
      }
    }
    if (n.children.size() - first != want) {
      Fail(n.position,
           fmt::format("expected {} argument(s), got {}", want, n.children.size() - first));
      return false;
    }
    return Next();
  }

  // Folds a constant string argument (children[arg]) of quantity(), semver() and matches().
  std::unique_ptr<Node> Fold(std::unique_ptr<Node> n, size_t arg) {
    const Node& a = *n->children[arg];
    if (a.op != Op::kString) {
      if (n->op == Op::kSize) return n;
      return Fail(a.position, "the argument must be a string literal"), nullptr;
    }
    if (n->op == Op::kQuantity) {
      auto q = model::Quantity::Parse(a.text);
      if (!q) return Fail(a.position, fmt::format("invalid quantity \"{}\"", a.text)), nullptr;
      n->quantity = *q;
    } else if (n->op == Op::kSemver) {
      n->version_text = a.text;
      n->version = ParseVersion(n->version_text);
      if (!n->version)
        return Fail(a.position, fmt::format("invalid semver \"{}\"", a.text)), nullptr;
    } else if (n->op == Op::kMatches) {
      try {
        n->regex = std::make_unique<std::regex>(a.text, std::regex::ECMAScript);
      } catch (const std::regex_error&) {
        return Fail(a.position, fmt::format("invalid regular expression \"{}\"", a.text)), nullptr;
      }
    }
    return n;
  }

  std::unique_ptr<Node> ParsePostfix(std::unique_ptr<Node> left) {
    while (left) {
      if (Is(".")) {
        if (!Next()) return nullptr;
        if (tok_.kind != Tok::kIdent) return Fail(tok_.position, Unexpected()), nullptr;
        std::string name = tok_.text;
        size_t position = tok_.position;
        if (!Next()) return nullptr;
        if (Is("(")) {
          left = ParseMethod(std::move(left), name, position);
          continue;
        }
        auto n = Make(Op::kSelect, position);
        n->text = std::move(name);
        n->children.push_back(std::move(left));
        if (n->children[0]->op == Op::kDevice && n->text != "driver" && n->text != "attributes" &&
            n->text != "capacity") {
          return Fail(position, fmt::format("unsupported device field \"{}\"", n->text)), nullptr;
        }
        left = std::move(n);
      } else if (Is("[")) {
        auto n = Make(Op::kIndex, tok_.position);
        if (!Next()) return nullptr;
        auto key = ParseOr(0);
        if (!key) return nullptr;
        if (!Is("]")) return Fail(tok_.position, "expected \"]\""), nullptr;
        if (!Next()) return nullptr;
        n->children.push_back(std::move(left));
        n->children.push_back(std::move(key));
        left = std::move(n);
      } else {
        break;
      }
    }
    return left;
  }

  std::unique_ptr<Node> ParseMethod(std::unique_ptr<Node> target, const std::string& name,
                                    size_t position) {
    static const std::pair<std::string_view, Op> kMethods[] = {
        {"compareTo", Op::kCompareTo},   {"isGreaterThan", Op::kIsGreaterThan},
        {"isLessThan", Op::kIsLessThan}, {"startsWith", Op::kStartsWith},
        {"endsWith", Op::kEndsWith},     {"contains", Op::kContains},
        {"matches", Op::kMatches},       {"size", Op::kSize},
    };
    for (const auto& [method, op] : kMethods) {
      if (name != method) continue;
      auto n = Make(op, position);
      n->children.push_back(std::move(target));
      if (!ParseArgs(*n, op == Op::kSize ? 0 : 1)) return nullptr;
      if (op == Op::kMatches) return Fold(std::move(n), 1);
      return n;
    }
    return Fail(position, fmt::format("unsupported function \"{}\"", name)), nullptr;
  }

  std::string_view expr_;
  size_t pos_ = 0;
  size_t depth_ = 0;
  Token tok_;
  CompileError error_;
};

}  // namespace

std::optional<Version> ParseVersion(std::string_view text) {
  auto number = [&](std::string_view& s, int64_t& out) {
    size_t n = 0;
    while (n < s.size() && IsDigit(s[n])) ++n;
    if (n == 0 || (n > 1 && s[0] == '0')) return false;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + n, out);
    if (ec != std::errc()) return false;
    s.remove_prefix(n);
    return true;
  };
  Version v;
  std::string_view s = text;
  if (!number(s, v.major) || !s.starts_with('.')) return std::nullopt;
  s.remove_prefix(1);
  if (!number(s, v.minor) || !s.starts_with('.')) return std::nullopt;
  s.remove_prefix(1);
  if (!number(s, v.patch)) return std::nullopt;
  if (s.starts_with('-')) {
    s.remove_prefix(1);
    size_t end = s.find('+');
    v.pre = s.substr(0, end);
    if (v.pre.empty()) return std::nullopt;
    s = end == std::string_view::npos ? std::string_view() : s.substr(end);
  }
  if (s.starts_with('+')) s = s.substr(1).empty() ? s : std::string_view();
  if (!s.empty()) return std::nullopt;
  return v;
}

int CompareVersions(const Version& a, const Version& b) {
  if (a.major != b.major) return a.major < b.major ? -1 : 1;
  if (a.minor != b.minor) return a.minor < b.minor ? -1 : 1;
  if (a.patch != b.patch) return a.patch < b.patch ? -1 : 1;
  if (a.pre == b.pre) return 0;
  if (a.pre.empty()) return 1;  // a release is above its pre-releases
  if (b.pre.empty()) return -1;
  // Dot-separated identifiers: numeric ones compare numerically and below alphanumeric ones.
  std::string_view x = a.pre, y = b.pre;
  while (!x.empty() && !y.empty()) {
    std::string_view xi = x.substr(0, x.find('.')), yi = y.substr(0, y.find('.'));
    bool xn = std::all_of(xi.begin(), xi.end(), IsDigit),
         yn = std::all_of(yi.begin(), yi.end(), IsDigit);
    int c = 0;
    if (xn && yn) {
      c = xi.size() != yi.size() ? (xi.size() < yi.size() ? -1 : 1) : xi.compare(yi);
    } else if (xn != yn) {
      c = xn ? -1 : 1;
    } else {
      c = xi.compare(yi);
    }
    if (c != 0) return c < 0 ? -1 : 1;
    x = x.size() > xi.size() ? x.substr(xi.size() + 1) : std::string_view();
    y = y.size() > yi.size() ? y.substr(yi.size() + 1) : std::string_view();
  }
  return x.empty() == y.empty() ? 0 : (x.empty() ? -1 : 1);
}

std::expected<std::unique_ptr<Node>, CompileError> Parse(std::string_view expression) {
  return Parser(expression).Run();
}

}  // namespace tidepool::sched::cel::detail
