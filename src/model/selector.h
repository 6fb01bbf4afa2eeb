// Label selectors, node selector terms and taints/tolerations with Kubernetes' matching rules.
// Pure functions over plain values; the scheduler filters and the planner both use them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/meta.h"

namespace tidepool::model {

// Operators of label selector and node selector requirements. Gt/Lt are valid in node selector
// terms only; the decoder rejects them in label selectors.
enum class SelectorOp { kIn, kNotIn, kExists, kDoesNotExist, kGt, kLt };

struct SelectorRequirement {
  std::string key;
  SelectorOp op = SelectorOp::kIn;
  std::vector<std::string> values;
  friend bool operator==(const SelectorRequirement&, const SelectorRequirement&) = default;
};

// metav1.LabelSelector. A default-constructed selector (no labels, no expressions) matches
// everything, as Kubernetes' LabelSelectorAsSelector does for an empty, non-nil selector.
struct LabelSelector {
  Labels match_labels;
  std::vector<SelectorRequirement> match_expressions;

  friend bool operator==(const LabelSelector&, const LabelSelector&) = default;
  bool Matches(const Labels& labels) const;
  bool IsEmpty() const { return match_labels.empty() && match_expressions.empty(); }
};

// Evaluates one requirement against labels: In/NotIn/Exists/DoesNotExist, and Gt/Lt comparing
// the label value as an integer (a non-integer label value does not match).
bool RequirementMatches(const SelectorRequirement& r, const Labels& labels);

// v1.NodeSelectorTerm: all requirements of a term must match (AND). match_fields supports only
// the key "metadata.name", as Kubernetes does.
struct NodeSelectorTerm {
  std::vector<SelectorRequirement> match_expressions;
  std::vector<SelectorRequirement> match_fields;
  friend bool operator==(const NodeSelectorTerm&, const NodeSelectorTerm&) = default;

  bool Matches(const Labels& node_labels, std::string_view node_name) const;
};

// v1.NodeSelector (required node affinity): terms are ORed. A selector with no terms matches
// nothing, and a term with no requirements matches nothing (Kubernetes semantics).
struct NodeSelector {
  std::vector<NodeSelectorTerm> terms;
  friend bool operator==(const NodeSelector&, const NodeSelector&) = default;

  bool Matches(const Labels& node_labels, std::string_view node_name) const;
};

enum class TaintEffect { kNoSchedule, kPreferNoSchedule, kNoExecute };
std::string_view TaintEffectName(TaintEffect e);
// The effect of its API spelling ("NoSchedule", ...), or nullopt for anything else.
std::optional<TaintEffect> ParseTaintEffect(std::string_view name);

struct Taint {
  std::string key;
  std::string value;
  TaintEffect effect = TaintEffect::kNoSchedule;
  friend bool operator==(const Taint&, const Taint&) = default;
  // "{key: value}" as kube-scheduler prints untolerated taints.
  std::string ToString() const;
};

enum class TolerationOp { kEqual, kExists };

struct Toleration {
  std::string key;  // empty with kExists: tolerates every key
  TolerationOp op = TolerationOp::kEqual;
  std::string value;
  std::optional<TaintEffect> effect;  // empty: every effect
  std::optional<int64_t> toleration_seconds;
  friend bool operator==(const Toleration&, const Toleration&) = default;

  bool Tolerates(const Taint& taint) const;
};

// The first taint with effect NoSchedule or NoExecute that no toleration tolerates, or nullptr.
// This is the TaintToleration filter's test (PreferNoSchedule never blocks).
const Taint* FindUntoleratedTaint(const std::vector<Taint>& taints,
                                  const std::vector<Toleration>& tolerations);

}  // namespace tidepool::model
