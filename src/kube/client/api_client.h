// ApiClient: typed-enough access to the Kubernetes REST API over net::HttpClient: get, list
// (paginated), watch streams, create, patch, delete, and the few writes tidepool makes.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "base/time.h"
#include "kube/client/client_config.h"
#include "net/http.h"

namespace tidepool::kube {

// A resource collection: "/api/v1/pods", "/apis/policy/v1/poddisruptionbudgets",
// "/api/v1/namespaces/kube-system/configmaps". Paths are built by the helpers below.
std::string CollectionPath(std::string_view group_version, std::string_view resource,
                           std::string_view ns = "");
std::string ObjectPath(std::string_view group_version, std::string_view resource,
                       std::string_view ns, std::string_view name);

struct ListPage {
  std::vector<nlohmann::json> items;
  std::string resource_version;  // of the list
  std::string continue_token;    // "" on the last page
};

// One event of a watch stream.
struct WatchEvent {
  enum class Type { kAdded, kModified, kDeleted, kBookmark, kError };
  Type type = Type::kAdded;
  nlohmann::json object;  // for kError: the Status object
};

// Decodes one line of a watch stream ({"type": "...", "object": {...}}). Bad input is a
// kInvalidArgument error naming what was wrong. Exposed for tests and fuzzing.
Result<WatchEvent> DecodeWatchLine(std::string_view line);

// Splits a byte stream into lines and hands each complete non-empty line on (a trailing "\r"
// is removed). Exposed for tests and fuzzing. Not thread-safe; one per stream.
class LineSplitter {
 public:
  // A line longer than this (no newline within it) stops the splitter: Feed returns false and
  // overflowed() is true. Kubernetes objects are limited to ~1.5 MB by etcd.
  static constexpr size_t kMaxLine = 64u << 20;

  // Calls `on_line` for each complete line in `chunk`; returns false as soon as it does.
  bool Feed(std::string_view chunk, const std::function<bool(std::string_view)>& on_line);
  bool overflowed() const { return overflowed_; }
  // Bytes of an incomplete line held back for the next Feed.
  size_t pending() const { return partial_.size(); }

 private:
  std::string partial_;
  bool overflowed_ = false;
};

enum class PatchType { kMerge, kStrategicMerge, kJson };

// The Content-Type of a patch of that type.
std::string_view PatchContentType(PatchType type);

// Maps a failed API response to an Error: 400/422 kInvalidArgument, 401/403 kPermissionDenied,
// 404 kNotFound, 409/412 kConflict, 410 kExpired, 429 kThrottled (message includes
// Retry-After when given), 5xx and anything else kUnavailable. The message is
// "<method> <path>: <status> <reason>: <Status.message from the body>" (or a short,
// printable excerpt of a non-Status body). Exposed for tests.
Error StatusToError(std::string_view method, std::string_view path, int status,
                    std::string_view body, std::string_view retry_after = "");
// The same for a metav1.Status object (a watch ERROR event): its `code` decides.
Error StatusObjectToError(std::string_view method, std::string_view path,
                          const nlohmann::json& status);

// HTTP status -> Error code as StatusToError says. Messages carry the method, path and the API
// server's Status message, never credentials (a token is also scrubbed from any message).
//
// Thread-safe: every method may be called from any thread. Each call is one HTTP exchange (Get,
// Create, ...) or one stream (Watch); no retries inside except where a method says so. The
// bearer token comes from config.token, else config.token_file, re-read whenever the file's
// modification time changes (service-account token rotation).
// One finished request, for metrics: the Kubernetes verb (get, list, create, update, patch,
// delete, watch), the resource ("pods", "nodes", "pods/eviction", ...), the HTTP status (0 when
// there was no response) and how long it took.
struct RequestRecord {
  std::string_view verb;
  std::string resource;
  int status = 0;
  double seconds = 0;
};
using RequestObserver = std::function<void(const RequestRecord&)>;

// The resource a request path names: "/api/v1/namespaces/x/pods/y/eviction" -> "pods/eviction",
// "/apis/apps/v1/daemonsets?limit=5" -> "daemonsets".
std::string ResourceOfPath(std::string_view path);

class ApiClient {
 public:
  explicit ApiClient(ClientConfig config, Duration request_timeout = std::chrono::seconds(30));
  ~ApiClient();

  const ClientConfig& config() const { return config_; }
  // Called after every request (from the calling thread). Set before any request is made.
  void SetObserver(RequestObserver observer) { observer_ = std::move(observer); }

  // `timeout` on Get, Create and Update: this request's, for a caller that must give up sooner
  // than the client's request timeout (the Lease's renewals); zero: the client's.
  Result<nlohmann::json> Get(const std::string& path, Duration timeout = {});
  Result<ListPage> List(const std::string& collection, int limit,
                        const std::string& continue_token = "");
  // Follows `continue` until done; the resourceVersion is the first page's. When a continue
  // token expires mid-way (410), the list starts over (at most 3 times, then kExpired).
  Result<ListPage> ListAll(const std::string& collection, int page_size = 500);
  Result<nlohmann::json> Create(const std::string& collection, const nlohmann::json& object,
                                Duration timeout = {});
  Result<nlohmann::json> Update(const std::string& path, const nlohmann::json& object,
                                Duration timeout = {});  // PUT
  Result<nlohmann::json> Patch(const std::string& path, const nlohmann::json& patch,
                               PatchType type = PatchType::kMerge);
  // DELETE with optional preconditions (uid / resourceVersion). kNotFound when already gone.
  Result<void> Delete(const std::string& path, const std::string& uid_precondition = "",
                      const std::string& rv_precondition = "");
  // Watches `collection` from `resource_version` with allowWatchBookmarks, handing each event
  // (bookmarks included, ERROR events not) to `on_event` until it returns false, `cancel` is
  // set, or the stream ends. Returns ok when the stream ended normally; a 410 (or an ERROR
  // event with code 410) is a kExpired error so the caller relists; another ERROR event is
  // the error its code maps to, and sets `*error_event` (when given): the server accepted the
  // watch and then refused to go on from there; a cut connection is kUnavailable.
  // `timeout` is sent as timeoutSeconds (the server ends the stream then); the transfer itself
  // is cut at timeout + 1 min. Cancel is noticed within about a second (curl's progress
  // callback) and returns ok. An empty resource_version watches from "now" with synthetic
  // ADDED events for what exists. A line that is not a watch event ends the stream with a
  // kInvalidArgument error.
  Result<void> Watch(const std::string& collection, const std::string& resource_version,
                     const std::function<bool(const WatchEvent&)>& on_event,
                     const std::atomic<bool>* cancel, Duration timeout = std::chrono::minutes(5),
                     bool* error_event = nullptr);

  // policy/v1 Eviction of a pod. A PDB refusal (429) is kThrottled with the server's message;
  // kNotFound when the pod is gone.
  Result<void> Evict(const std::string& ns, const std::string& name);

  // Reachability of the API server, as the requests of every user of this client see it: a
  // request with no answer (connect error, reset, timeout) or a 502/503/504 marks the server
  // unreachable; the next request that gets any other answer marks it reachable again and calls
  // every recovery listener (on that request's thread, outside the client's locks). Informers
  // use it to end their reconnect backoff as soon as anyone (the Lease renewal every second,
  // another informer) gets through, instead of sleeping out their backoff.
  using ListenerId = uint64_t;
  ListenerId AddRecoveryListener(std::function<void()> listener);
  void RemoveRecoveryListener(ListenerId id);
  bool Reachable() const;

 private:
  struct TokenCache;
  Result<net::Response> Call(const std::string& method, const std::string& path,
                             const std::string& body, std::string_view content_type,
                             Duration timeout = {});
  Result<std::vector<std::pair<std::string, std::string>>> Headers(std::string_view content_type);
  Result<std::string> BearerToken();
  // Removes the bearer token from an error message, should a server or library echo it.
  Error Scrub(Error error);
  // Records a request's outcome for Reachable(); `status` 0: no answer.
  void NoteReachability(int status);

  ClientConfig config_;
  RequestObserver observer_;
  Duration request_timeout_;
  std::unique_ptr<net::HttpClient> http_;
  std::unique_ptr<TokenCache> token_cache_;

  mutable std::mutex reach_mu_;
  bool unreachable_ = false;
  ListenerId next_listener_ = 1;
  std::map<ListenerId, std::function<void()>> recovery_listeners_;
};

}  // namespace tidepool::kube
