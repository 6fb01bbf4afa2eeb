// FakeArm, identity and storage: the Azure AD and IMDS token endpoints, and the storage account's
// blob endpoint (DELETE of VHD blobs) with the blobs tests set up.
#include <httplib.h>

#include <algorithm>
#include <chrono>

#include "tests/cloud/azure/fake_arm.h"
#include "tests/cloud/azure/fake_arm_util.h"

namespace tidepool::testing::azure {
namespace {

using fake_arm_util::kArmResource;
using fake_arm_util::kStorageResource;
using fake_arm_util::ParseForm;
using nlohmann::json;

}  // namespace

// ---------------------------------------------------------------------------------------------
// Blobs and token counts.

std::string FakeArm::AddBlob(const std::string& container, const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  blobs_.insert(container + "/" + name);
  return blob_endpoint() + "/" + container + "/" + name;
}

std::vector<std::string> FakeArm::BlobNames() const {
  std::lock_guard<std::mutex> lock(mu_);
  return std::vector<std::string>(blobs_.begin(), blobs_.end());
}

void FakeArm::LeaseBlobOnce(const std::string& container, const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  leased_once_.insert(container + "/" + name);
}

int FakeArm::token_requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return token_requests_;
}

// ---------------------------------------------------------------------------------------------
// HTTP: Azure AD, IMDS and blob storage.

void FakeArm::HandleToken(const httplib::Request& req, httplib::Response& res) {
  std::lock_guard<std::mutex> lock(mu_);
  ++token_requests_;
  auto form = ParseForm(req.body);
  auto fail = [&](int status, const std::string& error, const std::string& description) {
    res.status = status;
    res.set_content(json{{"error", error}, {"error_description", description}}.dump(),
                    "application/json");
  };
  if (req.path != "/" + options_.tenant + "/oauth2/v2.0/token") {
    return fail(400, "invalid_request", "AADSTS90002: Tenant not found.");
  }
  if (form["grant_type"] != "client_credentials") {
    return fail(400, "unsupported_grant_type", "AADSTS70003: grant_type not supported.");
  }
  std::string audience;
  if (form["scope"] == std::string(kArmResource) + ".default") {
    audience = kArmResource;
  } else if (form["scope"] == std::string(kStorageResource) + ".default") {
    audience = kStorageResource;
  } else {
    return fail(400, "invalid_scope", "AADSTS70011: The provided value for scope is not valid.");
  }
  if (form["client_id"] != options_.client_id) {
    return fail(400, "unauthorized_client", "AADSTS700016: Application not found.");
  }
  bool ok = false;
  if (form.contains("client_secret")) {
    ok = form["client_secret"] == options_.client_secret;
    if (!ok) return fail(401, "invalid_client", "AADSTS7000215: Invalid client secret provided.");
  } else if (form.contains("client_assertion")) {
    ok =
        form["client_assertion_type"] == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" &&
        form["client_assertion"] == options_.federated_token;
    if (!ok) {
      return fail(400, "invalid_client",
                  "AADSTS700213: No matching federated identity record found.");
    }
  }
  if (!ok) return fail(400, "invalid_request", "AADSTS900144: no client credential.");
  std::string token = "fake-token-" + std::to_string(next_token_++);
  tokens_[token] = options_.clock->Now() + options_.token_lifetime;
  token_audience_[token] = audience;
  int64_t seconds =
      std::chrono::duration_cast<std::chrono::seconds>(options_.token_lifetime).count();
  res.status = 200;
  res.set_content(json{{"token_type", "Bearer"},
                       {"expires_in", seconds},
                       {"ext_expires_in", seconds},
                       {"access_token", token}}
                      .dump(),
                  "application/json");
}

void FakeArm::HandleImds(const httplib::Request& req, httplib::Response& res) {
  std::lock_guard<std::mutex> lock(mu_);
  ++token_requests_;
  if (req.get_header_value("Metadata") != "true") {
    res.status = 400;
    res.set_content(json{{"error", "invalid_request"},
                         {"error_description", "Required metadata header not specified"}}
                        .dump(),
                    "application/json");
    return;
  }
  std::string audience = req.get_param_value("resource");
  if (audience != kArmResource && audience != kStorageResource) {
    res.status = 400;
    res.set_content(
        json{{"error", "invalid_resource"}, {"error_description", "bad resource"}}.dump(),
        "application/json");
    return;
  }
  std::string token = "fake-mi-token-" + std::to_string(next_token_++);
  Time expiry = options_.clock->Now() + options_.token_lifetime;
  tokens_[token] = expiry;
  token_audience_[token] = audience;
  int64_t seconds =
      std::chrono::duration_cast<std::chrono::seconds>(options_.token_lifetime).count();
  int64_t on = std::chrono::duration_cast<std::chrono::seconds>(expiry.time_since_epoch()).count();
  res.status = 200;
  // IMDS answers with numbers as strings.
  res.set_content(json{{"access_token", token},
                       {"expires_in", std::to_string(seconds)},
                       {"expires_on", std::to_string(on)},
                       {"resource", audience},
                       {"token_type", "Bearer"}}
                      .dump(),
                  "application/json");
}

void FakeArm::HandleBlob(const httplib::Request& req, httplib::Response& res) {
  std::lock_guard<std::mutex> lock(mu_);
  RecordedRequest r;
  r.method = req.method;
  r.path = req.path;
  r.blob = true;
  auto q = req.target.find('?');
  if (q != std::string::npos) r.query = req.target.substr(q + 1);
  for (const auto& [k, v] : req.headers) r.headers[k] = v;
  requests_.push_back(std::move(r));
  // As the Blob service answers errors: an XML body and the code in x-ms-error-code.
  auto fail = [&](int status, const std::string& code, const std::string& message) {
    res.status = status;
    res.set_header("x-ms-error-code", code);
    res.set_content("<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>" + code +
                        "</Code><Message>" + message + "</Message></Error>",
                    "application/xml");
  };
  std::string version = req.get_header_value("x-ms-version");
  if (version.empty() || req.get_header_value("x-ms-date").empty()) {
    return fail(400, "MissingRequiredHeader",
                "An HTTP header that's mandatory for this request is not specified.");
  }
  std::string auth = req.get_header_value("Authorization");
  if (!auth.starts_with("Bearer ")) {
    return fail(403, "AuthenticationFailed", "Server failed to authenticate the request.");
  }
  if (version < "2017-11-09") {
    return fail(400, "InvalidHeaderValue", "Bearer tokens need x-ms-version 2017-11-09 or later.");
  }
  std::string token = auth.substr(7);
  auto it = tokens_.find(token);
  if (it == tokens_.end() || options_.clock->Now() >= it->second) {
    return fail(401, "InvalidAuthenticationInfo", "Server failed to authenticate the request.");
  }
  if (token_audience_[token] != kStorageResource) {
    return fail(401, "InvalidAuthenticationInfo", "Audience validation failed.");
  }
  if (req.method != "DELETE") {
    return fail(405, "UnsupportedHttpVerb", "The resource doesn't support the specified verb.");
  }
  std::string name = req.path.size() > 1 ? req.path.substr(1) : "";
  if (!blobs_.contains(name)) {
    return fail(404, "BlobNotFound", "The specified blob does not exist.");
  }
  std::string uri = blob_endpoint() + req.path;
  bool attached = std::any_of(vms_.begin(), vms_.end(), [&](const auto& kv) {
    const json& os_disk = kv.second.body["properties"]["storageProfile"]["osDisk"];
    return os_disk.contains("vhd") && os_disk["vhd"].value("uri", "") == uri;
  });
  if (attached || leased_once_.erase(name) > 0) {
    return fail(409, "LeaseIdMissing",
                "There is currently a lease on the blob and no lease ID was specified in the "
                "request.");
  }
  if (req.get_header_value("x-ms-delete-snapshots") != "include") {
    // Snapshots are not modelled; the header is required so a blob with snapshots goes too.
    return fail(409, "SnapshotsPresent",
                "This operation is not permitted because the blob has snapshots.");
  }
  blobs_.erase(name);
  res.status = 202;
  res.set_header("x-ms-delete-type-permanent", "false");
}

}  // namespace tidepool::testing::azure
