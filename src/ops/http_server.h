// OpsServer: the operations HTTP endpoint (--listen, default :8085) serving /healthz, /readyz,
// /metrics and /status on cpp-httplib, so probes, Prometheus and people can see the controller.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "base/error.h"
#include "ops/metrics.h"

namespace tidepool::ops {

inline constexpr std::string_view kDefaultListen = ":8085";

// A parsed --listen value: "[host]:port". An empty host means every IPv4 address (0.0.0.0); an
// IPv6 host is written in brackets ("[::]:8085"). Port 0 picks a free port.
struct ListenAddress {
  std::string host;  // as given, without brackets; "" for all addresses
  int port = 0;
};
// Errors (kInvalidArgument) name the value and what was expected: "listen \"8085\": expected
// [host]:port, such as :8085 or 127.0.0.1:8085".
Result<ListenAddress> ParseListenAddress(std::string_view text);

struct OpsServerOptions {
  std::string listen = std::string(kDefaultListen);
  // /readyz: returns why the process is not ready (informers not synced, provider unreachable),
  // or nullopt when it is. Unset: always ready.
  std::function<std::optional<std::string>()> not_ready_reason;
  // /metrics renders this registry; unset: /metrics answers 404. Borrowed; must outlive the
  // server.
  const Registry* registry = nullptr;
  // /status: the HTML page; unset: /status answers 404.
  std::function<std::string()> status_page;
  int worker_threads = 4;
};

// Serves, on one listening socket:
//   GET /healthz  200 "ok" while the process serves at all (liveness).
//   GET /readyz   200 "ok", or 503 "not ready: <reason>" from not_ready_reason (readiness).
//   GET /metrics  200, Registry::Render() as text/plain; version=0.0.4.
//   GET /status   200, text/html from status_page.
//   GET /         a plain-text index of the above.
// Anything else is 404. A callback that throws yields 500 with the message; nothing escapes.
//
// Thread-safety: Start and Stop are called from one owning thread. The callbacks run on the
// server's worker threads, several at a time, and must be thread-safe. Stop (and the
// destructor) waits for requests in flight to finish.
class OpsServer {
 public:
  explicit OpsServer(OpsServerOptions options);
  ~OpsServer();
  OpsServer(const OpsServer&) = delete;
  OpsServer& operator=(const OpsServer&) = delete;

  // Binds the listen address and starts serving on a background thread. A bind failure is an
  // error naming the address: "listen :8085: address in use" (kUnavailable), "listen
  // 10.1.2.3:80: permission denied", a malformed address is kInvalidArgument. Calling Start on
  // a running server is an error (kInternal).
  Result<void> Start();
  // Stops accepting, finishes requests in flight, joins the thread. Idempotent.
  void Stop();

  bool running() const;
  // The bound port (the chosen one when the address said port 0); 0 before Start.
  int port() const { return port_; }

 private:
  struct Impl;
  OpsServerOptions options_;
  std::unique_ptr<Impl> impl_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace tidepool::ops
