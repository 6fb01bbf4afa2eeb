#include "net/http.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <mutex>

namespace tidepool::net {
namespace {

std::once_flag g_curl_init;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

// Per-transfer state the curl callbacks write into.
struct Transfer {
  Response* response = nullptr;
  const std::function<bool(std::string_view)>* on_data = nullptr;
  const std::atomic<bool>* cancel = nullptr;
  bool stopped_by_reader = false;
};

long Millis(Duration d) {
  return static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
}

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string_view line(data, size * n);
  if (line.starts_with("HTTP/")) {  // a new response (after 100-continue or a redirect)
    t->response->headers.clear();
    return size * n;
  }
  auto colon = line.find(':');
  if (colon != std::string_view::npos) {
    t->response->headers[Lower(Trim(line.substr(0, colon)))] =
        std::string(Trim(line.substr(colon + 1)));
  }
  return size * n;
}

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string_view chunk(data, size * n);
  if (t->on_data == nullptr) {
    t->response->body.append(chunk);
    return chunk.size();
  }
  if (t->response->status < 200 || t->response->status >= 300) {
    t->response->body.append(chunk);  // an error body is collected, not streamed
    return chunk.size();
  }
  if (!(*t->on_data)(chunk)) {
    t->stopped_by_reader = true;
    return CURL_WRITEFUNC_ERROR;
  }
  return chunk.size();
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  return (t->cancel != nullptr && t->cancel->load()) ? 1 : 0;
}

// A streamed body goes to the reader only on a 2xx status, which curl knows by the first body
// byte; the probe asks it then.
struct StatusProbe {
  Transfer* t;
  CURL* c;
};

size_t OnBodyProbed(char* data, size_t size, size_t n, void* user) {
  auto* p = static_cast<StatusProbe*>(user);
  if (p->t->response->status == 0) {
    long code = 0;
    curl_easy_getinfo(p->c, CURLINFO_RESPONSE_CODE, &code);
    p->t->response->status = static_cast<int>(code);
  }
  return OnBody(data, size, n, p->t);
}

bool SendsBody(const Request& request) {
  return !request.body.empty() || request.method == "POST" || request.method == "PUT" ||
         request.method == "PATCH";
}

// The request's headers for curl; the caller frees the list.
curl_slist* HeaderList(const Request& request) {
  curl_slist* headers = nullptr;
  for (const auto& [k, v] : request.headers) {
    headers = curl_slist_append(headers, (k + ": " + v).c_str());
  }
  if (SendsBody(request)) {
    headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip
  }
  return headers;
}

// Method, URL, body and headers.
void SetRequest(CURL* c, const Request& request, curl_slist* headers) {
  curl_easy_setopt(c, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  if (request.method == "HEAD") curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  if (SendsBody(request)) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  }
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
}

void SetTimeouts(CURL* c, const Request& request) {
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, Millis(request.timeout));
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, Millis(request.connect_timeout));
  if (request.idle_timeout > Duration::zero()) {
    // Abort when fewer than 1 byte/s arrive for the idle timeout.
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, std::max(1L, Millis(request.idle_timeout) / 1000));
  }
}

// Headers and body into `t` (through `probe`), cancellation through the progress callback.
void SetCallbacks(CURL* c, Transfer& t, StatusProbe& probe) {
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, &OnHeader);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &OnBodyProbed);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &probe);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, &OnProgress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &t);
  curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
}

// The PEM blobs handed to curl, which must outlive the transfer.
struct TlsBlobs {
  curl_blob ca{}, cert{}, key{};
};

void SetTls(CURL* c, const TlsOptions& tls, TlsBlobs& b) {
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, tls.insecure_skip_verify ? 0L : 1L);
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, tls.insecure_skip_verify ? 0L : 2L);
  if (!tls.ca_pem.empty()) {
    b.ca = {const_cast<char*>(tls.ca_pem.data()), tls.ca_pem.size(), CURL_BLOB_NOCOPY};
    curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &b.ca);
  }
  if (!tls.client_cert_pem.empty()) {
    b.cert = {const_cast<char*>(tls.client_cert_pem.data()), tls.client_cert_pem.size(),
              CURL_BLOB_NOCOPY};
    curl_easy_setopt(c, CURLOPT_SSLCERT_BLOB, &b.cert);
    curl_easy_setopt(c, CURLOPT_SSLCERTTYPE, "PEM");
  }
  if (!tls.client_key_pem.empty()) {
    b.key = {const_cast<char*>(tls.client_key_pem.data()), tls.client_key_pem.size(),
             CURL_BLOB_NOCOPY};
    curl_easy_setopt(c, CURLOPT_SSLKEY_BLOB, &b.key);
    curl_easy_setopt(c, CURLOPT_SSLKEYTYPE, "PEM");
  }
}

// Why a transfer failed, in words.
std::string FailureDetail(CURLcode rc, const char* errbuf, const Request& request, int status) {
  std::string detail = errbuf[0] != '\0' ? std::string(errbuf) : curl_easy_strerror(rc);
  if (rc == CURLE_ABORTED_BY_CALLBACK) detail = "cancelled";
  if (rc == CURLE_OPERATION_TIMEDOUT && request.idle_timeout > Duration::zero() && status != 0) {
    detail = "no data for " + FormatDuration(request.idle_timeout) + " (" + detail + ")";
  }
  return detail;
}

}  // namespace

struct HttpClient::Handle {
  CURL* curl = nullptr;
  ~Handle() {
    if (curl != nullptr) curl_easy_cleanup(curl);
  }
};

std::string Response::Header(std::string_view name) const {
  auto it = headers.find(Lower(name));
  return it == headers.end() ? std::string() : it->second;
}

HttpClient::HttpClient(TlsOptions tls) : tls_(std::move(tls)) {
  std::call_once(g_curl_init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

HttpClient::~HttpClient() = default;

std::unique_ptr<HttpClient::Handle> HttpClient::Acquire() {
  {
    std::lock_guard lock(mu_);
    if (!idle_.empty()) {
      auto h = std::move(idle_.back());
      idle_.pop_back();
      return h;
    }
  }
  auto h = std::make_unique<Handle>();
  h->curl = curl_easy_init();
  return h;
}

void HttpClient::Release(std::unique_ptr<Handle> handle) {
  std::lock_guard lock(mu_);
  if (idle_.size() < 8) idle_.push_back(std::move(handle));
}

Result<Response> HttpClient::Send(const Request& request) { return Perform(request, nullptr); }

Result<Response> HttpClient::Stream(const Request& request,
                                    const std::function<bool(std::string_view)>& on_data,
                                    int* status_seen) {
  return Perform(request, &on_data, status_seen);
}

Result<Response> HttpClient::Perform(const Request& request,
                                     const std::function<bool(std::string_view)>* on_data,
                                     int* status_seen) {
  auto handle = Acquire();
  CURL* c = handle->curl;
  if (c == nullptr) return Fail(Error::Code::kInternal, "curl_easy_init failed");
  curl_easy_reset(c);

  Response response;
  Transfer t{&response, on_data, request.cancel};
  StatusProbe probe{&t, c};
  curl_slist* headers = HeaderList(request);
  SetRequest(c, request, headers);
  SetTimeouts(c, request);
  SetCallbacks(c, t, probe);
  TlsBlobs blobs;
  SetTls(c, tls_, blobs);
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);

  CURLcode rc = curl_easy_perform(c);
  long code = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
  response.status = static_cast<int>(code);
  if (status_seen != nullptr) *status_seen = response.status;
  curl_slist_free_all(headers);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, nullptr);
  Release(std::move(handle));

  if (rc == CURLE_OK || (rc == CURLE_WRITE_ERROR && t.stopped_by_reader)) return response;
  return Fail(Error::Code::kUnavailable, "{} {}: {}", request.method, request.url,
              FailureDetail(rc, errbuf, request, response.status));
}

Error::Code ErrorCodeForStatus(int status) {
  switch (status) {
    case 400:
    case 422:
      return Error::Code::kInvalidArgument;
    case 401:
    case 403:
      return Error::Code::kPermissionDenied;
    case 404:
      return Error::Code::kNotFound;
    case 409:
    case 412:
      return Error::Code::kConflict;
    case 410:
      return Error::Code::kExpired;
    case 429:
      return Error::Code::kThrottled;
    default:
      return Error::Code::kUnavailable;
  }
}

std::string UrlEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (unsigned char ch : text) {
    if (std::isalnum(ch) || ch == '-' || ch == '_' || ch == '.' || ch == '~') {
      out.push_back(static_cast<char>(ch));
    } else {
      out.push_back('%');
      out.push_back(kHex[ch >> 4]);
      out.push_back(kHex[ch & 15]);
    }
  }
  return out;
}

}  // namespace tidepool::net
