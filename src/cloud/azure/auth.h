// Azure AD tokens for ARM: client credentials (secret), managed identity (IMDS) and workload
// identity (federated token file), behind one TokenSource that caches until 5 minutes before
// expiry.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "base/error.h"
#include "base/time.h"
#include "net/http.h"

namespace tidepool::cloud::azure {

// A token is fetched again once it has less than this left.
inline constexpr Duration kTokenRefreshMargin = std::chrono::minutes(5);

// Reads an environment variable: the real getenv in production, a map in tests.
using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;
EnvLookup ProcessEnv();

// Where a secret comes from. Exactly one is set. A file is re-read at every token fetch, so a
// rotated Kubernetes Secret volume is picked up without a restart.
struct SecretRef {
  std::string file;
  std::string env;               // the variable's name, never its value
  std::string Describe() const;  // "file /path" or "environment variable NAME"
};

// Reads the secret (trailing whitespace trimmed). Errors name the file or variable, never the
// content: kInvalidArgument when it is missing or empty.
Result<std::string> ReadSecret(const SecretRef& ref, const EnvLookup& env);

enum class AuthType { kClientSecret, kManagedIdentity, kWorkloadIdentity };

struct AuthConfig {
  AuthType type = AuthType::kClientSecret;
  std::string tenant_id;    // client secret, workload identity
  std::string client_id;    // managed identity: a user-assigned identity; empty: system-assigned
  SecretRef client_secret;  // client secret
  std::string token_file;   // workload identity: the projected service account token
  std::string authority_host = "https://login.microsoftonline.com";
  std::string imds_endpoint = "http://169.254.169.254/metadata/identity/oauth2/token";
  // The token's audience: ARM, or Azure Storage for the azure-vms VHD blob deletes.
  std::string resource = "https://management.azure.com/";
  Duration timeout = std::chrono::seconds(30);
};

// A bearer token for AuthConfig::resource (ARM; azure-vms also makes one for Azure Storage).
//
// Contract: Token() returns a cached token while it has more than kTokenRefreshMargin left,
// otherwise fetches a new one (one request; no retry loop). Invalidate() drops the cache (after
// ARM answered 401), so the next Token() fetches. Errors: kPermissionDenied when the identity
// provider refuses (its error code and description, never the secret or the assertion),
// kUnavailable when it cannot be reached, kInvalidArgument when a secret or token file is
// missing. Thread-safe; fetches are serialised.
class TokenSource {
 public:
  virtual ~TokenSource() = default;
  virtual Result<std::string> Token() = 0;
  virtual void Invalidate() = 0;
  // Tokens fetched so far (not served from the cache); for tests and metrics.
  virtual int fetches() const = 0;
};

// Builds the source for `config`. `http` and `clock` are borrowed and must outlive it.
Result<std::unique_ptr<TokenSource>> MakeTokenSource(const AuthConfig& config,
                                                     net::HttpClient* http, const Clock* clock,
                                                     EnvLookup env);

}  // namespace tidepool::cloud::azure
