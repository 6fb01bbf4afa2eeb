// FakeArm's private helpers (fake_arm*.cc only): case-insensitive names, URL paths and forms,
// Azure's base-36 instance suffixes, and the token audiences.
#pragma once

#include <cctype>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace tidepool::testing::azure::fake_arm_util {

inline std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

inline bool Eq(std::string_view a, std::string_view b) { return Lower(a) == Lower(b); }

inline std::vector<std::string> Segments(const std::string& path) {
  std::vector<std::string> out;
  std::stringstream ss(path);
  std::string part;
  while (std::getline(ss, part, '/')) {
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

inline std::string UrlDecode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out.push_back(' ');
    } else if (s[i] == '%' && i + 2 < s.size()) {
      out.push_back(static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

inline std::map<std::string, std::string> ParseForm(std::string_view body) {
  std::map<std::string, std::string> out;
  size_t start = 0;
  while (start <= body.size()) {
    size_t end = body.find('&', start);
    if (end == std::string_view::npos) end = body.size();
    std::string_view pair = body.substr(start, end - start);
    size_t eq = pair.find('=');
    if (eq != std::string_view::npos) {
      out[UrlDecode(pair.substr(0, eq))] = UrlDecode(pair.substr(eq + 1));
    }
    start = end + 1;
  }
  return out;
}

inline std::string Base36(int n) {
  static constexpr char kDigits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  std::string s;
  do {
    s.insert(s.begin(), kDigits[n % 36]);
    n /= 36;
  } while (n > 0);
  while (s.size() < 6) s.insert(s.begin(), '0');
  return s;
}

inline constexpr char kArmResource[] = "https://management.azure.com/";
inline constexpr char kStorageResource[] = "https://storage.azure.com/";

inline bool IsWrite(const std::string& method) {
  return method == "PUT" || method == "PATCH" || method == "POST" || method == "DELETE";
}

}  // namespace tidepool::testing::azure::fake_arm_util
