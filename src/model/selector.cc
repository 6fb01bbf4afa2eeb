#include "model/selector.h"

#include <algorithm>
#include <charconv>

namespace tidepool::model {
namespace {

bool Contains(const std::vector<std::string>& values, std::string_view v) {
  return std::find(values.begin(), values.end(), v) != values.end();
}

bool ParseInt(std::string_view s, int64_t& out) {
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

// Gt/Lt: the label value and the single requirement value must both be integers.
bool CompareInt(const SelectorRequirement& r, std::string_view label_value) {
  int64_t have, want;
  if (r.values.size() != 1 || !ParseInt(label_value, have) || !ParseInt(r.values[0], want)) {
    return false;
  }
  return r.op == SelectorOp::kGt ? have > want : have < want;
}

}  // namespace

bool RequirementMatches(const SelectorRequirement& r, const Labels& labels) {
  auto it = labels.find(r.key);
  bool has = it != labels.end();
  switch (r.op) {
    case SelectorOp::kIn:
      return has && Contains(r.values, it->second);
    case SelectorOp::kNotIn:
      return !has || !Contains(r.values, it->second);
    case SelectorOp::kExists:
      return has;
    case SelectorOp::kDoesNotExist:
      return !has;
    case SelectorOp::kGt:
    case SelectorOp::kLt:
      return has && CompareInt(r, it->second);
  }
  return false;
}

bool LabelSelector::Matches(const Labels& labels) const {
  for (const auto& [k, v] : match_labels) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  for (const auto& r : match_expressions)
    if (!RequirementMatches(r, labels)) return false;
  return true;
}

bool NodeSelectorTerm::Matches(const Labels& node_labels, std::string_view node_name) const {
  if (match_expressions.empty() && match_fields.empty()) return false;
  for (const auto& r : match_expressions)
    if (!RequirementMatches(r, node_labels)) return false;
  for (const auto& r : match_fields) {
    if (r.key != "metadata.name") return false;
    bool in = Contains(r.values, node_name);
    if (r.op == SelectorOp::kIn ? !in : r.op == SelectorOp::kNotIn ? in : true) return false;
  }
  return true;
}

bool NodeSelector::Matches(const Labels& node_labels, std::string_view node_name) const {
  for (const auto& t : terms)
    if (t.Matches(node_labels, node_name)) return true;
  return false;
}

std::string_view TaintEffectName(TaintEffect e) {
  switch (e) {
    case TaintEffect::kNoSchedule:
      return "NoSchedule";
    case TaintEffect::kPreferNoSchedule:
      return "PreferNoSchedule";
    case TaintEffect::kNoExecute:
      return "NoExecute";
  }
  return "?";
}

std::optional<TaintEffect> ParseTaintEffect(std::string_view name) {
  for (TaintEffect e :
       {TaintEffect::kNoSchedule, TaintEffect::kPreferNoSchedule, TaintEffect::kNoExecute}) {
    if (TaintEffectName(e) == name) return e;
  }
  return std::nullopt;
}

std::string Taint::ToString() const {
  std::string out = "{";
  out += key;
  out += ": ";
  out += value;
  out += "}";
  return out;
}

bool Toleration::Tolerates(const Taint& taint) const {
  if (effect && *effect != taint.effect) return false;
  if (key.empty()) return op == TolerationOp::kExists;  // empty key requires Exists
  if (key != taint.key) return false;
  return op == TolerationOp::kExists || value == taint.value;
}

const Taint* FindUntoleratedTaint(const std::vector<Taint>& taints,
                                  const std::vector<Toleration>& tolerations) {
  for (const auto& t : taints) {
    if (t.effect == TaintEffect::kPreferNoSchedule) continue;
    bool tolerated = false;
    for (const auto& tol : tolerations) {
      if (tol.Tolerates(t)) {
        tolerated = true;
        break;
      }
    }
    if (!tolerated) return &t;
  }
  return nullptr;
}

}  // namespace tidepool::model
