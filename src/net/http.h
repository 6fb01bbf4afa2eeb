// HttpClient: HTTP/1.1 and TLS over libcurl, for the Kubernetes API and cloud REST APIs. Plain
// request/response plus streaming bodies (watches); status codes are values, not errors.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/time.h"

namespace tidepool::net {

// How to verify the server and how to present a client certificate.
struct TlsOptions {
  std::string ca_pem;  // PEM bundle to trust; empty: the system's CA store
  std::string client_cert_pem;
  std::string client_key_pem;
  // Never verify the server. Only ever set from an explicit user setting (kubeconfig
  // insecure-skip-tls-verify); the default is to verify.
  bool insecure_skip_verify = false;
};

struct Request {
  std::string method = "GET";
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // The whole exchange, including the body; zero means no limit (watch streams, which rely
  // on `idle_timeout` instead).
  Duration timeout = std::chrono::seconds(30);
  Duration connect_timeout = std::chrono::seconds(10);
  // Abort when no byte arrives for this long (zero: never). For streams.
  Duration idle_timeout{};
  // When set and true, the transfer stops as soon as possible with a kUnavailable error
  // "cancelled". Lets another thread end a stream.
  const std::atomic<bool>* cancel = nullptr;
};

struct Response {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased; a repeated header: last
  std::string body;                            // empty for Stream()

  // The header's value or "" (name in any case).
  std::string Header(std::string_view name) const;
};

// Thread-safe: any number of threads may call Send and Stream at once (each call uses its own
// curl handle; idle handles are kept for connection reuse). Failures to reach the server
// (DNS, connect, TLS, timeout, cancel) are kUnavailable errors whose message names the method
// and URL; any HTTP status is returned as a Response for the caller to interpret.
class HttpClient {
 public:
  explicit HttpClient(TlsOptions tls = {});
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  Result<Response> Send(const Request& request);

  // Sends the request and hands the body to `on_data` piece by piece as it arrives (pieces
  // are arbitrary byte ranges, not lines). `on_data` returns false to stop reading; that
  // ends the call successfully. The returned Response carries the status and headers; a
  // non-2xx body is collected into Response::body instead of being streamed. `status_seen`
  // (optional) gets the HTTP status even when the transfer fails after the response began (a
  // stream cut mid-way), 0 when no response came at all.
  Result<Response> Stream(const Request& request,
                          const std::function<bool(std::string_view)>& on_data,
                          int* status_seen = nullptr);

  const TlsOptions& tls() const { return tls_; }

 private:
  struct Handle;
  std::unique_ptr<Handle> Acquire();
  void Release(std::unique_ptr<Handle> handle);
  Result<Response> Perform(const Request& request,
                           const std::function<bool(std::string_view)>* on_data,
                           int* status_seen = nullptr);

  TlsOptions tls_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Handle>> idle_;
};

// The Error::Code for an HTTP error status, as the Kubernetes and ARM clients read it: 400/422
// kInvalidArgument, 401/403 kPermissionDenied, 404 kNotFound, 409/412 kConflict, 410
// kExpired, 429 kThrottled, anything else (5xx) kUnavailable.
Error::Code ErrorCodeForStatus(int status);

// Percent-encodes a query parameter value or path segment (RFC 3986 unreserved kept).
std::string UrlEncode(std::string_view text);

}  // namespace tidepool::net
