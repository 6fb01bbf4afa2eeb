#include "cloud/azure/auth.h"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "cloud/azure/url.h"

namespace tidepool::cloud::azure {
namespace {

using nlohmann::json;

std::string TrimRight(std::string s) {
  while (!s.empty() &&
         (s.back() == '\n' || s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) {
    s.pop_back();
  }
  return s;
}

// Replaces every occurrence of `secret` in `text` (belt and braces: no message we build contains
// a secret, but an identity provider's description is not ours).
std::string Scrub(std::string text, std::string_view secret) {
  if (secret.size() < 4) return text;
  for (size_t at = text.find(secret); at != std::string::npos; at = text.find(secret, at)) {
    text.replace(at, secret.size(), "[redacted]");
  }
  return text;
}

struct AccessToken {
  std::string token;
  Time expires_at;
};

// Reads an AAD or IMDS token response: access_token plus expires_in (number or string) or
// expires_on (epoch seconds as a string).
Result<AccessToken> ParseTokenResponse(std::string_view body, Time now, std::string_view where) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("access_token") || !j["access_token"].is_string()) {
    return Fail(Error::Code::kUnavailable,
                "{}: the token response has no access_token (expected a JSON object with "
                "access_token and expires_in)",
                where);
  }
  AccessToken t;
  t.token = j["access_token"].get<std::string>();
  auto seconds_of = [](const json& v) -> std::optional<int64_t> {
    if (v.is_number_integer()) return v.get<int64_t>();
    if (v.is_string()) {
      const std::string& s = v.get_ref<const std::string&>();
      char* end = nullptr;
      long long n = std::strtoll(s.c_str(), &end, 10);
      if (!s.empty() && end != nullptr && *end == '\0') return n;
    }
    return std::nullopt;
  };
  std::optional<int64_t> expires_in;
  if (j.contains("expires_in")) expires_in = seconds_of(j["expires_in"]);
  if (!expires_in && j.contains("expires_on")) {
    if (auto on = seconds_of(j["expires_on"])) {
      t.expires_at = Time(std::chrono::seconds(*on));
      return t;
    }
  }
  if (!expires_in) {
    return Fail(Error::Code::kUnavailable,
                "{}: the token response has no usable expires_in or expires_on", where);
  }
  t.expires_at = now + std::chrono::seconds(*expires_in);
  return t;
}

// Turns a non-200 answer of AAD or IMDS into an error with its code and description.
Error TokenError(const net::Response& r, std::string_view where, std::string_view secret) {
  std::string detail;
  json j = json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object()) {
    auto text = [&](const char* key) -> std::string {
      return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
    };
    std::string code = text("error");
    std::string description = text("error_description");
    if (j.contains("error") && j["error"].is_object()) {  // ARM-style shape
      const json& e = j["error"];
      code = e.value("code", "");
      description = e.value("message", "");
    }
    detail = code.empty() ? description : description.empty() ? code : code + ": " + description;
  }
  if (detail.empty()) detail = "no error details in the response";
  // Keep the first line: AAD descriptions carry trace and correlation ids on later lines.
  detail = detail.substr(0, detail.find_first_of("\r\n"));
  Error::Code code = (r.status == 400 || r.status == 401 || r.status == 403)
                         ? Error::Code::kPermissionDenied
                     : r.status == 429 ? Error::Code::kThrottled
                                       : Error::Code::kUnavailable;
  return Error(code, Scrub(fmt::format("{}: HTTP {}: {}", where, r.status, detail), secret));
}

class CachingTokenSource : public TokenSource {
 public:
  CachingTokenSource(net::HttpClient* http, const Clock* clock, AuthConfig config, EnvLookup env)
      : http_(http), clock_(clock), config_(std::move(config)), env_(std::move(env)) {}

  Result<std::string> Token() final {
    std::lock_guard<std::mutex> lock(mu_);
    Time now = clock_->Now();
    if (cached_ && now + kTokenRefreshMargin < cached_->expires_at) return cached_->token;
    auto fetched = Fetch(now);
    if (!fetched) return std::unexpected(fetched.error());
    ++fetches_;
    spdlog::debug("azure: new {} token, valid for {}", Kind(),
                  FormatDuration(std::chrono::duration_cast<Duration>(fetched->expires_at - now)));
    cached_ = std::move(*fetched);
    return cached_->token;
  }

  void Invalidate() final {
    std::lock_guard<std::mutex> lock(mu_);
    cached_.reset();
  }

  int fetches() const final {
    std::lock_guard<std::mutex> lock(mu_);
    return fetches_;
  }

 protected:
  virtual Result<AccessToken> Fetch(Time now) = 0;
  virtual std::string_view Kind() const = 0;

  // POST {authority}/{tenant}/oauth2/v2.0/token with a client_credentials grant whose proof is
  // `proof_field`=`proof` (client_secret or client_assertion).
  Result<AccessToken> AadClientCredentials(Time now, std::string_view proof_field,
                                           const std::string& proof,
                                           std::string_view extra_fields) {
    std::string authority = config_.authority_host;
    while (!authority.empty() && authority.back() == '/') authority.pop_back();
    std::string url =
        fmt::format("{}/{}/oauth2/v2.0/token", authority, net::UrlEncode(config_.tenant_id));
    std::string scope = config_.resource;
    if (!scope.empty() && scope.back() != '/') scope.push_back('/');
    scope += ".default";
    net::Request req;
    req.method = "POST";
    req.url = url;
    req.timeout = config_.timeout;
    req.headers = {{"Content-Type", "application/x-www-form-urlencoded"},
                   {"Accept", "application/json"}};
    req.body = fmt::format("grant_type=client_credentials&client_id={}&scope={}&{}={}{}",
                           net::UrlEncode(config_.client_id), net::UrlEncode(scope), proof_field,
                           net::UrlEncode(proof), extra_fields);
    std::string where = fmt::format("azure {} token from {}", Kind(), url);
    auto resp = http_->Send(req);
    if (!resp)
      return std::unexpected(Error(resp.error().code(), Scrub(resp.error().message(), proof)));
    if (resp->status != 200) return std::unexpected(TokenError(*resp, where, proof));
    return ParseTokenResponse(resp->body, now, where);
  }

  net::HttpClient* http_;
  const Clock* clock_;
  AuthConfig config_;
  EnvLookup env_;

 private:
  mutable std::mutex mu_;
  std::optional<AccessToken> cached_;
  int fetches_ = 0;
};

class ClientSecretSource final : public CachingTokenSource {
 public:
  using CachingTokenSource::CachingTokenSource;

 private:
  std::string_view Kind() const override { return "client-secret"; }
  Result<AccessToken> Fetch(Time now) override {
    auto secret = ReadSecret(config_.client_secret, env_);
    if (!secret) return std::unexpected(secret.error().Wrap("provider.auth client secret"));
    return AadClientCredentials(now, "client_secret", *secret, "");
  }
};

class WorkloadIdentitySource final : public CachingTokenSource {
 public:
  using CachingTokenSource::CachingTokenSource;

 private:
  std::string_view Kind() const override { return "workload-identity"; }
  Result<AccessToken> Fetch(Time now) override {
    // The kubelet rotates the projected token; read it at every fetch.
    auto assertion = ReadSecret(SecretRef{.file = config_.token_file}, env_);
    if (!assertion) return std::unexpected(assertion.error().Wrap("provider.auth federated token"));
    return AadClientCredentials(
        now, "client_assertion", *assertion,
        "&client_assertion_type=urn%3Aietf%3Aparams%3Aoauth%3Aclient-assertion-type%3Ajwt-bearer");
  }
};

class ManagedIdentitySource final : public CachingTokenSource {
 public:
  using CachingTokenSource::CachingTokenSource;

 private:
  std::string_view Kind() const override { return "managed-identity"; }
  Result<AccessToken> Fetch(Time now) override {
    net::Request req;
    req.url = fmt::format("{}?api-version=2018-02-01&resource={}", config_.imds_endpoint,
                          net::UrlEncode(config_.resource));
    if (!config_.client_id.empty()) req.url += "&client_id=" + net::UrlEncode(config_.client_id);
    req.headers = {{"Metadata", "true"}, {"Accept", "application/json"}};
    req.timeout = config_.timeout;
    std::string where =
        fmt::format("azure managed-identity token from {}", WithoutQuery(config_.imds_endpoint));
    auto resp = http_->Send(req);
    if (!resp) return std::unexpected(resp.error());
    if (resp->status != 200) return std::unexpected(TokenError(*resp, where, ""));
    return ParseTokenResponse(resp->body, now, where);
  }
};

}  // namespace

EnvLookup ProcessEnv() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* v = std::getenv(std::string(name).c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

std::string SecretRef::Describe() const {
  return file.empty() ? fmt::format("environment variable {}", env) : fmt::format("file {}", file);
}

Result<std::string> ReadSecret(const SecretRef& ref, const EnvLookup& env) {
  std::string value;
  if (!ref.file.empty()) {
    std::ifstream in(ref.file, std::ios::binary);
    if (!in) return InvalidArgument("cannot read {} (expected a readable file)", ref.Describe());
    std::ostringstream ss;
    ss << in.rdbuf();
    value = TrimRight(ss.str());
  } else if (!ref.env.empty()) {
    auto v = env ? env(ref.env) : std::nullopt;
    if (!v) return InvalidArgument("{} is not set", ref.Describe());
    value = TrimRight(*v);
  } else {
    return InvalidArgument("no secret source given (expected a file or an environment variable)");
  }
  if (value.empty()) return InvalidArgument("{} is empty", ref.Describe());
  return value;
}

Result<std::unique_ptr<TokenSource>> MakeTokenSource(const AuthConfig& config,
                                                     net::HttpClient* http, const Clock* clock,
                                                     EnvLookup env) {
  switch (config.type) {
    case AuthType::kClientSecret:
      TIDEPOOL_RETURN_IF_ERROR(
          CheckCredentialEndpoint(config.authority_host, "provider.authorityHost"));
      return std::unique_ptr<TokenSource>(
          std::make_unique<ClientSecretSource>(http, clock, config, std::move(env)));
    case AuthType::kWorkloadIdentity:
      TIDEPOOL_RETURN_IF_ERROR(
          CheckCredentialEndpoint(config.authority_host, "provider.authorityHost"));
      return std::unique_ptr<TokenSource>(
          std::make_unique<WorkloadIdentitySource>(http, clock, config, std::move(env)));
    case AuthType::kManagedIdentity:
      TIDEPOOL_RETURN_IF_ERROR(CheckCredentialEndpoint(
          config.imds_endpoint, "provider.auth.imdsEndpoint", /*allow_link_local=*/true));
      return std::unique_ptr<TokenSource>(
          std::make_unique<ManagedIdentitySource>(http, clock, config, std::move(env)));
  }
  return Fail(Error::Code::kInternal, "unknown auth type");
}

}  // namespace tidepool::cloud::azure
