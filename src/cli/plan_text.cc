#include "cli/plan_text.h"

#include <fmt/format.h>

#include <algorithm>

namespace tidepool::cli {
namespace {

// A simple left-aligned table; the last column is not padded.
std::string Table(const std::vector<std::string>& header,
                  const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(header.size());
  for (size_t c = 0; c < header.size(); ++c) width[c] = header[c].size();
  for (const auto& r : rows)
    for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  auto line = [&](const std::vector<std::string>& r) {
    std::string out;
    for (size_t c = 0; c < r.size(); ++c) {
      out += r[c];
      if (c + 1 < r.size()) out += std::string(width[c] - r[c].size() + 2, ' ');
    }
    return out + "\n";
  };
  std::string out = line(header);
  for (const auto& r : rows) out += line(r);
  return out;
}

std::string Joined(const std::vector<std::string>& v, size_t max = 4) {
  std::string out;
  for (size_t i = 0; i < v.size() && i < max; ++i) out += (i ? ", " : "") + v[i];
  if (v.size() > max) out += fmt::format(" (+{} more)", v.size() - max);
  return out.empty() ? "-" : out;
}

}  // namespace

std::string PlanToText(const planner::ScaleUpPlan& up, const planner::ScaleDownPlan& down) {
  std::string out;
  out += "SCALE UP\n";
  if (up.scale_ups.empty()) {
    out += "  nothing to add\n";
  } else {
    std::vector<std::vector<std::string>> rows;
    for (const auto& s : up.scale_ups)
      rows.push_back({s.pool, fmt::format("+{}", s.add), Joined(s.pods), s.reason});
    out += Table({"POOL", "ADD", "PODS", "WHY"}, rows);
  }
  if (!up.fits_existing.empty()) {
    out += fmt::format("\n{} pending pod(s) fit existing or upcoming nodes: {}\n",
                       up.fits_existing.size(), Joined(up.fits_existing));
  }
  if (!up.unschedulable.empty()) {
    out += "\nUNSCHEDULABLE (no pool helps)\n";
    for (const auto& u : up.unschedulable) {
      out += fmt::format("  {}\n", u.pod);
      for (const auto& [pool, why] : u.reasons) out += fmt::format("    {}: {}\n", pool, why.text);
    }
  }
  out += "\nSCALE DOWN\n";
  if (down.scale_downs.empty()) {
    out += "  nothing to remove\n";
  } else {
    std::vector<std::vector<std::string>> rows;
    for (const auto& s : down.scale_downs) {
      std::string reason(planner::RemovalKindName(s.kind));
      if (!s.replacement_pool.empty()) {
        reason += fmt::format(", replace: a new {} node takes {}", s.replacement_pool,
                              Joined(s.replacement_pods));
        if (!s.replacement_group.empty())
          reason += fmt::format(" (one node for {})", Joined(s.replacement_group));
      }
      rows.push_back({s.node, s.pool, std::move(reason), Joined(s.evict), s.Detail()});
    }
    out += Table({"NODE", "POOL", "REASON", "EVICT", "DETAIL"}, rows);
  }
  if (!down.keep.empty()) {
    out += "\nKEEP\n";
    std::vector<std::vector<std::string>> rows;
    for (const auto& k : down.keep) rows.push_back({k.node, k.Reason()});
    out += Table({"NODE", "WHY"}, rows);
  }
  return out;
}

std::string ExplanationToText(const planner::PodExplanation& ex) {
  if (!ex.found) return fmt::format("pod {} not found in the state\n", ex.pod);
  std::string out = fmt::format("pod {}\n", ex.pod);
  if (!ex.pending)
    return out + fmt::format("  not considered for scale-up: {}\n", ex.not_pending_reason);
  if (!ex.fits_node.empty()) {
    out += fmt::format("  fits existing or upcoming node {}: no scale-up needed\n", ex.fits_node);
  } else if (!ex.scale_up_pool.empty()) {
    out += fmt::format("  scale-up: pool {} grows for it\n", ex.scale_up_pool);
  } else {
    out += "  no pool can take it now\n";
  }
  out += "  pools:\n";
  for (const auto& [pool, why] : ex.pools) out += fmt::format("    {}: {}\n", pool, why);
  return out;
}

}  // namespace tidepool::cli
