#include "model/dra.h"

namespace tidepool::model {

bool ResourceSlice::AvailableOn(const Labels& node_labels, std::string_view name) const {
  if (all_nodes) return true;
  if (!node_name.empty()) return node_name == name;
  return node_selector && node_selector->Matches(node_labels, name);
}

std::string QualifiedName(std::string_view driver, std::string_view name) {
  if (name.find('/') != std::string_view::npos) return std::string(name);
  std::string out;
  out.reserve(driver.size() + 1 + name.size());
  out.append(driver).push_back('/');
  out.append(name);
  return out;
}

}  // namespace tidepool::model
