// URL checks for the Azure providers: which endpoints may receive credentials, and whether two
// URLs share an origin (so a bearer token never follows an operation URL to another host).
#pragma once

#include <string>
#include <string_view>

#include "base/error.h"

namespace tidepool::cloud::azure {

struct UrlParts {
  std::string scheme;  // lower case: "https" or "http"
  std::string host;    // lower case, without brackets for IPv6
  int port = 0;        // explicit or the scheme's default
  std::string path;    // from the first '/' (query included); "/" when absent
};

// Splits an absolute http(s) URL. kInvalidArgument for anything else.
Result<UrlParts> ParseUrl(std::string_view url);

// 127.0.0.0/8, ::1 and "localhost".
bool IsLoopbackHost(std::string_view host);

// An endpoint that will receive credentials: https, or plain http only to a loopback host (the
// tests' fake servers) or, with `allow_link_local`, to 169.254.169.254 (IMDS, which is http by
// design). `setting` names the config key for the error ("provider.armEndpoint").
Result<void> CheckCredentialEndpoint(std::string_view url, std::string_view setting,
                                     bool allow_link_local = false);

// True when both URLs have the same scheme, host and port.
bool SameOrigin(std::string_view a, std::string_view b);

// The URL with its query removed, for messages.
std::string_view WithoutQuery(std::string_view url);

bool EqualsIgnoreCase(std::string_view a, std::string_view b);
std::string ToLower(std::string_view s);

}  // namespace tidepool::cloud::azure
