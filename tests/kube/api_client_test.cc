#include "kube/client/api_client.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kube/client/informer.h"

namespace tidepool::kube {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(DecodeWatchLineTest, Types) {
  auto e = DecodeWatchLine(R"({"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"a"}}})");
  ASSERT_TRUE(e) << e.error().message();
  EXPECT_EQ(e->type, WatchEvent::Type::kAdded);
  EXPECT_EQ(e->object["metadata"]["name"], "a");
  EXPECT_EQ(DecodeWatchLine(R"({"type":"MODIFIED","object":{}})")->type,
            WatchEvent::Type::kModified);
  EXPECT_EQ(DecodeWatchLine(R"({"type":"DELETED","object":{}})")->type, WatchEvent::Type::kDeleted);
  EXPECT_EQ(
      DecodeWatchLine(R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"7"}}})")->type,
      WatchEvent::Type::kBookmark);
  auto err = DecodeWatchLine(
      R"js({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"too old resource version: 1 (5)"}})js");
  ASSERT_TRUE(err);
  EXPECT_EQ(err->type, WatchEvent::Type::kError);
  Error mapped = StatusObjectToError("GET", "/api/v1/pods?watch=1", err->object);
  EXPECT_EQ(mapped.code(), Error::Code::kExpired);
  EXPECT_THAT(mapped.message(), HasSubstr("too old resource version"));
  EXPECT_THAT(mapped.message(), HasSubstr("GET /api/v1/pods?watch=1"));
}

TEST(DecodeWatchLineTest, BadInputSaysWhatWasExpected) {
  auto check = [](std::string_view line, std::string_view want) {
    auto e = DecodeWatchLine(line);
    ASSERT_FALSE(e) << line;
    EXPECT_EQ(e.error().code(), Error::Code::kInvalidArgument);
    EXPECT_THAT(e.error().message(), HasSubstr(want)) << line;
  };
  check("{", "expected a JSON object, got invalid JSON");
  check("[1]", "expected a JSON object, got a array");
  check(R"({"object":{}})", "type: expected a string");
  check(R"({"type":"CHANGED","object":{}})",
        "expected ADDED, MODIFIED, DELETED, BOOKMARK or ERROR, got \"CHANGED\"");
  check(R"({"type":"ADDED"})", "object: expected a JSON object, got nothing");
  check(R"({"type":"ADDED","object":"x"})", "object: expected a JSON object, got string");
  check("1e99999", "invalid JSON");
}

std::vector<std::string> Split(const std::vector<std::string>& chunks, LineSplitter& s,
                               int stop_after = -1) {
  std::vector<std::string> lines;
  for (const auto& c : chunks) {
    bool go = s.Feed(c, [&](std::string_view line) {
      lines.emplace_back(line);
      return stop_after < 0 || static_cast<int>(lines.size()) < stop_after;
    });
    if (!go) break;
  }
  return lines;
}

TEST(LineSplitterTest, JoinsPiecesAndSkipsEmptyLines) {
  LineSplitter s;
  EXPECT_THAT(Split({"ab", "c\nde", "f\r\n\n\ngh\n", "i"}, s), ElementsAre("abc", "def", "gh"));
  EXPECT_EQ(s.pending(), 1u);
  LineSplitter one;
  EXPECT_THAT(Split({"x\ny\nz\n"}, one, 2), ElementsAre("x", "y"));
  LineSplitter bytes;
  std::vector<std::string> chunks;
  for (char c : std::string("one\ntwo\n")) chunks.emplace_back(1, c);
  EXPECT_THAT(Split(chunks, bytes), ElementsAre("one", "two"));
  EXPECT_EQ(bytes.pending(), 0u);
}

TEST(LineSplitterTest, OverlongLineStops) {
  LineSplitter s;
  std::string big(1 << 20, 'x');
  bool ok = true;
  size_t fed = 0;
  while (ok && fed <= LineSplitter::kMaxLine) {
    ok = s.Feed(big, [](std::string_view) { return true; });
    fed += big.size();
  }
  EXPECT_FALSE(ok);
  EXPECT_TRUE(s.overflowed());
  EXPECT_EQ(s.pending(), 0u);
}

TEST(StatusToErrorTest, MapsCodes) {
  struct Case {
    int status;
    Error::Code code;
  } cases[] = {{400, Error::Code::kInvalidArgument},  {422, Error::Code::kInvalidArgument},
               {401, Error::Code::kPermissionDenied}, {403, Error::Code::kPermissionDenied},
               {404, Error::Code::kNotFound},         {409, Error::Code::kConflict},
               {412, Error::Code::kConflict},         {410, Error::Code::kExpired},
               {429, Error::Code::kThrottled},        {500, Error::Code::kUnavailable},
               {503, Error::Code::kUnavailable},      {504, Error::Code::kUnavailable}};
  for (const auto& c : cases) {
    EXPECT_EQ(StatusToError("GET", "/x", c.status, "").code(), c.code) << c.status;
  }
}

TEST(StatusToErrorTest, MessageHasMethodPathAndServerMessage) {
  Error e = StatusToError(
      "PATCH", "/api/v1/nodes/n1", 409,
      R"({"kind":"Status","status":"Failure","message":"Operation cannot be fulfilled on nodes \"n1\": the object has been modified","reason":"Conflict","code":409})");
  EXPECT_EQ(e.message(),
            "PATCH /api/v1/nodes/n1: 409 Conflict: Operation cannot be fulfilled on nodes \"n1\": "
            "the object has been modified");
  Error throttled = StatusToError(
      "POST", "/api/v1/namespaces/a/pods/p/eviction", 429,
      R"({"kind":"Status","message":"Cannot evict pod as it would violate the pod's disruption budget."})",
      "10");
  EXPECT_EQ(throttled.code(), Error::Code::kThrottled);
  EXPECT_THAT(throttled.message(), HasSubstr("would violate the pod's disruption budget"));
  EXPECT_THAT(throttled.message(), HasSubstr("(Retry-After: 10s)"));
  Error html = StatusToError("GET", "/x", 502, "<html>\n<b>bad gateway</b></html>");
  EXPECT_EQ(html.message(), "GET /x: 502 Bad Gateway: <html> <b>bad gateway</b></html>");
}

TEST(PathsTest, CollectionAndObject) {
  EXPECT_EQ(CollectionPath("v1", "pods"), "/api/v1/pods");
  EXPECT_EQ(CollectionPath("v1", "configmaps", "kube-system"),
            "/api/v1/namespaces/kube-system/configmaps");
  EXPECT_EQ(CollectionPath("policy/v1", "poddisruptionbudgets"),
            "/apis/policy/v1/poddisruptionbudgets");
  EXPECT_EQ(ObjectPath("coordination.k8s.io/v1", "leases", "ns", "tidepool"),
            "/apis/coordination.k8s.io/v1/namespaces/ns/leases/tidepool");
  EXPECT_EQ(ObjectPath("v1", "nodes", "", "a b"), "/api/v1/nodes/a%20b");
  EXPECT_EQ(PatchContentType(PatchType::kMerge), "application/merge-patch+json");
  EXPECT_EQ(PatchContentType(PatchType::kStrategicMerge), "application/strategic-merge-patch+json");
  EXPECT_EQ(PatchContentType(PatchType::kJson), "application/json-patch+json");
}

// A plain-HTTP fake API server on 127.0.0.1 for what testenv cannot easily show: token file
// rotation, a server echoing credentials, chunk boundaries in watch streams, cancellation.
class FakeServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    port_ = server_.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    dir_ = fs::path(::testing::TempDir()) / ("api-client-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    stop_streams_ = true;
    server_.stop();
    thread_.join();
    fs::remove_all(dir_);
  }
  ClientConfig Config() const {
    ClientConfig c;
    c.server = "http://127.0.0.1:" + std::to_string(port_);
    return c;
  }
  std::vector<std::string> Authorizations() {
    std::lock_guard lock(mu_);
    return authorizations_;
  }
  void Record(const httplib::Request& req) {
    std::lock_guard lock(mu_);
    authorizations_.push_back(req.get_header_value("Authorization"));
  }

  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  fs::path dir_;
  std::mutex mu_;
  std::vector<std::string> authorizations_;
  std::atomic<bool> stop_streams_{false};
};

TEST_F(FakeServerTest, TokenFileIsReReadWhenItChanges) {
  server_.Get("/api/v1/nodes/n", [this](const httplib::Request& req, httplib::Response& res) {
    Record(req);
    res.set_content(R"({"kind":"Node","metadata":{"name":"n"}})", "application/json");
  });
  fs::path token = dir_ / "token";
  std::ofstream(token) << "first-token\n";
  ClientConfig c = Config();
  c.token_file = token.string();
  ApiClient client(c);
  ASSERT_TRUE(client.Get("/api/v1/nodes/n"));
  ASSERT_TRUE(client.Get("/api/v1/nodes/n"));
  std::ofstream(token) << "second-token\n";
  fs::last_write_time(token, fs::last_write_time(token) + std::chrono::seconds(5));
  auto node = client.Get("/api/v1/nodes/n");
  ASSERT_TRUE(node) << node.error().message();
  EXPECT_EQ((*node)["metadata"]["name"], "n");
  EXPECT_THAT(Authorizations(),
              ElementsAre("Bearer first-token", "Bearer first-token", "Bearer second-token"));
}

TEST_F(FakeServerTest, TokenNeverAppearsInErrors) {
  server_.Get("/api/v1/pods", [this](const httplib::Request& req, httplib::Response& res) {
    Record(req);
    res.status = 401;
    res.set_content(R"({"kind":"Status","code":401,"message":"bad credentials: )" +
                        req.get_header_value("Authorization") + "\"}",
                    "application/json");
  });
  ClientConfig c = Config();
  c.token = "s3cr3t-t0ken-value";
  ApiClient client(c);
  auto r = client.List("/api/v1/pods", 10);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), Error::Code::kPermissionDenied);
  EXPECT_THAT(r.error().message(), HasSubstr("GET /api/v1/pods?limit=10: 401 Unauthorized"));
  EXPECT_THAT(r.error().message(), Not(HasSubstr("s3cr3t-t0ken-value")));
  EXPECT_THAT(Authorizations(), ElementsAre("Bearer s3cr3t-t0ken-value"));
}

TEST_F(FakeServerTest, ThrottledCarriesRetryAfter) {
  server_.Post(
      "/api/v1/namespaces/ns/pods/p/eviction", [](const httplib::Request&, httplib::Response& res) {
        res.status = 429;
        res.set_header("Retry-After", "7");
        res.set_content(R"({"kind":"Status","message":"would violate PDB"})", "application/json");
      });
  ApiClient client(Config());
  auto r = client.Evict("ns", "p");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), Error::Code::kThrottled);
  EXPECT_THAT(r.error().message(), HasSubstr("would violate PDB (Retry-After: 7s)"));
}

TEST_F(FakeServerTest, WatchHandlesSplitLinesAndEndsWithExpired) {
  server_.Get("/api/v1/pods", [](const httplib::Request& req, httplib::Response& res) {
    EXPECT_EQ(req.get_param_value("watch"), "1");
    EXPECT_EQ(req.get_param_value("allowWatchBookmarks"), "true");
    EXPECT_EQ(req.get_param_value("resourceVersion"), "41");
    EXPECT_EQ(req.get_param_value("timeoutSeconds"), "30");
    res.set_chunked_content_provider("application/json", [](size_t, httplib::DataSink& sink) {
      std::string events =
          R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"42"}}})"
          "\n"
          R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"50"}}})"
          "\n"
          R"({"type":"ERROR","object":{"kind":"Status","code":410,"message":"too old"}})"
          "\n";
      for (size_t i = 0; i < events.size(); i += 7) {  // cut through lines
        sink.write(events.data() + i, std::min<size_t>(7, events.size() - i));
      }
      sink.done();
      return true;
    });
  });
  ApiClient client(Config());
  std::vector<std::string> seen;
  auto r = client.Watch(
      "/api/v1/pods", "41",
      [&](const WatchEvent& e) {
        seen.push_back(e.object["metadata"]["resourceVersion"].get<std::string>());
        return true;
      },
      nullptr, std::chrono::seconds(30));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), Error::Code::kExpired);
  EXPECT_THAT(seen, ElementsAre("42", "50"));
}

TEST_F(FakeServerTest, WatchHttp410IsExpired) {
  server_.Get("/api/v1/nodes", [](const httplib::Request&, httplib::Response& res) {
    res.status = 410;
    res.set_content(R"({"kind":"Status","code":410,"message":"gone"})", "application/json");
  });
  ApiClient client(Config());
  auto r = client.Watch(
      "/api/v1/nodes", "1", [](const WatchEvent&) { return true; }, nullptr);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), Error::Code::kExpired);
}

TEST_F(FakeServerTest, WatchStopsOnCancelAndWhenTheCallbackSaysSo) {
  server_.Get("/api/v1/pods", [this](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider("application/json", [this](size_t, httplib::DataSink& sink) {
      std::string line = R"({"type":"ADDED","object":{"metadata":{"name":"a"}}})"
                         "\n";
      while (!stop_streams_ && sink.is_writable()) {
        if (!sink.write(line.data(), line.size())) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      sink.done();
      return true;
    });
  });
  ApiClient client(Config());
  int count = 0;
  auto r = client.Watch(
      "/api/v1/pods", "", [&](const WatchEvent&) { return ++count < 3; }, nullptr);
  EXPECT_TRUE(r) << r.error().message();
  EXPECT_EQ(count, 3);

  std::atomic<bool> cancel{false};
  std::atomic<int> events{0};
  std::thread canceller([&] {
    while (events.load() < 2) std::this_thread::yield();
    cancel = true;
  });
  r = client.Watch(
      "/api/v1/pods", "",
      [&](const WatchEvent&) {
        ++events;
        return true;
      },
      &cancel);
  canceller.join();
  EXPECT_TRUE(r) << r.error().message();
  EXPECT_GE(events.load(), 2);
}

// What a kube-apiserver without watch cache sends to a watch that starts right at etcd's
// compacted revision when the event there is a DELETE: the object's previous version is gone.
constexpr const char* kPrevKvNil =
    R"js({"type":"ERROR","object":{"kind":"Status","status":"Failure","reason":"InternalError",)js"
    R"js("code":500,"message":"Internal error occurred: etcd event received with PrevKv=nil )js"
    R"js((key=\"/registry/configmaps/ns/old\", modRevision=11, type=DELETE)"}})js"
    "\n";

TEST_F(FakeServerTest, WatchSaysWhetherAnErrorEventEndedIt) {
  server_.Get("/api/v1/configmaps", [](const httplib::Request& req, httplib::Response& res) {
    if (req.get_param_value("resourceVersion") == "10") {
      res.set_content(kPrevKvNil, "application/json");
    } else if (req.get_param_value("resourceVersion") == "11") {
      res.status = 500;
      res.set_content(R"({"kind":"Status","code":500,"message":"boom"})", "application/json");
    } else {
      res.set_content("not a watch event\n", "application/json");
    }
  });
  ApiClient client(Config());
  auto no_events = [](const WatchEvent&) { return true; };
  bool error_event = false;
  auto r = client.Watch("/api/v1/configmaps", "10", no_events, nullptr, std::chrono::seconds(5),
                        &error_event);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), Error::Code::kUnavailable);
  EXPECT_THAT(r.error().message(), HasSubstr("PrevKv=nil"));
  EXPECT_TRUE(error_event);
  // An HTTP error or a line that is not an event did not come in an ERROR event.
  r = client.Watch("/api/v1/configmaps", "11", no_events, nullptr, std::chrono::seconds(5),
                   &error_event);
  ASSERT_FALSE(r);
  EXPECT_FALSE(error_event);
  error_event = true;
  r = client.Watch("/api/v1/configmaps", "12", no_events, nullptr, std::chrono::seconds(5),
                   &error_event);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), Error::Code::kInvalidArgument);
  EXPECT_FALSE(error_event);
}

// The server fails every watch from the informer's resourceVersion with the same ERROR event
// (not 410): resuming from there would fail forever on a cache that never changes again. The
// informer relists, and its cache shows what changed meanwhile. The relist marks only what
// changed (SetMarker), and an object whose resourceVersion did not change stays the one handed
// out before.
TEST_F(FakeServerTest, InformerRelistsWhenAnErrorEventEndsItsWatch) {
  std::atomic<int> lists{0};
  std::atomic<int> watches_from_10{0};
  server_.Get("/api/v1/configmaps", [&](const httplib::Request& req, httplib::Response& res) {
    if (req.get_param_value("watch") != "1") {
      bool first = ++lists == 1;
      std::string rv = first ? "10" : "20";
      res.set_content(fmt::format(R"({{"kind":"ConfigMapList","metadata":{{"resourceVersion":)"
                                  R"("{}"}},"items":[{{"metadata":{{"name":"{}",)"
                                  R"("namespace":"ns","resourceVersion":"{}"}}}},)"
                                  R"({{"metadata":{{"name":"same","namespace":"ns",)"
                                  R"("resourceVersion":"5"}}}}]}})",
                                  rv, first ? "old" : "new", rv),
                      "application/json");
      return;
    }
    if (req.get_param_value("resourceVersion") == "10") {
      ++watches_from_10;
      res.set_content(kPrevKvNil, "application/json");
      return;
    }
    res.set_content("", "application/json");  // from 20: nothing new, the stream just ends
  });
  ApiClient client(Config());
  InformerOptions options;
  options.collection = "/api/v1/configmaps";
  options.name = "configmaps";
  options.backoff_initial = std::chrono::milliseconds(10);
  options.backoff_max = std::chrono::milliseconds(50);
  RawInformer informer(client, options,
                       [](const nlohmann::json& j) -> Result<nlohmann::json> { return j; });
  std::mutex mu;
  std::vector<std::string> marked;
  informer.SetMarker([&](const std::string& key) {
    std::lock_guard lock(mu);
    marked.push_back(key);
  });
  std::shared_ptr<const nlohmann::json> same_first;  // set on the informer's thread, then read
  informer.SetChangeCallback([&](ChangeType type, const std::string& key) {
    if (key == "ns/same" && type == ChangeType::kAdded) same_first = informer.Get(key);
  });
  informer.Start();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (informer.Get("ns/new") == nullptr && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  informer.Stop();
  EXPECT_NE(informer.Get("ns/new"), nullptr)
      << "never relisted after " << watches_from_10.load() << " watches from resourceVersion 10";
  EXPECT_EQ(informer.Get("ns/old"), nullptr);
  EXPECT_EQ(informer.Stats().relists, 1u);
  EXPECT_EQ(informer.Stats().reconnects, 0u);
  EXPECT_EQ(watches_from_10.load(), 1);
  EXPECT_EQ(informer.ResourceVersion(), "20");
  ASSERT_NE(same_first, nullptr);
  EXPECT_EQ(informer.Get("ns/same"), same_first);
  std::lock_guard lock(mu);
  EXPECT_EQ(marked, (std::vector<std::string>{"ns/old", "ns/same", "ns/new", "ns/old"}));
}

TEST_F(FakeServerTest, ListAllFollowsContinue) {
  server_.Get("/api/v1/pods", [](const httplib::Request& req, httplib::Response& res) {
    EXPECT_EQ(req.get_param_value("limit"), "2");
    std::string cont = req.get_param_value("continue");
    if (cont.empty()) {
      res.set_content(
          R"({"metadata":{"resourceVersion":"10","continue":"c/1+"},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]})",
          "application/json");
    } else {
      EXPECT_EQ(cont, "c/1+");  // sent URL-encoded, decoded by the server
      res.set_content(
          R"({"metadata":{"resourceVersion":"11"},"items":[{"metadata":{"name":"c"}}]})",
          "application/json");
    }
  });
  ApiClient client(Config());
  auto all = client.ListAll("/api/v1/pods", 2);
  ASSERT_TRUE(all) << all.error().message();
  ASSERT_EQ(all->items.size(), 3u);
  EXPECT_EQ(all->items[2]["metadata"]["name"], "c");
  EXPECT_EQ(all->resource_version, "10");
  EXPECT_EQ(all->continue_token, "");
}

// A request that hangs gives up at its own timeout, not the client's (30 s here), and a later
// request on the same client goes on as usual.
TEST_F(FakeServerTest, ARequestsOwnTimeoutBoundsIt) {
  server_.Put("/apis/coordination.k8s.io/v1/namespaces/ns/leases/l",
              [this](const httplib::Request&, httplib::Response& res) {
                for (int i = 0; i < 100 && !stop_streams_; ++i)
                  std::this_thread::sleep_for(std::chrono::milliseconds(100));
                res.set_content("{}", "application/json");
              });
  server_.Get("/apis/coordination.k8s.io/v1/namespaces/ns/leases/l",
              [](const httplib::Request&, httplib::Response& res) {
                res.set_content(R"({"kind":"Lease"})", "application/json");
              });
  ApiClient client(Config());
  const std::string path = "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l";
  auto put = client.Update(path, nlohmann::json{{"kind", "Lease"}}, std::chrono::milliseconds(300));
  ASSERT_FALSE(put);  // the handler answers after 10 s
  EXPECT_EQ(put.error().code(), Error::Code::kUnavailable);
  auto got = client.Get(path, std::chrono::seconds(5));
  ASSERT_TRUE(got) << got.error().message();
  EXPECT_EQ((*got)["kind"], "Lease");
  stop_streams_ = true;
}

TEST_F(FakeServerTest, UnreachableServerIsUnavailable) {
  ClientConfig c;
  c.server = "http://127.0.0.1:1";
  ApiClient client(c, std::chrono::seconds(2));
  auto r = client.Get("/api/v1/nodes");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), Error::Code::kUnavailable);
  EXPECT_THAT(r.error().message(), HasSubstr("GET http://127.0.0.1:1/api/v1/nodes"));
}

}  // namespace
}  // namespace tidepool::kube

namespace tidepool::kube {
namespace {

TEST(ResourceOfPathTest, NamesTheResourceAndSubresource) {
  EXPECT_EQ(ResourceOfPath("/api/v1/pods"), "pods");
  EXPECT_EQ(ResourceOfPath("/api/v1/nodes/n1"), "nodes");
  EXPECT_EQ(ResourceOfPath("/api/v1/namespaces/default/pods/p1/eviction"), "pods/eviction");
  EXPECT_EQ(ResourceOfPath("/apis/apps/v1/daemonsets?limit=5&continue=x"), "daemonsets");
  EXPECT_EQ(ResourceOfPath("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/tp"),
            "leases");
  EXPECT_EQ(ResourceOfPath("/api/v1/namespaces/default"), "namespaces");
  EXPECT_EQ(ResourceOfPath("/version"), "");
}

}  // namespace
}  // namespace tidepool::kube
