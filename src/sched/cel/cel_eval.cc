// The evaluator of device selectors: walks the compiled tree against one device. Values are
// views, so a successful evaluation allocates nothing; errors are described only when asked.
#include <fmt/format.h>

#include <utility>

#include "sched/cel/cel_ast.h"

namespace tidepool::sched::cel::detail {
namespace {

using Type = Value::Type;

std::string_view TypeName(Type t) {
  switch (t) {
    case Type::kError:
      return "error";
    case Type::kBool:
      return "bool";
    case Type::kInt:
      return "int";
    case Type::kString:
      return "string";
    case Type::kQuantity:
      return "quantity";
    case Type::kVersion:
      return "semver";
    case Type::kDevice:
      return "device";
    case Type::kAttributes:
    case Type::kCapacity:
    case Type::kAttrDomain:
    case Type::kCapDomain:
      return "map";
    case Type::kList:
      return "list";
  }
  return "?";
}

class Evaluator {
 public:
  Evaluator(const DeviceView& device, std::string* error) : device_(device), error_(error) {}

  Value Eval(const Node& n) {
    switch (n.op) {
      case Op::kBool:
        return Bool(n.bool_value);
      case Op::kInt:
        return Int(n.int_value);
      case Op::kString:
        return String(n.text);
      case Op::kDevice:
        return Of(Type::kDevice);
      case Op::kList: {
        Value v = Of(Type::kList);
        v.list = &n;
        return v;
      }
      case Op::kSelect:
        return Select(Eval(*n.children[0]), n.text, n);
      case Op::kIndex: {
        Value target = Eval(*n.children[0]);
        if (target.type == Type::kError) return target;
        Value key = Eval(*n.children[1]);
        if (key.type == Type::kError) return key;
        if (key.type != Type::kString) return Error(n, "map keys must be strings");
        return Select(target, key.s, n);
      }
      case Op::kNot: {
        Value v = Eval(*n.children[0]);
        if (v.type == Type::kError) return v;
        if (v.type != Type::kBool) return Mismatch(n, "!", v);
        return Bool(!v.b);
      }
      case Op::kNeg: {
        Value v = Eval(*n.children[0]);
        if (v.type == Type::kError) return v;
        if (v.type != Type::kInt) return Mismatch(n, "-", v);
        return Int(-v.i);
      }
      case Op::kAnd:
        return Logical(n, false);
      case Op::kOr:
        return Logical(n, true);
      case Op::kEq:
      case Op::kNe:
      case Op::kLt:
      case Op::kLe:
      case Op::kGt:
      case Op::kGe:
        return Compare(n);
      case Op::kIn:
        return In(n);
      case Op::kQuantity: {
        Value v = Of(Type::kQuantity);
        v.q = *n.quantity;
        return v;
      }
      case Op::kSemver: {
        Value v = Of(Type::kVersion);
        v.v = *n.version;
        return v;
      }
      case Op::kSize:
        return Size(n);
      case Op::kCompareTo:
      case Op::kIsGreaterThan:
      case Op::kIsLessThan:
        return Order(n);
      case Op::kStartsWith:
      case Op::kEndsWith:
      case Op::kContains:
      case Op::kMatches:
        return StringMethod(n);
    }
    return Error(n, "unknown operation");
  }

 private:
  static Value Of(Type t) {
    Value v;
    v.type = t;
    return v;
  }
  static Value Bool(bool b) {
    Value v = Of(Type::kBool);
    v.b = b;
    return v;
  }
  static Value Int(int64_t i) {
    Value v = Of(Type::kInt);
    v.i = i;
    return v;
  }
  static Value String(std::string_view s) {
    Value v = Of(Type::kString);
    v.s = s;
    return v;
  }

  Value Error(const Node& n, std::string_view message) {
    if (error_ != nullptr && error_->empty()) {
      *error_ = fmt::format("position {}: {}", n.position, message);
    }
    return Of(Type::kError);
  }
  Value Mismatch(const Node& n, std::string_view op, const Value& a) {
    if (error_ == nullptr) return Of(Type::kError);
    return Error(n, fmt::format("no such overload: {} {}", op, TypeName(a.type)));
  }
  Value Mismatch(const Node& n, std::string_view op, const Value& a, const Value& b) {
    if (error_ == nullptr) return Of(Type::kError);
    return Error(n,
                 fmt::format("no such overload: {} {} {}", TypeName(a.type), op, TypeName(b.type)));
  }

  // `target.field` and `target["field"]`.
  Value Select(const Value& target, std::string_view field, const Node& n) {
    switch (target.type) {
      case Type::kError:
        return target;
      case Type::kDevice:
        if (field == "driver") return String(device_.driver);
        if (field == "attributes") return Of(Type::kAttributes);
        if (field == "capacity") return Of(Type::kCapacity);
        break;
      case Type::kAttributes:
      case Type::kCapacity: {
        // A domain without attributes reads as an empty map, as Kubernetes' device type does.
        Value v = Of(target.type == Type::kAttributes ? Type::kAttrDomain : Type::kCapDomain);
        v.s = field;
        return v;
      }
      case Type::kAttrDomain:
        return Attribute(target.s, field, n);
      case Type::kCapDomain:
        return Capacity(target.s, field, n);
      default:
        break;
    }
    if (error_ == nullptr) return Of(Type::kError);
    return Error(n, fmt::format("no such field \"{}\" on {}", field, TypeName(target.type)));
  }

  // The fully qualified name without building a string: "domain/name" compared piecewise.
  template <typename Map>
  static auto FindQualified(const Map& map, std::string_view domain, std::string_view name) {
    // The map is ordered by the full name; find the first key >= "domain/" and scan the domain.
    auto it = map.lower_bound(domain);
    for (; it != map.end(); ++it) {
      std::string_view k = it->first;
      if (!k.starts_with(domain)) break;
      if (k.size() == domain.size() + 1 + name.size() && k[domain.size()] == '/' &&
          k.substr(domain.size() + 1) == name) {
        return it;
      }
    }
    return map.end();
  }

  Value NoSuchKey(const Node& n, std::string_view domain, std::string_view name) {
    if (error_ == nullptr) return Of(Type::kError);
    return Error(n, fmt::format("no such key: {}/{}", domain, name));
  }

  Value Attribute(std::string_view domain, std::string_view name, const Node& n) {
    const auto& attrs = device_.device->attributes;
    auto it = FindQualified(attrs, domain, name);
    if (it == attrs.end()) return NoSuchKey(n, domain, name);
    const model::DeviceAttribute& a = it->second;
    switch (a.kind) {
      case model::DeviceAttribute::Kind::kInt:
        return Int(a.int_value);
      case model::DeviceAttribute::Kind::kBool:
        return Bool(a.bool_value);
      case model::DeviceAttribute::Kind::kString:
        return String(a.text);
      case model::DeviceAttribute::Kind::kVersion: {
        auto v = ParseVersion(a.text);
        if (!v) return Error(n, fmt::format("attribute {}/{} is not a semver", domain, name));
        Value out = Of(Type::kVersion);
        out.v = *v;
        return out;
      }
    }
    return Of(Type::kError);
  }

  Value Capacity(std::string_view domain, std::string_view name, const Node& n) {
    const auto& caps = device_.device->capacity;
    auto it = FindQualified(caps, domain, name);
    if (it == caps.end()) return NoSuchKey(n, domain, name);
    Value v = Of(Type::kQuantity);
    v.q = it->second;
    return v;
  }

  // CEL's commutative && and ||: a definite answer on either side wins over an error.
  Value Logical(const Node& n, bool is_or) {
    Value a = Eval(*n.children[0]);
    if (a.type == Type::kBool && a.b == is_or) return a;
    if (a.type != Type::kBool && a.type != Type::kError) return Mismatch(n, is_or ? "||" : "&&", a);
    Value b = Eval(*n.children[1]);
    if (b.type == Type::kBool && b.b == is_or) return b;
    if (b.type != Type::kBool && b.type != Type::kError) return Mismatch(n, is_or ? "||" : "&&", b);
    if (a.type == Type::kError) return a;
    return b;
  }

  // <0, 0, >0, or nullopt when the two cannot be compared.
  static std::optional<int> Order(const Value& a, const Value& b) {
    if (a.type != b.type) return std::nullopt;
    switch (a.type) {
      case Type::kInt:
        return a.i < b.i ? -1 : a.i > b.i;
      case Type::kString: {
        int c = a.s.compare(b.s);
        return c < 0 ? -1 : c > 0;
      }
      case Type::kBool:
        return static_cast<int>(a.b) - static_cast<int>(b.b);
      case Type::kQuantity:
        return a.q < b.q ? -1 : a.q > b.q;
      case Type::kVersion:
        return CompareVersions(a.v, b.v);
      default:
        return std::nullopt;
    }
  }

  Value Compare(const Node& n) {
    Value a = Eval(*n.children[0]);
    if (a.type == Type::kError) return a;
    Value b = Eval(*n.children[1]);
    if (b.type == Type::kError) return b;
    std::optional<int> c = Order(a, b);
    bool equality = n.op == Op::kEq || n.op == Op::kNe;
    // Ordering is defined for int, string and bool; quantities and versions use their methods.
    bool orderable = a.type == Type::kInt || a.type == Type::kString || a.type == Type::kBool;
    if (!c || (!equality && !orderable)) {
      // Values of different types are never equal (CEL's heterogeneous equality).
      if (equality && a.type != b.type && a.type < Type::kDevice && b.type < Type::kDevice) {
        return Bool(n.op == Op::kNe);
      }
      static constexpr std::string_view kNames[] = {"==", "!=", "<", "<=", ">", ">="};
      return Mismatch(n, kNames[static_cast<int>(n.op) - static_cast<int>(Op::kEq)], a, b);
    }
    switch (n.op) {
      case Op::kEq:
        return Bool(*c == 0);
      case Op::kNe:
        return Bool(*c != 0);
      case Op::kLt:
        return Bool(*c < 0);
      case Op::kLe:
        return Bool(*c <= 0);
      case Op::kGt:
        return Bool(*c > 0);
      default:
        return Bool(*c >= 0);
    }
  }

  Value In(const Node& n) {
    Value item = Eval(*n.children[0]);
    if (item.type == Type::kError) return item;
    Value container = Eval(*n.children[1]);
    if (container.type == Type::kError) return container;
    if (container.type == Type::kList) {
      for (const auto& element : container.list->children) {
        std::optional<int> c = Order(item, Eval(*element));
        if (c && *c == 0) return Bool(true);
      }
      return Bool(false);
    }
    if (item.type != Type::kString) return Mismatch(n, "in", item, container);
    switch (container.type) {
      case Type::kAttributes:
      case Type::kCapacity: {
        bool attrs = container.type == Type::kAttributes;
        auto has_domain = [&](const auto& map) {
          auto it = map.lower_bound(item.s);
          return it != map.end() && it->first.size() > item.s.size() &&
                 it->first.starts_with(item.s) && it->first[item.s.size()] == '/';
        };
        return Bool(attrs ? has_domain(device_.device->attributes)
                          : has_domain(device_.device->capacity));
      }
      case Type::kAttrDomain:
        return Bool(FindQualified(device_.device->attributes, container.s, item.s) !=
                    device_.device->attributes.end());
      case Type::kCapDomain:
        return Bool(FindQualified(device_.device->capacity, container.s, item.s) !=
                    device_.device->capacity.end());
      default:
        return Mismatch(n, "in", item, container);
    }
  }

  Value Size(const Node& n) {
    Value v = Eval(*n.children[0]);
    if (v.type == Type::kError) return v;
    if (v.type == Type::kString) return Int(static_cast<int64_t>(v.s.size()));
    if (v.type == Type::kList) return Int(static_cast<int64_t>(v.list->children.size()));
    return Mismatch(n, "size", v);
  }

  // compareTo / isGreaterThan / isLessThan on quantities and versions.
  Value Order(const Node& n) {
    Value a = Eval(*n.children[0]);
    if (a.type == Type::kError) return a;
    Value b = Eval(*n.children[1]);
    if (b.type == Type::kError) return b;
    std::optional<int> c = Order(a, b);
    if (!c || (a.type != Type::kQuantity && a.type != Type::kVersion)) {
      return Mismatch(n, n.op == Op::kCompareTo ? ".compareTo" : ".isGreaterThan/.isLessThan", a,
                      b);
    }
    if (n.op == Op::kCompareTo) return Int(*c);
    return Bool(n.op == Op::kIsGreaterThan ? *c > 0 : *c < 0);
  }

  Value StringMethod(const Node& n) {
    Value a = Eval(*n.children[0]);
    if (a.type == Type::kError) return a;
    if (n.op == Op::kMatches) {
      if (a.type != Type::kString) return Mismatch(n, ".matches", a);
      return Bool(std::regex_search(a.s.begin(), a.s.end(), *n.regex));
    }
    Value b = Eval(*n.children[1]);
    if (b.type == Type::kError) return b;
    if (a.type != Type::kString || b.type != Type::kString) return Mismatch(n, ".string", a, b);
    if (n.op == Op::kStartsWith) return Bool(a.s.starts_with(b.s));
    if (n.op == Op::kEndsWith) return Bool(a.s.ends_with(b.s));
    return Bool(a.s.find(b.s) != std::string_view::npos);
  }

  const DeviceView& device_;
  std::string* error_;
};

}  // namespace

Value Evaluate(const Node& node, const DeviceView& device, std::string* error) {
  return Evaluator(device, error).Eval(node);
}

}  // namespace tidepool::sched::cel::detail
