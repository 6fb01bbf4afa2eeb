#include "kube/client/api_client.h"

#include <fmt/format.h>

#include <filesystem>
#include <mutex>
#include <system_error>

namespace tidepool::kube {
namespace {

using Json = nlohmann::json;

std::string_view ReasonPhrase(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 406:
      return "Not Acceptable";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 412:
      return "Precondition Failed";
    case 413:
      return "Request Entity Too Large";
    case 415:
      return "Unsupported Media Type";
    case 422:
      return "Unprocessable Entity";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "";
  }
}

// Printable, short: for a body that is not a Status object (a proxy's HTML page, say).
std::string Excerpt(std::string_view body) {
  std::string out;
  for (char c : body) {
    if (out.size() >= 200) {
      out += "...";
      break;
    }
    unsigned char u = static_cast<unsigned char>(c);
    out.push_back(u >= 0x20 && u < 0x7f ? c : ' ');
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// Never throws: invalid input yields a discarded value.
Json ParseJsonNoThrow(std::string_view text) {
  try {
    return Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  } catch (...) {
    return Json(Json::value_t::discarded);
  }
}

std::string Dump(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string StatusMessage(const Json& status) {
  if (status.is_object()) {
    auto it = status.find("message");
    if (it != status.end() && it->is_string()) return it->get<std::string>();
    it = status.find("reason");
    if (it != status.end() && it->is_string()) return it->get<std::string>();
  }
  return "";
}

std::string StatusLine(int status) {
  std::string_view phrase = ReasonPhrase(status);
  return phrase.empty() ? fmt::format("{}", status) : fmt::format("{} {}", status, phrase);
}

// "?" or "&", whichever continues `path`'s query.
char QuerySep(const std::string& path) { return path.find('?') == std::string::npos ? '?' : '&'; }

std::string_view TrimSpace(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

Result<Json> ParseBody(const std::string& method, const std::string& path,
                       const net::Response& response) {
  Json body = ParseJsonNoThrow(response.body);
  if (body.is_discarded()) {
    return Fail(Error::Code::kInternal, "{} {}: {}: expected a JSON body, got \"{}\"", method, path,
                StatusLine(response.status), Excerpt(response.body));
  }
  return body;
}

}  // namespace

std::string CollectionPath(std::string_view group_version, std::string_view resource,
                           std::string_view ns) {
  std::string out = group_version.find('/') == std::string_view::npos
                        ? fmt::format("/api/{}", group_version)
                        : fmt::format("/apis/{}", group_version);
  if (!ns.empty()) out += fmt::format("/namespaces/{}", net::UrlEncode(ns));
  out += "/";
  out += resource;
  return out;
}

std::string ObjectPath(std::string_view group_version, std::string_view resource,
                       std::string_view ns, std::string_view name) {
  return CollectionPath(group_version, resource, ns) + "/" + net::UrlEncode(name);
}

Result<WatchEvent> DecodeWatchLine(std::string_view line) {
  Json doc = ParseJsonNoThrow(line);
  if (doc.is_discarded()) {
    return InvalidArgument("watch event: expected a JSON object, got invalid JSON \"{}\"",
                           Excerpt(line));
  }
  if (!doc.is_object()) {
    return InvalidArgument("watch event: expected a JSON object, got a {}", doc.type_name());
  }
  auto type = doc.find("type");
  if (type == doc.end() || !type->is_string()) {
    return InvalidArgument("watch event: type: expected a string (ADDED, MODIFIED, ...), got {}",
                           type == doc.end() ? "nothing" : type->type_name());
  }
  const auto& t = type->get_ref<const std::string&>();
  WatchEvent event;
  if (t == "ADDED") {
    event.type = WatchEvent::Type::kAdded;
  } else if (t == "MODIFIED") {
    event.type = WatchEvent::Type::kModified;
  } else if (t == "DELETED") {
    event.type = WatchEvent::Type::kDeleted;
  } else if (t == "BOOKMARK") {
    event.type = WatchEvent::Type::kBookmark;
  } else if (t == "ERROR") {
    event.type = WatchEvent::Type::kError;
  } else {
    return InvalidArgument(
        "watch event: type: expected ADDED, MODIFIED, DELETED, BOOKMARK or ERROR, got \"{}\"",
        Excerpt(t));
  }
  auto object = doc.find("object");
  if (object == doc.end() || !object->is_object()) {
    return InvalidArgument("watch event {}: object: expected a JSON object, got {}", t,
                           object == doc.end() ? "nothing" : object->type_name());
  }
  event.object = std::move(*object);
  return event;
}

bool LineSplitter::Feed(std::string_view chunk,
                        const std::function<bool(std::string_view)>& on_line) {
  if (overflowed_) return false;
  size_t start = 0;
  while (start <= chunk.size()) {
    size_t nl = chunk.find('\n', start);
    if (nl == std::string_view::npos) {
      std::string_view rest = chunk.substr(start);
      if (partial_.size() + rest.size() > kMaxLine) {
        overflowed_ = true;
        partial_.clear();
        return false;
      }
      partial_.append(rest);
      return true;
    }
    std::string_view piece = chunk.substr(start, nl - start);
    start = nl + 1;
    std::string_view line = piece;
    if (!partial_.empty()) {
      if (partial_.size() + piece.size() > kMaxLine) {
        overflowed_ = true;
        partial_.clear();
        return false;
      }
      partial_.append(piece);
      line = partial_;
    }
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    bool keep_going = line.empty() || on_line(line);
    partial_.clear();
    if (!keep_going) return false;
  }
  return true;
}

std::string_view PatchContentType(PatchType type) {
  switch (type) {
    case PatchType::kMerge:
      return "application/merge-patch+json";
    case PatchType::kStrategicMerge:
      return "application/strategic-merge-patch+json";
    case PatchType::kJson:
      return "application/json-patch+json";
  }
  return "application/merge-patch+json";
}

Error StatusToError(std::string_view method, std::string_view path, int status,
                    std::string_view body, std::string_view retry_after) {
  std::string detail = StatusMessage(ParseJsonNoThrow(body));
  if (detail.empty()) detail = Excerpt(body);
  std::string message = fmt::format("{} {}: {}", method, path, StatusLine(status));
  if (!detail.empty()) message += ": " + detail;
  if (status == 429 && !retry_after.empty()) {
    message += fmt::format(" (Retry-After: {}s)", Excerpt(retry_after));
  }
  return Error(net::ErrorCodeForStatus(status), std::move(message));
}

Error StatusObjectToError(std::string_view method, std::string_view path, const Json& status) {
  int code = 500;
  if (status.is_object()) {
    auto it = status.find("code");
    if (it != status.end() && it->is_number_integer()) code = it->get<int>();
  }
  std::string detail = StatusMessage(status);
  std::string message = fmt::format("{} {}: watch error {}", method, path, StatusLine(code));
  if (!detail.empty()) message += ": " + detail;
  return Error(net::ErrorCodeForStatus(code), std::move(message));
}

struct ApiClient::TokenCache {
  std::mutex mu;
  std::string token;
  std::filesystem::file_time_type mtime{};
  bool loaded = false;
};

ApiClient::ApiClient(ClientConfig config, Duration request_timeout)
    : config_(std::move(config)),
      request_timeout_(request_timeout),
      http_(std::make_unique<net::HttpClient>(config_.tls)),
      token_cache_(std::make_unique<TokenCache>()) {}

ApiClient::~ApiClient() = default;

Result<std::string> ApiClient::BearerToken() {
  if (!config_.token.empty()) return config_.token;
  if (config_.token_file.empty()) return std::string();
  std::lock_guard lock(token_cache_->mu);
  std::error_code ec;
  auto mtime = std::filesystem::last_write_time(config_.token_file, ec);
  if (token_cache_->loaded && (ec || mtime == token_cache_->mtime)) {
    return token_cache_->token;  // unchanged, or briefly missing while being rotated
  }
  auto text = ReadCredentialFile(config_.token_file);
  if (!text) {
    if (token_cache_->loaded) return token_cache_->token;
    return std::unexpected(text.error().Wrap("bearer token"));
  }
  token_cache_->token = std::string(TrimSpace(*text));
  token_cache_->mtime = mtime;
  token_cache_->loaded = true;
  return token_cache_->token;
}

Error ApiClient::Scrub(Error error) {
  std::string token = config_.token;
  if (token.empty() && !config_.token_file.empty()) {
    std::lock_guard lock(token_cache_->mu);
    token = token_cache_->token;
  }
  if (token.size() < 4) return error;
  std::string message = error.message();
  bool changed = false;
  for (size_t pos = message.find(token); pos != std::string::npos; pos = message.find(token, pos)) {
    message.replace(pos, token.size(), "<redacted>");
    changed = true;
  }
  return changed ? Error(error.code(), std::move(message)) : error;
}

Result<std::vector<std::pair<std::string, std::string>>> ApiClient::Headers(
    std::string_view content_type) {
  std::vector<std::pair<std::string, std::string>> headers = {{"Accept", "application/json"},
                                                              {"User-Agent", "tidepool"}};
  if (!content_type.empty()) headers.emplace_back("Content-Type", std::string(content_type));
  TIDEPOOL_ASSIGN_OR_RETURN(std::string token, BearerToken());
  if (!token.empty()) headers.emplace_back("Authorization", "Bearer " + token);
  return headers;
}

std::string ResourceOfPath(std::string_view path) {
  path = path.substr(0, path.find('?'));
  std::vector<std::string_view> parts;
  while (!path.empty()) {
    auto slash = path.find('/');
    std::string_view part = path.substr(0, slash);
    if (!part.empty()) parts.push_back(part);
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  // /api/v1/... or /apis/<group>/<version>/...
  size_t i = (!parts.empty() && parts[0] == "api") ? 2 : 3;
  if (i < parts.size() && parts[i] == "namespaces" && i + 2 < parts.size()) i += 2;
  if (i >= parts.size()) return "";
  std::string resource(parts[i]);
  if (i + 2 < parts.size()) resource += "/" + std::string(parts[i + 2]);  // a subresource
  return resource;
}

namespace {
std::string_view VerbOf(std::string_view method, std::string_view path) {
  if (method == "GET") {
    if (path.find("watch=1") != std::string_view::npos) return "watch";
    // A collection (even number of segments after the group/version) is a list.
    return ResourceOfPath(path).find('/') == std::string::npos &&
                   path.substr(0, path.find('?')).ends_with(ResourceOfPath(path))
               ? "list"
               : "get";
  }
  if (method == "POST") return "create";
  if (method == "PUT") return "update";
  if (method == "PATCH") return "patch";
  if (method == "DELETE") return "delete";
  return method;
}
}  // namespace

Result<net::Response> ApiClient::Call(const std::string& method, const std::string& path,
                                      const std::string& body, std::string_view content_type,
                                      Duration timeout) {
  net::Request request;
  request.method = method;
  request.url = config_.server + path;
  request.body = body;
  request.timeout = timeout > Duration::zero() ? timeout : request_timeout_;
  auto headers = Headers(content_type);
  if (!headers) return std::unexpected(headers.error().Wrap(fmt::format("{} {}", method, path)));
  request.headers = std::move(*headers);
  auto started = std::chrono::steady_clock::now();
  auto response = http_->Send(request);
  if (observer_) {
    observer_({VerbOf(method, path), ResourceOfPath(path), response ? response->status : 0,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()});
  }
  NoteReachability(response ? response->status : 0);
  if (!response) return std::unexpected(Scrub(response.error()));
  if (response->status < 200 || response->status >= 300) {
    return std::unexpected(Scrub(StatusToError(method, path, response->status, response->body,
                                               response->Header("Retry-After"))));
  }
  return response;
}

void ApiClient::NoteReachability(int status) {
  const bool down = status == 0 || status == 502 || status == 503 || status == 504;
  std::vector<std::function<void()>> wake;
  {
    std::lock_guard lock(reach_mu_);
    if (down || !unreachable_) {
      unreachable_ = down;
      return;
    }
    unreachable_ = false;
    for (const auto& [id, listener] : recovery_listeners_) wake.push_back(listener);
  }
  for (const auto& listener : wake) listener();
}

ApiClient::ListenerId ApiClient::AddRecoveryListener(std::function<void()> listener) {
  std::lock_guard lock(reach_mu_);
  ListenerId id = next_listener_++;
  recovery_listeners_.emplace(id, std::move(listener));
  return id;
}

void ApiClient::RemoveRecoveryListener(ListenerId id) {
  std::lock_guard lock(reach_mu_);
  recovery_listeners_.erase(id);
}

bool ApiClient::Reachable() const {
  std::lock_guard lock(reach_mu_);
  return !unreachable_;
}

Result<nlohmann::json> ApiClient::Get(const std::string& path, Duration timeout) {
  TIDEPOOL_ASSIGN_OR_RETURN(net::Response response, Call("GET", path, "", "", timeout));
  return ParseBody("GET", path, response);
}

Result<ListPage> ApiClient::List(const std::string& collection, int limit,
                                 const std::string& continue_token) {
  std::string path = collection;
  if (limit > 0) path += fmt::format("{}limit={}", QuerySep(path), limit);
  if (!continue_token.empty()) {
    path += fmt::format("{}continue={}", QuerySep(path), net::UrlEncode(continue_token));
  }
  TIDEPOOL_ASSIGN_OR_RETURN(net::Response response, Call("GET", path, "", ""));
  TIDEPOOL_ASSIGN_OR_RETURN(Json body, ParseBody("GET", path, response));
  ListPage page;
  if (!body.is_object()) {
    return Fail(Error::Code::kInternal, "GET {}: expected a List object, got a {}", path,
                body.type_name());
  }
  auto items = body.find("items");
  if (items != body.end() && !items->is_null()) {
    if (!items->is_array()) {
      return Fail(Error::Code::kInternal, "GET {}: items: expected a list, got a {}", path,
                  items->type_name());
    }
    page.items.reserve(items->size());
    for (auto& item : *items) page.items.push_back(std::move(item));
  }
  auto meta = body.find("metadata");
  if (meta != body.end() && meta->is_object()) {
    if (auto rv = meta->find("resourceVersion"); rv != meta->end() && rv->is_string()) {
      page.resource_version = rv->get<std::string>();
    }
    if (auto c = meta->find("continue"); c != meta->end() && c->is_string()) {
      page.continue_token = c->get<std::string>();
    }
  }
  return page;
}

Result<ListPage> ApiClient::ListAll(const std::string& collection, int page_size) {
  constexpr int kAttempts = 3;
  for (int attempt = 1;; ++attempt) {
    TIDEPOOL_ASSIGN_OR_RETURN(ListPage all, List(collection, page_size));
    std::string next = all.continue_token;
    bool expired = false;
    while (!next.empty()) {
      auto page = List(collection, page_size, next);
      if (!page) {
        if (page.error().code() == Error::Code::kExpired && attempt < kAttempts) {
          expired = true;
          break;
        }
        return std::unexpected(page.error());
      }
      for (auto& item : page->items) all.items.push_back(std::move(item));
      next = page->continue_token;
    }
    if (expired) continue;
    all.continue_token.clear();
    return all;
  }
}

Result<nlohmann::json> ApiClient::Create(const std::string& collection,
                                         const nlohmann::json& object, Duration timeout) {
  TIDEPOOL_ASSIGN_OR_RETURN(net::Response response,
                            Call("POST", collection, Dump(object), "application/json", timeout));
  return ParseBody("POST", collection, response);
}

Result<nlohmann::json> ApiClient::Update(const std::string& path, const nlohmann::json& object,
                                         Duration timeout) {
  TIDEPOOL_ASSIGN_OR_RETURN(net::Response response,
                            Call("PUT", path, Dump(object), "application/json", timeout));
  return ParseBody("PUT", path, response);
}

Result<nlohmann::json> ApiClient::Patch(const std::string& path, const nlohmann::json& patch,
                                        PatchType type) {
  TIDEPOOL_ASSIGN_OR_RETURN(net::Response response,
                            Call("PATCH", path, Dump(patch), PatchContentType(type)));
  return ParseBody("PATCH", path, response);
}

Result<void> ApiClient::Delete(const std::string& path, const std::string& uid_precondition,
                               const std::string& rv_precondition) {
  std::string body;
  if (!uid_precondition.empty() || !rv_precondition.empty()) {
    Json options = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}};
    Json pre = Json::object();
    if (!uid_precondition.empty()) pre["uid"] = uid_precondition;
    if (!rv_precondition.empty()) pre["resourceVersion"] = rv_precondition;
    options["preconditions"] = std::move(pre);
    body = Dump(options);
  }
  TIDEPOOL_ASSIGN_OR_RETURN(net::Response response,
                            Call("DELETE", path, body, body.empty() ? "" : "application/json"));
  (void)response;
  return {};
}

Result<void> ApiClient::Evict(const std::string& ns, const std::string& name) {
  std::string path = ObjectPath("v1", "pods", ns, name) + "/eviction";
  Json eviction = {{"apiVersion", "policy/v1"},
                   {"kind", "Eviction"},
                   {"metadata", {{"name", name}, {"namespace", ns}}}};
  TIDEPOOL_ASSIGN_OR_RETURN(net::Response response,
                            Call("POST", path, Dump(eviction), "application/json"));
  (void)response;
  return {};
}

Result<void> ApiClient::Watch(const std::string& collection, const std::string& resource_version,
                              const std::function<bool(const WatchEvent&)>& on_event,
                              const std::atomic<bool>* cancel, Duration timeout,
                              bool* error_event) {
  if (error_event != nullptr) *error_event = false;
  auto seconds = std::chrono::duration_cast<std::chrono::seconds>(timeout).count();
  if (seconds < 1) seconds = 1;
  std::string path = collection;
  path +=
      fmt::format("{}watch=1&allowWatchBookmarks=true&timeoutSeconds={}", QuerySep(path), seconds);
  if (!resource_version.empty()) {
    path += "&resourceVersion=" + net::UrlEncode(resource_version);
  }
  net::Request request;
  request.method = "GET";
  request.url = config_.server + path;
  request.timeout = std::chrono::seconds(seconds) + std::chrono::minutes(1);
  request.cancel = cancel;
  auto headers = Headers("");
  if (!headers) return std::unexpected(headers.error().Wrap(fmt::format("GET {}", path)));
  request.headers = std::move(*headers);

  LineSplitter splitter;
  std::optional<Error> stream_error;
  bool ended_by_error_event = false;
  auto on_line = [&](std::string_view line) {
    auto event = DecodeWatchLine(line);
    if (!event) {
      stream_error = event.error().Wrap(fmt::format("GET {}", path));
      return false;
    }
    if (event->type == WatchEvent::Type::kError) {
      stream_error = StatusObjectToError("GET", path, event->object);
      ended_by_error_event = true;
      return false;
    }
    return on_event(*event);
  };
  int status_seen = 0;  // a stream cut after the server answered still means it was there
  auto response = http_->Stream(
      request, [&](std::string_view chunk) { return splitter.Feed(chunk, on_line); }, &status_seen);
  if (cancel != nullptr && cancel->load()) return {};
  NoteReachability(status_seen);
  if (!response) return std::unexpected(Scrub(response.error()));
  if (response->status < 200 || response->status >= 300) {
    return std::unexpected(Scrub(StatusToError("GET", path, response->status, response->body,
                                               response->Header("Retry-After"))));
  }
  if (stream_error) {
    if (error_event != nullptr) *error_event = ended_by_error_event;
    return std::unexpected(Scrub(*stream_error));
  }
  if (splitter.overflowed()) {
    return Fail(Error::Code::kUnavailable, "GET {}: a watch event longer than {} bytes", path,
                LineSplitter::kMaxLine);
  }
  return {};
}

}  // namespace tidepool::kube
