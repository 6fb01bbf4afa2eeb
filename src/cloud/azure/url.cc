#include "cloud/azure/url.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace tidepool::cloud::azure {

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

Result<UrlParts> ParseUrl(std::string_view url) {
  UrlParts p;
  auto scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) {
    return InvalidArgument("\"{}\" is not an absolute URL (expected https://host[:port]/...)",
                           WithoutQuery(url));
  }
  p.scheme = ToLower(url.substr(0, scheme_end));
  if (p.scheme != "https" && p.scheme != "http") {
    return InvalidArgument("\"{}\": scheme {} (expected https)", WithoutQuery(url), p.scheme);
  }
  std::string_view rest = url.substr(scheme_end + 3);
  auto path_start = rest.find_first_of("/?");
  std::string_view authority = rest.substr(0, path_start);
  if (path_start == std::string_view::npos || rest[path_start] == '?') p.path.push_back('/');
  if (path_start != std::string_view::npos) p.path.append(rest.substr(path_start));
  if (authority.find('@') != std::string_view::npos) {
    return InvalidArgument("\"{}\": user information in a URL is not accepted", WithoutQuery(url));
  }
  std::string_view host = authority;
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    auto close = authority.find(']');
    if (close == std::string_view::npos) return InvalidArgument("\"{}\": bad IPv6 host", url);
    host = authority.substr(1, close - 1);
    if (close + 1 < authority.size() && authority[close + 1] == ':') {
      port = authority.substr(close + 2);
    }
  } else if (auto colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  if (host.empty()) return InvalidArgument("\"{}\": no host", WithoutQuery(url));
  p.host = ToLower(host);
  p.port = p.scheme == "https" ? 443 : 80;
  if (!port.empty()) {
    int n = 0;
    auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), n);
    if (ec != std::errc() || ptr != port.data() + port.size() || n <= 0 || n > 65535) {
      return InvalidArgument("\"{}\": bad port \"{}\"", WithoutQuery(url), port);
    }
    p.port = n;
  }
  return p;
}

bool IsLoopbackHost(std::string_view host) {
  return host == "localhost" || host == "::1" || host.starts_with("127.");
}

Result<void> CheckCredentialEndpoint(std::string_view url, std::string_view setting,
                                     bool allow_link_local) {
  auto parts = ParseUrl(url);
  if (!parts) return std::unexpected(parts.error().Wrap(setting));
  if (parts->scheme == "https") return {};
  if (IsLoopbackHost(parts->host)) return {};
  if (allow_link_local && parts->host == "169.254.169.254") return {};
  return InvalidArgument(
      "{}: \"{}\" is plain http (expected https; http is accepted only for a loopback host such "
      "as a local test server)",
      setting, WithoutQuery(url));
}

bool SameOrigin(std::string_view a, std::string_view b) {
  auto pa = ParseUrl(a);
  auto pb = ParseUrl(b);
  return pa && pb && pa->scheme == pb->scheme && pa->host == pb->host && pa->port == pb->port;
}

std::string_view WithoutQuery(std::string_view url) { return url.substr(0, url.find('?')); }

}  // namespace tidepool::cloud::azure
