// Terse value builders shared by the tests of several layers: resources from quantity text and
// times from RFC 3339 text. Test-only; a malformed literal is a bug in the test, so it aborts.
#pragma once

#include <initializer_list>
#include <string_view>
#include <utility>

#include "base/check.h"
#include "base/time.h"
#include "model/quantity.h"
#include "model/resources.h"

namespace tidepool::testing {

using ResourceList = std::initializer_list<std::pair<std::string_view, std::string_view>>;

// {{"cpu", "500m"}, {"nvidia.com/gpu", "1"}} -> Resources.
inline model::Resources Res(ResourceList list) {
  model::Resources r;
  for (const auto& [name, quantity] : list) {
    auto q = model::Quantity::Parse(quantity);
    TIDEPOOL_CHECK_MSG(q.has_value(), "bad quantity in test");
    r.SetQuantity(model::InternResource(name), *q);
  }
  return r;
}

// "2026-11-22T00:00:00Z" -> Time.
inline Time At(std::string_view rfc3339) {
  auto t = ParseRfc3339(rfc3339);
  TIDEPOOL_CHECK(t.has_value());
  return *t;
}

}  // namespace tidepool::testing
