// Where the API server is and how to authenticate to it: kubeconfig files and the in-cluster
// service account, resolved the way kubectl does.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/error.h"
#include "net/http.h"

namespace tidepool::kube {

struct ClientConfig {
  std::string server;  // https://host:port, no trailing slash
  net::TlsOptions tls;
  std::string token;       // bearer token given inline
  std::string token_file;  // bearer token read from this file (re-read when it changes)
  std::string context;     // the kubeconfig context used ("" for in-cluster)
  std::string source;      // for messages: the kubeconfig path or "in-cluster config"
  // The context's namespace, or the service account's for in-cluster; "" when none is set
  // (callers default to "default").
  std::string namespace_;
};

// Reads a kubeconfig file: the context named `context`, or the file's current-context when
// empty. Supports certificate-authority(-data), insecure-skip-tls-verify (only when set true),
// client-certificate(-data)/client-key(-data), token and tokenFile. An `exec` or
// `auth-provider` user is a kInvalidArgument error saying it is not supported yet. Errors name
// the file and the entry (e.g. "kubeconfig /x: context \"dev\": user \"u\" not found").
Result<ClientConfig> LoadKubeconfig(const std::string& path, const std::string& context = "");
Result<ClientConfig> ParseKubeconfig(std::string_view yaml, std::string_view source,
                                     const std::string& context = "");

// The in-cluster config: KUBERNETES_SERVICE_HOST/PORT, the service-account token file (kept
// as token_file so a rotated token is picked up) and CA under `sa_dir`.
Result<ClientConfig> InClusterConfig(
    const std::string& sa_dir = "/var/run/secrets/kubernetes.io/serviceaccount");

// Reads a small regular file (a certificate, key or token; at most 1 MiB). Errors name the
// file: kNotFound when it does not exist, kInvalidArgument when it is not a regular file or is
// too large, kUnavailable when it cannot be read. Also used by ApiClient to re-read token files.
Result<std::string> ReadCredentialFile(const std::string& path);

// Decodes standard base64 (RFC 4648, padding optional, whitespace ignored), as kubeconfig's
// *-data fields hold it. std::nullopt for any other character or a truncated group.
std::optional<std::string> DecodeBase64(std::string_view text);

// kubectl's order: the --kubeconfig flag, else $KUBECONFIG (first existing file of the list),
// else the in-cluster config when KUBERNETES_SERVICE_HOST is set, else ~/.kube/config.
Result<ClientConfig> ResolveClientConfig(const std::string& kubeconfig_flag,
                                         const std::string& context_flag);

}  // namespace tidepool::kube
