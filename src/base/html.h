// HtmlEscape: text made safe for HTML element content and quoted attribute values, for the
// pages tidepool writes itself (the status page, the simulation report).
#pragma once

#include <string>
#include <string_view>

namespace tidepool {

inline std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace tidepool
