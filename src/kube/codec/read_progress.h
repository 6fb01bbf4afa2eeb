// How far reading a cluster state is, for a progress line: `tidepool plan` on a state file of
// tens of thousands of objects takes seconds.
#pragma once

#include <cstddef>
#include <functional>
#include <string_view>

namespace tidepool::kube::codec {

// How far a streamed List is: bytes of the text parsed, of all of it, and items handed on.
struct ListProgress {
  std::string_view source;  // the file (or text) being read
  size_t bytes_read = 0;
  size_t bytes_total = 0;
  size_t items = 0;
};
using OnListProgress = std::function<void(const ListProgress&)>;

}  // namespace tidepool::kube::codec
