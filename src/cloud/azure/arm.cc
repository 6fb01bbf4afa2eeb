#include "cloud/azure/arm.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "cloud/azure/lro.h"
#include "cloud/azure/url.h"

namespace tidepool::cloud::azure {
namespace {

using nlohmann::json;

// The path of a URL without its query, for messages.
std::string PathForMessages(const std::string& url) {
  if (auto p = ParseUrl(url); p) return std::string(WithoutQuery(p->path));
  return std::string(WithoutQuery(url));
}

// The body's etag, else its properties.eTag (AKS); "" when neither.
std::string BodyEtag(const json& body) {
  if (!body.is_object()) return "";
  if (body.contains("etag") && body["etag"].is_string()) return body["etag"].get<std::string>();
  if (body.contains("properties") && body["properties"].is_object() &&
      body["properties"].contains("eTag") && body["properties"]["eTag"].is_string()) {
    return body["properties"]["eTag"].get<std::string>();
  }
  return "";
}

// A 401 that a new token may cure: an expired or invalid token (or no code at all).
bool IsStaleTokenAnswer(const ArmResponse& r) {
  return r.status == 401 &&
         (r.error_code == "ExpiredAuthenticationToken" ||
          r.error_code == "InvalidAuthenticationToken" ||
          r.error_code == "InvalidAuthenticationTokenTenant" || r.error_code.empty());
}

bool ContainsIgnoreCase(std::string_view haystack, std::string_view needle) {
  return ToLower(haystack).find(ToLower(needle)) != std::string::npos;
}

}  // namespace

void ParseArmError(const json& body, std::string& code, std::string& message) {
  if (!body.is_object()) return;
  const json* e = &body;
  if (body.contains("error") && body["error"].is_object()) e = &body["error"];
  if (e->contains("code") && (*e)["code"].is_string()) code = (*e)["code"].get<std::string>();
  if (e->contains("message") && (*e)["message"].is_string()) {
    message = (*e)["message"].get<std::string>();
  }
}

Sleeper RealSleeper() {
  return [](Duration d) {
    if (d > Duration::zero()) std::this_thread::sleep_for(d);
  };
}

Error ArmResponse::AsError() const {
  std::string detail = error_code.empty() ? "" : " " + error_code;
  if (!error_message.empty()) detail += ": " + error_message;
  if (detail.empty()) detail = " (no error details in the response)";
  return Error(net::ErrorCodeForStatus(status),
               fmt::format("ARM {} {}: HTTP {}{}", method, path, status, detail));
}

bool IsStockoutError(std::string_view code, std::string_view message) {
  static constexpr std::string_view kCodes[] = {
      "SkuNotAvailable",
      "AllocationFailed",
      "ZonalAllocationFailed",
      "OverconstrainedAllocationRequest",
      "OverconstrainedZonalAllocationRequest",
      "QuotaExceeded",
      "SpotCapacityNotAvailable",  // spot: no capacity at this price / location
      "SpotPriceLowerThanCurrent",
      "LowPriorityCapacityNotAvailable",
  };
  for (std::string_view c : kCodes) {
    if (ContainsIgnoreCase(code, c)) return true;
  }
  // Quota: "Operation could not be completed as it results in exceeding approved
  // standardNCSv3Family Cores quota" comes as OperationNotAllowed (Compute) or as a nested code in
  // AKS errors.
  if (ContainsIgnoreCase(message, "quota") && (ContainsIgnoreCase(code, "OperationNotAllowed") ||
                                               ContainsIgnoreCase(code, "Quota") || code.empty())) {
    return true;
  }
  // AKS wraps Compute's code in its own ("ReconcileVMSSAgentPoolFailed: ... AllocationFailed").
  for (std::string_view c : kCodes) {
    if (ContainsIgnoreCase(message, c)) return true;
  }
  return false;
}

ArmClient::ArmClient(net::HttpClient* http, TokenSource* tokens, const Clock* clock, Sleeper sleep,
                     ArmOptions options)
    : http_(http),
      tokens_(tokens),
      clock_(clock),
      sleep_(std::move(sleep)),
      options_(std::move(options)) {
  while (!options_.endpoint.empty() && options_.endpoint.back() == '/') {
    options_.endpoint.pop_back();
  }
}

std::string ArmClient::Url(std::string_view path, std::string_view api_version,
                           std::string_view query) const {
  std::string url = path.starts_with("http://") || path.starts_with("https://")
                        ? std::string(path)
                        : options_.endpoint + std::string(path);
  if (!api_version.empty()) {
    url += url.find('?') == std::string::npos ? '?' : '&';
    url += "api-version=" + std::string(api_version);
  }
  if (!query.empty()) {
    url += url.find('?') == std::string::npos ? '?' : '&';
    url += query;
  }
  return url;
}

Duration ArmClient::RetryAfter(const net::Response& r, Duration fallback) const {
  std::string v = r.Header("retry-after");
  if (v.empty()) return fallback;
  char* end = nullptr;
  long long seconds = std::strtoll(v.c_str(), &end, 10);
  if (end == v.c_str() || *end != '\0' || seconds < 0) return fallback;  // HTTP-date: not used
  return std::chrono::seconds(seconds);
}

Result<ArmResponse> ArmClient::Get(std::string_view path, std::string_view api_version,
                                   std::string_view query) {
  std::lock_guard<std::mutex> lock(mu_);
  return GetUrlLocked(Url(path, api_version, query));
}

Result<ArmResponse> ArmClient::GetUrlLocked(const std::string& url) {
  return SendLocked("GET", url, nullptr, {});
}

Result<std::vector<json>> ArmClient::List(std::string_view path, std::string_view api_version,
                                          std::string_view query) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<json> items;
  std::string url = Url(path, api_version, query);
  for (int page = 0; !url.empty(); ++page) {
    if (page >= 1000) {
      return Fail(Error::Code::kUnavailable, "ARM GET {}: more than 1000 pages of nextLink",
                  WithoutQuery(Url(path, "", "")));
    }
    TIDEPOOL_ASSIGN_OR_RETURN(ArmResponse r, GetUrlLocked(url));
    if (!r.ok()) return std::unexpected(r.AsError());
    if (r.body.is_object() && r.body.contains("value") && r.body["value"].is_array()) {
      for (auto& item : r.body["value"]) items.push_back(std::move(item));
    }
    url.clear();
    if (r.body.is_object() && r.body.contains("nextLink") && r.body["nextLink"].is_string()) {
      url = r.body["nextLink"].get<std::string>();
    }
  }
  return items;
}

Result<ArmResponse> ArmClient::Send(std::string_view method, std::string_view path,
                                    std::string_view api_version, const json* body,
                                    const std::vector<std::pair<std::string, std::string>>& headers,
                                    std::string_view query) {
  std::lock_guard<std::mutex> lock(mu_);
  return SendLocked(method, Url(path, api_version, query), body, headers);
}

Result<ArmResponse> ArmClient::SendLocked(
    std::string_view method, const std::string& url, const json* body,
    const std::vector<std::pair<std::string, std::string>>& headers) {
  const bool is_get = method == "GET";
  const std::string path_for_messages = PathForMessages(url);
  if (!SameOrigin(url, options_.endpoint)) {
    return Fail(Error::Code::kPermissionDenied,
                "ARM {} {}: refusing to send the ARM token to a URL outside {}", method,
                WithoutQuery(url), options_.endpoint);
  }
  if (throttled_until_ && clock_->Now() < *throttled_until_) {
    if (auto c = CachedLocked(url, is_get)) return *c;
    return Fail(Error::Code::kThrottled,
                "ARM {} {}: not sent, ARM throttled this client until {} (Retry-After)", method,
                path_for_messages, FormatRfc3339(*throttled_until_));
  }
  for (int attempt = 0;; ++attempt) {
    TIDEPOOL_ASSIGN_OR_RETURN(std::string token, tokens_->Token());
    TIDEPOOL_ASSIGN_OR_RETURN(
        net::Response resp,
        SendHttpLocked(path_for_messages, MakeRequest(method, url, token, body, headers)));
    ArmResponse r = ReadAnswer(resp, method, path_for_messages);
    if (attempt == 0 && IsStaleTokenAnswer(r)) {
      spdlog::info("azure: ARM answered 401 {} to {} {}; fetching a new token", r.error_code,
                   method, path_for_messages);
      tokens_->Invalidate();
      continue;
    }
    if (resp.status == 429) return ThrottledLocked(url, is_get, resp, r);
    if (r.ok()) {
      r.operation =
          OperationOf({.what = fmt::format("{} {}", method, path_for_messages),
                       .status = resp.status,
                       .async_url = resp.Header("azure-asyncoperation"),
                       .location_url = resp.Header("location"),
                       .now = clock_->Now(),
                       .first_poll = std::min(RetryAfter(resp, options_.default_poll_interval),
                                              options_.max_poll_interval),
                       .timeout = options_.operation_timeout});
      if (is_get) cache_[url] = r;
    }
    return r;
  }
}

std::optional<ArmResponse> ArmClient::CachedLocked(const std::string& url, bool is_get) const {
  if (!is_get) return std::nullopt;
  auto it = cache_.find(url);
  if (it == cache_.end()) return std::nullopt;
  ArmResponse r = it->second;
  r.from_cache = true;
  return r;
}

net::Request ArmClient::MakeRequest(
    std::string_view method, const std::string& url, const std::string& token, const json* body,
    const std::vector<std::pair<std::string, std::string>>& headers) const {
  net::Request req;
  req.method = std::string(method);
  req.url = url;
  req.timeout = options_.request_timeout;
  req.headers = {{"Authorization", "Bearer " + token}, {"Accept", "application/json"}};
  if (body != nullptr) {
    req.headers.emplace_back("Content-Type", "application/json");
    req.body = body->dump();
  }
  for (const auto& h : headers) req.headers.push_back(h);
  return req;
}

Result<net::Response> ArmClient::SendHttpLocked(const std::string& path_for_messages,
                                                const net::Request& req) {
  ++requests_;
  const auto sent_at = std::chrono::steady_clock::now();
  auto sent = http_->Send(req);
  if (observer_) {
    observer_(
        {.method = req.method,
         .operation = ArmOperationName(req.method, path_for_messages),
         .status = sent ? sent->status : 0,
         .seconds =
             std::chrono::duration<double>(std::chrono::steady_clock::now() - sent_at).count()});
  }
  return sent;
}

ArmResponse ArmClient::ReadAnswer(const net::Response& resp, std::string_view method,
                                  const std::string& path_for_messages) const {
  ArmResponse r;
  r.status = resp.status;
  r.method = std::string(method);
  r.path = path_for_messages;
  if (!resp.body.empty()) r.body = json::parse(resp.body, nullptr, /*allow_exceptions=*/false);
  if (r.body.is_discarded()) r.body = nullptr;
  r.etag = resp.Header("etag");
  if (!resp.Header("retry-after").empty()) r.retry_after = RetryAfter(resp, Duration::zero());
  if (r.etag.empty()) r.etag = BodyEtag(r.body);
  if (!r.ok()) ParseArmError(r.body, r.error_code, r.error_message);
  return r;
}

Result<ArmResponse> ArmClient::ThrottledLocked(const std::string& url, bool is_get,
                                               const net::Response& resp, const ArmResponse& r) {
  Duration wait = RetryAfter(resp, options_.default_throttle);
  throttled_until_ = clock_->Now() + wait;
  spdlog::warn("azure: ARM throttled {} {} ({}); no requests until {}", r.method, r.path,
               r.error_code, FormatRfc3339(*throttled_until_));
  if (auto c = CachedLocked(url, is_get)) return *c;
  return std::unexpected(
      r.AsError().Wrap(fmt::format("throttled until {}", FormatRfc3339(*throttled_until_))));
}

Result<OperationResult> ArmClient::Poll(Operation& op) {
  std::lock_guard<std::mutex> lock(mu_);
  const bool use_status = !op.status_url.empty();
  const std::string& url = use_status ? op.status_url : op.location_url;
  if (url.empty()) return OperationResult{.state = OperationResult::State::kSucceeded};
  op.next_poll = clock_->Now() + options_.default_poll_interval;
  // Operation URLs are polled without the cache: a stale "InProgress" must not be replayed.
  if (throttled_until_ && clock_->Now() < *throttled_until_) {
    op.next_poll = *throttled_until_;
    return Fail(Error::Code::kThrottled, "polling {}: ARM throttled this client until {}", op.what,
                FormatRfc3339(*throttled_until_));
  }
  auto sent = SendLocked("GET", url, nullptr, {});
  cache_.erase(url);
  if (!sent) {
    if (throttled_until_) op.next_poll = std::max(op.next_poll, *throttled_until_);
    return std::unexpected(sent.error().Wrap(fmt::format("polling {}", op.what)));
  }
  const ArmResponse& r = *sent;
  op.next_poll = clock_->Now() + std::min(r.retry_after.value_or(options_.default_poll_interval),
                                          options_.max_poll_interval);
  return OperationResultOf(r, op);
}

Result<OperationResult> ArmClient::Wait(Operation& op) {
  for (int polls = 0; polls < 10000; ++polls) {
    Time now = clock_->Now();
    if (now < op.deadline && op.next_poll > now) {
      sleep_(std::min<Duration>(op.next_poll - now, op.deadline - now));
    }
    LroStep step = FollowOperation(*this, op, clock_->Now());
    if (step.kind == LroStep::Kind::kTimedOut) break;
    if (step.kind == LroStep::Kind::kDone) return step.result;
    if (step.kind == LroStep::Kind::kPollFailed) {
      Error::Code c = step.error->code();
      if (c != Error::Code::kUnavailable && c != Error::Code::kThrottled) {
        return std::unexpected(*step.error);
      }
      spdlog::warn("azure: {}", step.error->message());
    }
  }
  return Fail(Error::Code::kUnavailable, "{}: the operation did not finish within {}", op.what,
              FormatDuration(options_.operation_timeout));
}

std::optional<Time> ArmClient::throttled_until() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (throttled_until_ && clock_->Now() < *throttled_until_) return throttled_until_;
  return std::nullopt;
}

void ArmClient::SetObserver(ArmObserver observer) {
  std::lock_guard<std::mutex> lock(mu_);
  observer_ = std::move(observer);
}

std::string ArmOperationName(std::string_view method, std::string_view path_or_url) {
  std::string_view path = WithoutQuery(path_or_url);
  if (auto scheme = path.find("://"); scheme != std::string_view::npos) {
    auto slash = path.find('/', scheme + 3);
    path = slash == std::string_view::npos ? std::string_view() : path.substr(slash);
  }
  // Case-insensitive search for the last "/providers/".
  size_t at = std::string_view::npos;
  for (size_t i = 0; i + 11 <= path.size(); ++i) {
    if (EqualsIgnoreCase(path.substr(i, 11), "/providers/")) at = i;
  }
  std::string out(method);
  if (at == std::string_view::npos) return out + " other";
  std::vector<std::string_view> parts;
  for (std::string_view rest = path.substr(at + 11); !rest.empty();) {
    auto slash = rest.find('/');
    if (auto part = rest.substr(0, slash); !part.empty()) parts.push_back(part);
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  // parts: namespace, type, name, subtype, subname, ...: keep the types.
  std::string types;
  for (size_t i = 1; i < parts.size(); i += 2) {
    if (!types.empty()) types += '/';
    types += parts[i];
  }
  return out + " " + (types.empty() ? "other" : types);
}

int ArmClient::requests_sent() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

}  // namespace tidepool::cloud::azure
