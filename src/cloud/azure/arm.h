// ArmClient: JSON requests to Azure Resource Manager with api-version, bearer tokens, ARM error
// bodies, long-running operations (Azure-AsyncOperation / Location) and 429 throttling.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/time.h"
#include "cloud/azure/auth.h"
#include "net/http.h"

namespace tidepool::cloud::azure {

// Blocks the calling thread for a duration. Production: std::this_thread::sleep_for; tests: a
// function that advances their fake clock.
using Sleeper = std::function<void(Duration)>;
Sleeper RealSleeper();

struct ArmOptions {
  std::string endpoint = "https://management.azure.com";  // no trailing slash needed
  Duration request_timeout = std::chrono::seconds(30);
  Duration default_poll_interval = std::chrono::seconds(10);  // operation without Retry-After
  Duration max_poll_interval = std::chrono::minutes(2);       // a longer Retry-After is capped
  Duration default_throttle = std::chrono::seconds(60);       // 429 without Retry-After
  Duration operation_timeout = std::chrono::minutes(30);      // Wait() gives up after this
};

// A long-running operation ARM accepted. Plain value: the provider keeps it across passes.
struct Operation {
  std::string what;          // "PATCH .../virtualMachineScaleSets/x", for messages
  std::string status_url;    // Azure-AsyncOperation (preferred when both are given)
  std::string location_url;  // Location
  Time started;
  Time next_poll;  // not before this (Retry-After)
  Time deadline;
};

struct OperationResult {
  enum class State { kInProgress, kSucceeded, kFailed, kCanceled };
  State state = State::kInProgress;
  std::string code;     // the ARM error code when failed ("AllocationFailed")
  std::string message;  // the ARM error message when failed
  bool done() const { return state != State::kInProgress; }
};

// One ARM answer. Non-2xx answers are values too (ok() false) so callers can branch on the ARM
// error code; AsError() turns one into an Error.
struct ArmResponse {
  int status = 0;
  nlohmann::json body;                  // null when the body is empty or not JSON
  std::string etag;                     // the ETag header, else the body's etag / properties.eTag
  std::optional<Operation> operation;   // when ARM answered with an async operation
  bool from_cache = false;              // served from the last good GET while throttled
  std::optional<Duration> retry_after;  // the Retry-After header, in seconds
  std::string error_code;               // from {"error": {"code", "message"}} on non-2xx
  std::string error_message;
  std::string method;
  std::string path;  // without query, for messages

  bool ok() const { return status >= 200 && status < 300; }
  // "ARM PATCH /subscriptions/.../x: HTTP 409 OperationNotAllowed: <message>" with the code
  // mapped: 400 kInvalidArgument, 401/403 kPermissionDenied, 404 kNotFound, 409/412 kConflict,
  // 429 kThrottled, others kUnavailable.
  Error AsError() const;
};

// One HTTP request sent to ARM, for metrics: `operation` from ArmOperationName, `status` the
// response's HTTP status (0: no response, a transport error or timeout).
struct ArmRequestRecord {
  std::string_view method;
  std::string operation;
  int status = 0;
  double seconds = 0;
};
using ArmObserver = std::function<void(const ArmRequestRecord&)>;

// A metric-friendly name of an ARM request: the method and the resource type chain after the
// last `providers/<namespace>/`, names left out ("GET virtualMachineScaleSets/virtualMachines",
// "POST virtualMachineScaleSets/delete", "GET locations/operations" for an operation poll).
// A path with no provider segment gives the method and "other".
std::string ArmOperationName(std::string_view method, std::string_view path_or_url);

// Contract:
//  - Paths start with "/subscriptions/..." and get `?api-version=` appended (plus `query`);
//    absolute URLs (nextLink, operation URLs) are used as given but must have the endpoint's
//    origin: the bearer token is never sent anywhere else.
//  - Errors are returned, not retried, with two exceptions: a 401 whose code says the token
//    expired or is invalid drops the cached token and retries once; a 412 is left to the caller.
//  - Throttling: a 429 records "throttled until now + Retry-After" (default_throttle when absent)
//    and nothing is sent before then. Meanwhile a GET whose URL answered 2xx before is served
//    from that answer (from_cache = true); any other call fails at once with kThrottled. No
//    retry loop, ever.
// Thread-safety: calls are serialised by an internal mutex; the borrowed http client, token
// source and clock must outlive the client.
class ArmClient {
 public:
  ArmClient(net::HttpClient* http, TokenSource* tokens, const Clock* clock, Sleeper sleep,
            ArmOptions options);

  // GET; `query` is extra query text without '?' or '&' ("$expand=instanceView").
  Result<ArmResponse> Get(std::string_view path, std::string_view api_version,
                          std::string_view query = "");

  // GET of an ARM list: the `value` items of every page, following nextLink. Throttled: the
  // cached pages, or kThrottled. A non-2xx page is an error (AsError).
  Result<std::vector<nlohmann::json>> List(std::string_view path, std::string_view api_version,
                                           std::string_view query = "");

  // Any method with an optional JSON body and extra headers (If-Match).
  Result<ArmResponse> Send(std::string_view method, std::string_view path,
                           std::string_view api_version, const nlohmann::json* body,
                           const std::vector<std::pair<std::string, std::string>>& headers = {},
                           std::string_view query = "");

  // Polls `op` once now and moves op.next_poll by the answer's Retry-After. Transport errors,
  // 5xx and 429 are errors (the operation stays pending).
  Result<OperationResult> Poll(Operation& op);

  // Polls until the operation finishes or op.deadline passes (kUnavailable "did not finish"),
  // sleeping through the injected Sleeper between polls; transient poll errors are retried at
  // the next poll time, throttling waits until it ends.
  Result<OperationResult> Wait(Operation& op);

  // Called after every HTTP request to ARM (tokens excluded), on the calling thread, with the
  // client's lock held: keep it short and do not call back into the client.
  void SetObserver(ArmObserver observer);

  std::optional<Time> throttled_until() const;
  int requests_sent() const;  // HTTP requests to ARM (tokens excluded)
  const ArmOptions& options() const { return options_; }
  const Clock* clock() const { return clock_; }

 private:
  Result<ArmResponse> SendLocked(std::string_view method, const std::string& url,
                                 const nlohmann::json* body,
                                 const std::vector<std::pair<std::string, std::string>>& headers);
  Result<ArmResponse> GetUrlLocked(const std::string& url);
  // The last 2xx answer to a GET of `url`, marked from_cache; nullopt for other methods.
  std::optional<ArmResponse> CachedLocked(const std::string& url, bool is_get) const;
  net::Request MakeRequest(std::string_view method, const std::string& url,
                           const std::string& token, const nlohmann::json* body,
                           const std::vector<std::pair<std::string, std::string>>& headers) const;
  // Sends one HTTP request to ARM, counting it and telling the observer.
  Result<net::Response> SendHttpLocked(const std::string& path_for_messages,
                                       const net::Request& req);
  // An HTTP answer as an ArmResponse: body, etag, Retry-After, ARM error code and message.
  ArmResponse ReadAnswer(const net::Response& resp, std::string_view method,
                         const std::string& path_for_messages) const;
  // A 429: nothing is sent until its Retry-After; a cached GET answer or a kThrottled error.
  Result<ArmResponse> ThrottledLocked(const std::string& url, bool is_get,
                                      const net::Response& resp, const ArmResponse& r);
  std::string Url(std::string_view path, std::string_view api_version,
                  std::string_view query) const;
  Duration RetryAfter(const net::Response& r, Duration fallback) const;

  net::HttpClient* http_;
  TokenSource* tokens_;
  const Clock* clock_;
  Sleeper sleep_;
  ArmOptions options_;

  mutable std::mutex mu_;
  std::optional<Time> throttled_until_;
  std::map<std::string, ArmResponse> cache_;  // last 2xx GET per URL
  int requests_ = 0;
  ArmObserver observer_;
};

// The code and message of an ARM error body: {"error": {"code", "message"}} (ARM and Compute),
// or a bare {"code", "message"}. Leaves them as they are when the body has none.
void ParseArmError(const nlohmann::json& body, std::string& code, std::string& message);

// True when an ARM error code (and its message) means "no capacity for this VM size here now":
// SkuNotAvailable, AllocationFailed, ZonalAllocationFailed, OverconstrainedAllocationRequest,
// OverconstrainedZonalAllocationRequest, quota errors (QuotaExceeded, OperationNotAllowed whose
// message speaks of quota), spot capacity errors. Matching ignores case.
bool IsStockoutError(std::string_view code, std::string_view message);

}  // namespace tidepool::cloud::azure
