#include "model/pool.h"

#include <map>

namespace tidepool::model {

std::vector<ResourceSlice> TemplateSlices(std::string_view pool_name, std::string_view node_name,
                                          const std::vector<TemplateDevices>& devices) {
  std::vector<ResourceSlice> out;
  std::map<std::string_view, size_t> slice_of;  // driver -> index in out
  for (const TemplateDevices& d : devices) {
    auto [it, inserted] = slice_of.emplace(d.driver, out.size());
    if (inserted) {
      ResourceSlice& s = out.emplace_back();
      s.driver = d.driver;
      s.pool = std::string(pool_name) + "-" + d.driver;
      s.node_name = std::string(node_name);
      s.meta.name = s.pool;
    }
    ResourceSlice& s = out[it->second];
    std::string_view prefix = std::string_view(d.driver).substr(0, d.driver.find('.'));
    for (int32_t k = 0; k < d.count; ++k) {
      Device& dev = s.devices.emplace_back();
      dev.name = std::string(prefix) + "-" + std::to_string(s.devices.size() - 1);
      dev.attributes = d.attributes;
      dev.capacity = d.capacity;
    }
  }
  return out;
}

std::string_view CapacityTypeName(CapacityType t) {
  return t == CapacityType::kSpot ? "spot" : "on-demand";
}

std::string_view ScaleDownModeName(ScaleDownMode mode) {
  return mode == ScaleDownMode::kDeallocate ? "deallocate" : "delete";
}

}  // namespace tidepool::model
