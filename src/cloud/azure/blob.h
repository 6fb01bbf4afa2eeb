// Azure Blob Storage, the one call azure-vms needs: deleting the VHD blob of a removed VM's
// unmanaged OS disk, authorised with a Microsoft Entra token for the storage audience.
#pragma once

#include <string>
#include <string_view>

#include "base/error.h"
#include "base/time.h"
#include "cloud/azure/auth.h"
#include "net/http.h"

namespace tidepool::cloud::azure {

// The audience of storage tokens (IMDS `resource`; the AAD scope is this plus ".default").
inline constexpr std::string_view kStorageResource = "https://storage.azure.com/";
// The Blob service REST version sent; bearer tokens need 2017-11-09 or later.
inline constexpr std::string_view kBlobApiVersion = "2021-08-06";

// Checks that `uri` is the OS disk blob of VM `vm`, and so one tidepool may delete:
//  - https://<account>.<suffix>/<container>/<blob>, with <account> 3-24 lower-case letters and
//    digits; plain http or https to a loopback host is also accepted (the tests' fake);
//  - never the ARM endpoint's origin (a storage token must not go there);
//  - no query, fragment, user info or percent-encoding; <container> of [a-z0-9-];
//  - <blob> is one path segment of [A-Za-z0-9._-] that starts with `vm` (any case) followed by
//    '-', '_' or '.', and ends with ".vhd".
// kInvalidArgument naming what does not fit otherwise.
Result<void> CheckVhdUri(std::string_view uri, std::string_view vm, std::string_view suffix,
                         std::string_view arm_endpoint);

enum class BlobDelete {
  kDeleted,  // 202: marked for deletion (with its snapshots)
  kGone,     // 404: there was no such blob
  kLeased,   // 409 with a lease error: still attached to a VM; try again later
};

// "Sun, 22 Nov 2026 10:41:56 GMT" (the x-ms-date format).
std::string FormatHttpDate(Time t);

// Sends DELETE <uri> with x-ms-delete-snapshots: include. `tokens` must issue tokens for
// kStorageResource. The token is sent only in the Authorization header and never appears in an
// error. Errors: a 401 drops the cached token (kPermissionDenied); any other status is an error
// with the storage error code (x-ms-error-code) and the status' Error::Code; unreachable:
// kUnavailable. `uri` must have passed CheckVhdUri.
Result<BlobDelete> DeleteBlob(net::HttpClient& http, TokenSource& tokens, const Clock& clock,
                              std::string_view uri, Duration timeout);

}  // namespace tidepool::cloud::azure
