#include "cloud/azure/blob.h"

#include <algorithm>
#include <ctime>

#include "cloud/azure/url.h"

namespace tidepool::cloud::azure {
namespace {

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool IsBlobNameChar(char c) {
  return IsLowerAlnum(c) || (c >= 'A' && c <= 'Z') || c == '.' || c == '_' || c == '-';
}

// The text between <Code> and </Code> of a storage error body ("" none).
std::string XmlErrorCode(std::string_view body) {
  auto open = body.find("<Code>");
  if (open == std::string_view::npos) return "";
  open += 6;
  auto close = body.find("</Code>", open);
  if (close == std::string_view::npos || close - open > 128) return "";
  return std::string(body.substr(open, close - open));
}

}  // namespace

Result<void> CheckVhdUri(std::string_view uri, std::string_view vm, std::string_view suffix,
                         std::string_view arm_endpoint) {
  auto bad = [&](std::string_view why) -> Result<void> {
    return InvalidArgument("VHD URI \"{}\" is not VM {}'s OS disk blob: {}", WithoutQuery(uri), vm,
                           why);
  };
  auto parts = ParseUrl(uri);
  if (!parts) return bad(parts.error().message());
  if (uri.find_first_of("?#%") != std::string_view::npos) {
    return bad("it has a query, a fragment or percent-encoding");
  }
  if (SameOrigin(uri, arm_endpoint)) return bad("it is on the ARM endpoint's host");
  bool loopback = IsLoopbackHost(parts->host);
  if (!loopback) {
    std::string tail = "." + ToLower(suffix);
    if (parts->scheme != "https") return bad("it is not https");
    if (suffix.empty() || !parts->host.ends_with(tail)) {
      return bad(fmt::format("its host is not <account>.{}", suffix));
    }
    std::string_view account =
        std::string_view(parts->host).substr(0, parts->host.size() - tail.size());
    if (account.size() < 3 || account.size() > 24 ||
        !std::all_of(account.begin(), account.end(), IsLowerAlnum)) {
      return bad("its host does not start with a storage account name");
    }
  }
  // "/<container>/<blob>"
  std::string_view path = parts->path;
  if (path.size() < 2 || path[0] != '/') return bad("no container");
  path.remove_prefix(1);
  auto slash = path.find('/');
  if (slash == std::string_view::npos) return bad("no blob name");
  std::string_view container = path.substr(0, slash);
  std::string_view blob = path.substr(slash + 1);
  if (container.empty() || !std::all_of(container.begin(), container.end(),
                                        [](char c) { return IsLowerAlnum(c) || c == '-'; })) {
    return bad("not a container name");
  }
  if (blob.empty() || !std::all_of(blob.begin(), blob.end(), IsBlobNameChar)) {
    return bad("the blob name is not one segment of letters, digits, '.', '_' and '-'");
  }
  if (vm.empty() || blob.size() <= vm.size() + 4 ||
      !EqualsIgnoreCase(blob.substr(0, vm.size()), vm) ||
      (blob[vm.size()] != '-' && blob[vm.size()] != '_' && blob[vm.size()] != '.') ||
      !EqualsIgnoreCase(blob.substr(blob.size() - 4), ".vhd")) {
    return bad(fmt::format("the blob name is not {}<-|_|.>...vhd", vm));
  }
  return {};
}

std::string FormatHttpDate(Time t) {
  static constexpr const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  std::time_t secs = static_cast<std::time_t>(
      std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count());
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return fmt::format("{}, {:02} {} {:04} {:02}:{:02}:{:02} GMT", kDays[tm.tm_wday % 7], tm.tm_mday,
                     kMonths[tm.tm_mon % 12], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

Result<BlobDelete> DeleteBlob(net::HttpClient& http, TokenSource& tokens, const Clock& clock,
                              std::string_view uri, Duration timeout) {
  std::string where = fmt::format("deleting blob {}", WithoutQuery(uri));
  auto token = tokens.Token();
  if (!token) return std::unexpected(token.error().Wrap(where + ": storage token"));
  net::Request req;
  req.method = "DELETE";
  req.url = std::string(uri);
  req.timeout = timeout;
  req.headers = {{"Authorization", "Bearer " + *token},
                 {"x-ms-version", std::string(kBlobApiVersion)},
                 {"x-ms-date", FormatHttpDate(clock.Now())},
                 {"x-ms-delete-snapshots", "include"}};
  auto resp = http.Send(req);
  if (!resp) return std::unexpected(resp.error().Wrap(where));
  if (resp->status == 202 || resp->status == 200) return BlobDelete::kDeleted;
  std::string code = resp->Header("x-ms-error-code");
  if (code.empty()) code = XmlErrorCode(resp->body);
  if (resp->status == 404) return BlobDelete::kGone;
  if (resp->status == 409 && code.starts_with("Lease")) {
    return BlobDelete::kLeased;
  }
  if (resp->status == 401) tokens.Invalidate();
  return Fail(net::ErrorCodeForStatus(resp->status), "{}: HTTP {}{}", where, resp->status,
              code.empty() ? "" : ": " + code);
}

}  // namespace tidepool::cloud::azure
