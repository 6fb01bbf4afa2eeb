// Fuzz target for kube/client's ParseKubeconfig (kubeconfig YAML: contexts, clusters, users,
// base64 *-data fields, file references). Besides not crashing: every error is prefixed
// "kubeconfig fuzz: " and none comes from the last-resort catch of a non-YAML exception ("cannot
// read: ..."); a parsed config has an http(s) server URL without a trailing slash, never both
// insecure-skip-tls-verify and a CA, and a client certificate exactly when it has a key.
// File references resolve against the working directory; reading one is harmless (at most 1 MiB,
// regular files only).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "kube/client/client_config.h"

using tidepool::Error;
using tidepool::fuzz::Printable;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto config = tidepool::kube::ParseKubeconfig(text, "fuzz");
  if (!config) {
    const std::string& m = config.error().message();
    FUZZ_EXPECT(m.starts_with("kubeconfig fuzz: "),
                "error is not prefixed with the source: " + Printable(m));
    FUZZ_EXPECT(!m.starts_with("kubeconfig fuzz: cannot read: "),
                "an exception escaped to the last-resort catch: " + Printable(m));
    FUZZ_EXPECT(config.error().code() != Error::Code::kInternal, "internal error: " + Printable(m));
    return 0;
  }
  const auto& c = *config;
  FUZZ_EXPECT(c.server.starts_with("https://") || c.server.starts_with("http://"),
              "server without a scheme: " + Printable(c.server));
  FUZZ_EXPECT(!c.server.ends_with("/"), "server with a trailing slash: " + Printable(c.server));
  FUZZ_EXPECT(!(c.tls.insecure_skip_verify && !c.tls.ca_pem.empty()),
              "insecure-skip-tls-verify together with a CA");
  FUZZ_EXPECT(c.tls.client_cert_pem.empty() == c.tls.client_key_pem.empty(),
              "a client certificate without a key, or a key without a certificate");
  FUZZ_EXPECT(!c.context.empty(), "no context name");
  return 0;
}
