#include "ops/http_server.h"

#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <exception>
#include <utility>

namespace tidepool::ops {
namespace {

constexpr std::string_view kExpected = "expected [host]:port, such as :8085 or 127.0.0.1:8085";

// Runs a handler, turning any exception into a 500 so nothing escapes into httplib's threads.
template <typename F>
void Guard(httplib::Response& res, F&& body) {
  try {
    body();
  } catch (const std::exception& e) {
    res.status = 500;
    res.set_content(std::string("internal error: ") + e.what() + "\n", "text/plain; charset=utf-8");
  } catch (...) {
    res.status = 500;
    res.set_content("internal error\n", "text/plain; charset=utf-8");
  }
}

std::string BindErrorText(int err) {
  switch (err) {
    case EADDRINUSE:
      return "address in use";
    case EACCES:
      return "permission denied";
    case EADDRNOTAVAIL:
      return "address not available on this machine";
    case 0:
      return "cannot bind (unknown host or no usable address)";
    default:
      return std::strerror(err);
  }
}

}  // namespace

Result<ListenAddress> ParseListenAddress(std::string_view text) {
  auto fail = [&]() { return InvalidArgument("listen \"{}\": {}", text, kExpected); };
  ListenAddress a;
  std::string_view port_text;
  if (text.starts_with('[')) {
    size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return fail();
    }
    a.host = std::string(text.substr(1, close - 1));
    if (a.host.empty()) return fail();
    port_text = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) return fail();
    a.host = std::string(text.substr(0, colon));
    if (a.host.find(':') != std::string::npos) return fail();  // bare IPv6 needs brackets
    port_text = text.substr(colon + 1);
  }
  int port = -1;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc() || end != port_text.data() + port_text.size() ||
      port < 0 || port > 65535) {
    return InvalidArgument("listen \"{}\": port \"{}\" is not a number from 0 to 65535", text,
                           port_text);
  }
  a.port = port;
  return a;
}

namespace {

// Worker threads, socket options, timeouts and the request size limit.
void Configure(httplib::Server& svr, int worker_threads, bool ipv6) {
  int threads = worker_threads > 0 ? worker_threads : 1;
  svr.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  // SO_REUSEADDR only: a restart may rebind a port in TIME_WAIT, but a second live listener on
  // the same port is refused (httplib's default would add SO_REUSEPORT and silently share it).
  svr.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  if (ipv6) svr.set_address_family(AF_INET6);
  svr.set_read_timeout(std::chrono::seconds(10));
  svr.set_write_timeout(std::chrono::seconds(10));
  svr.set_payload_max_length(64 * 1024);
}

// /readyz, /metrics and /status: answered from the options, which outlive the server.
void AddStateRoutes(httplib::Server& svr, const OpsServerOptions& o) {
  svr.Get("/readyz", [&o](const httplib::Request&, httplib::Response& res) {
    Guard(res, [&] {
      std::optional<std::string> why;
      if (o.not_ready_reason) why = o.not_ready_reason();
      if (why) {
        res.status = 503;
        res.set_content("not ready: " + *why + "\n", "text/plain; charset=utf-8");
      } else {
        res.set_content("ok\n", "text/plain; charset=utf-8");
      }
    });
  });
  svr.Get("/metrics", [&o](const httplib::Request&, httplib::Response& res) {
    Guard(res, [&] {
      if (o.registry == nullptr) {
        res.status = 404;
        res.set_content("no metrics registry\n", "text/plain; charset=utf-8");
        return;
      }
      res.set_content(o.registry->Render(), std::string(kExpositionContentType).c_str());
    });
  });
  svr.Get("/status", [&o](const httplib::Request&, httplib::Response& res) {
    Guard(res, [&] {
      if (!o.status_page) {
        res.status = 404;
        res.set_content("no status page\n", "text/plain; charset=utf-8");
        return;
      }
      res.set_content(o.status_page(), "text/html; charset=utf-8");
    });
  });
}

// Every route, in the order they were always registered, and the error handler.
void AddRoutes(httplib::Server& svr, const OpsServerOptions& o) {
  svr.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain; charset=utf-8");
  });
  AddStateRoutes(svr, o);
  svr.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(
        "tidepool\n\n/healthz  liveness\n/readyz   readiness\n/metrics  Prometheus metrics\n"
        "/status   status page (HTML)\n",
        "text/plain; charset=utf-8");
  });
  svr.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.body.empty()) {
      res.set_content(res.status == 404 ? "not found\n" : "error\n", "text/plain; charset=utf-8");
    }
  });
}

// Binds to `addr` (port 0: any free port). Returns the port, or why it cannot listen there.
Result<int> Bind(httplib::Server& svr, const ListenAddress& addr, const std::string& listen) {
  std::string host = addr.host.empty() ? "0.0.0.0" : addr.host;
  errno = 0;
  int port = addr.port;
  bool bound;
  if (addr.port == 0) {
    port = svr.bind_to_any_port(host);
    bound = port > 0;
  } else {
    bound = svr.bind_to_port(host, addr.port);
  }
  if (!bound) {
    int err = errno;
    Error::Code code =
        err == EINVAL || err == 0 ? Error::Code::kInvalidArgument : Error::Code::kUnavailable;
    if (err == EACCES) code = Error::Code::kPermissionDenied;
    return Fail(code, "listen {}: {}", listen, BindErrorText(err));
  }
  return port;
}

}  // namespace

struct OpsServer::Impl {
  httplib::Server server;
};

OpsServer::OpsServer(OpsServerOptions options) : options_(std::move(options)) {}

OpsServer::~OpsServer() { Stop(); }

bool OpsServer::running() const { return impl_ != nullptr && impl_->server.is_running(); }

Result<void> OpsServer::Start() {
  if (impl_ != nullptr) return Fail(Error::Code::kInternal, "ops server: already started");
  TIDEPOOL_ASSIGN_OR_RETURN(ListenAddress addr, ParseListenAddress(options_.listen));

  auto impl = std::make_unique<Impl>();
  httplib::Server& svr = impl->server;
  Configure(svr, options_.worker_threads, addr.host.find(':') != std::string::npos);
  AddRoutes(svr, options_);
  TIDEPOOL_ASSIGN_OR_RETURN(int port, Bind(svr, addr, options_.listen));
  port_ = port;
  impl_ = std::move(impl);
  httplib::Server* server = &impl_->server;
  thread_ = std::thread([server] { server->listen_after_bind(); });
  // httplib's stop() is a no-op until the accept loop has started; wait for it so that a Stop
  // right after Start cannot leave the thread accepting forever.
  for (int i = 0; i < 5000 && !server->is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return {};
}

void OpsServer::Stop() {
  if (impl_ == nullptr) return;
  impl_->server.stop();
  if (thread_.joinable()) thread_.join();
  impl_.reset();
  port_ = 0;
}

}  // namespace tidepool::ops
