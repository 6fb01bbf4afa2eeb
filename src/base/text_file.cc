#include "base/text_file.h"

#include <fstream>

namespace tidepool {

Result<void> WriteTextFile(const std::string& path, std::string_view text, std::string_view what) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (out) out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) return InvalidArgument("{}: cannot write the {}", path, what);
  return {};
}

}  // namespace tidepool
