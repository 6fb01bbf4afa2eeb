#include "ops/http_server.h"

#include <curl/curl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "tests/ops/exposition_parser.h"

namespace tidepool::ops {
namespace {

struct Response {
  long status = 0;
  std::string content_type;
  std::string body;
  std::string error;
};

size_t Append(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

Response Get(int port, const std::string& path) {
  Response r;
  CURL* curl = curl_easy_init();
  std::string url = "http://127.0.0.1:" + std::to_string(port) + path;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &Append);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &r.body);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, 10L);
  curl_easy_setopt(curl, CURLOPT_NOPROXY, "*");
  CURLcode rc = curl_easy_perform(curl);
  if (rc != CURLE_OK) {
    r.error = curl_easy_strerror(rc);
  } else {
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &r.status);
    char* ct = nullptr;
    curl_easy_getinfo(curl, CURLINFO_CONTENT_TYPE, &ct);
    if (ct != nullptr) r.content_type = ct;
  }
  curl_easy_cleanup(curl);
  return r;
}

TEST(ListenAddressTest, Parses) {
  auto a = ParseListenAddress(":8085");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->host, "");
  EXPECT_EQ(a->port, 8085);
  a = ParseListenAddress("127.0.0.1:0");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 0);
  a = ParseListenAddress("[::1]:9090");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->host, "::1");
  EXPECT_EQ(a->port, 9090);
  for (const char* bad :
       {"8085", "", ":", ":http", ":70000", ":-1", "::1:80", "[::1]80", "[]:80", "host:80x"}) {
    auto r = ParseListenAddress(bad);
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_EQ(r.error().code(), Error::Code::kInvalidArgument);
    EXPECT_NE(r.error().message().find("listen \"" + std::string(bad) + "\""), std::string::npos)
        << r.error().message();
  }
}

class OpsServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { curl_global_init(CURL_GLOBAL_DEFAULT); }
};

TEST_F(OpsServerTest, ServesHealthReadinessMetricsAndStatus) {
  Registry registry;
  Counter* scrapes = registry.AddCounter("test_requests_total", "Requests.", {"path"});
  scrapes->Inc({"a\"b"}, 3);
  std::atomic<bool> ready = false;
  OpsServerOptions o;
  o.listen = "127.0.0.1:0";
  o.registry = &registry;
  o.not_ready_reason = [&]() -> std::optional<std::string> {
    if (ready) return std::nullopt;
    return "informers not synced (pods, nodes)";
  };
  o.status_page = [] { return std::string("<!DOCTYPE html><html><body>status</body></html>"); };
  OpsServer server(o);
  ASSERT_TRUE(server.Start().has_value());
  ASSERT_GT(server.port(), 0);
  EXPECT_TRUE(server.running());

  Response r = Get(server.port(), "/healthz");
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "ok\n");
  EXPECT_TRUE(r.content_type.starts_with("text/plain")) << r.content_type;

  r = Get(server.port(), "/readyz");
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.body, "not ready: informers not synced (pods, nodes)\n");
  ready = true;
  r = Get(server.port(), "/readyz");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "ok\n");

  r = Get(server.port(), "/metrics");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "text/plain; version=0.0.4; charset=utf-8");
  auto parsed = testing::ParseExposition(r.body);
  ASSERT_EQ(parsed.error, "") << r.body;
  EXPECT_EQ(parsed.Value("test_requests_total", {{"path", "a\"b"}}), 3);

  r = Get(server.port(), "/status");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "text/html; charset=utf-8");
  EXPECT_NE(r.body.find("status"), std::string::npos);

  r = Get(server.port(), "/nope");
  EXPECT_EQ(r.status, 404);
  r = Get(server.port(), "/");
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("/metrics"), std::string::npos);

  int port = server.port();
  server.Stop();
  EXPECT_FALSE(server.running());
  EXPECT_NE(Get(port, "/healthz").error, "");  // nothing listens any more
  server.Stop();                               // idempotent
}

TEST_F(OpsServerTest, CallbacksThatThrowGive500) {
  OpsServerOptions o;
  o.listen = "127.0.0.1:0";
  o.not_ready_reason = []() -> std::optional<std::string> { throw std::runtime_error("boom"); };
  OpsServer server(o);
  ASSERT_TRUE(server.Start().has_value());
  Response r = Get(server.port(), "/readyz");
  EXPECT_EQ(r.status, 500);
  EXPECT_NE(r.body.find("boom"), std::string::npos);
  // Unset registry and status page: 404, and the server keeps serving.
  EXPECT_EQ(Get(server.port(), "/metrics").status, 404);
  EXPECT_EQ(Get(server.port(), "/status").status, 404);
  EXPECT_EQ(Get(server.port(), "/healthz").status, 200);
}

TEST_F(OpsServerTest, AddressInUseIsAnErrorNamingTheAddress) {
  // Hold a port with a plain socket, as another process would.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = 0;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof sa;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len), 0);
  int port = ntohs(sa.sin_port);

  OpsServerOptions o;
  o.listen = "127.0.0.1:" + std::to_string(port);
  OpsServer server(o);
  auto started = server.Start();
  ::close(fd);
  ASSERT_FALSE(started.has_value());
  EXPECT_EQ(started.error().message(),
            "listen 127.0.0.1:" + std::to_string(port) + ": address in use");
  EXPECT_EQ(started.error().code(), Error::Code::kUnavailable);
  EXPECT_FALSE(server.running());

  // A second OpsServer on a port the first one holds is refused too (no SO_REUSEPORT sharing).
  OpsServerOptions a;
  a.listen = "127.0.0.1:0";
  OpsServer first(a);
  ASSERT_TRUE(first.Start().has_value());
  OpsServerOptions b;
  b.listen = "127.0.0.1:" + std::to_string(first.port());
  OpsServer second(b);
  auto r = second.Start();
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message().find("address in use"), std::string::npos);
}

TEST_F(OpsServerTest, BadAddressAndDoubleStart) {
  OpsServerOptions o;
  o.listen = "nonsense";
  OpsServer bad(o);
  auto r = bad.Start();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Error::Code::kInvalidArgument);

  o.listen = "127.0.0.1:0";
  OpsServer server(o);
  ASSERT_TRUE(server.Start().has_value());
  auto again = server.Start();
  ASSERT_FALSE(again.has_value());
  EXPECT_EQ(again.error().code(), Error::Code::kInternal);
}

TEST_F(OpsServerTest, StopRightAfterStartDoesNotHang) {
  for (int i = 0; i < 20; ++i) {
    OpsServerOptions o;
    o.listen = "127.0.0.1:0";
    OpsServer server(o);
    ASSERT_TRUE(server.Start().has_value());
    server.Stop();
  }
}

TEST_F(OpsServerTest, ConcurrentScrapes) {
  Registry registry;
  Counter* c = registry.AddCounter("hits_total", "Hits.");
  OpsServerOptions o;
  o.listen = "127.0.0.1:0";
  o.registry = &registry;
  OpsServer server(o);
  ASSERT_TRUE(server.Start().has_value());
  std::vector<std::thread> threads;
  std::atomic<int> ok = 0;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 25; ++i) {
        c->Inc();
        Response r = Get(server.port(), "/metrics");
        if (r.status == 200 && testing::ParseExposition(r.body).error.empty()) ++ok;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok, 100);
  EXPECT_EQ(c->Value(), 100);
}

}  // namespace
}  // namespace tidepool::ops
