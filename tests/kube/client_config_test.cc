#include "kube/client/client_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace tidepool::kube {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// base64 of "CA PEM", "CERT PEM", "KEY PEM".
constexpr std::string_view kCaB64 = "Q0EgUEVN";
constexpr std::string_view kCertB64 = "Q0VSVCBQRU0=";
constexpr std::string_view kKeyB64 = "S0VZIFBFTQ==";

// A directory of its own per test, removed afterwards.
class KubeconfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) /
           (std::string("kubeconfig-") + info->name() + "-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text) {
    fs::path p = dir_ / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p.string();
  }

  std::string ErrorOf(const std::string& yaml, const std::string& context = "") {
    auto r = ParseKubeconfig(yaml, (dir_ / "config").string(), context);
    EXPECT_FALSE(r) << "parsed without error:\n" << yaml;
    if (r) return "";
    EXPECT_EQ(r.error().code(), Error::Code::kInvalidArgument) << r.error().message();
    return r.error().message();
  }

  fs::path dir_;
};

std::string Config(const std::string& cluster, const std::string& user,
                   const std::string& extra = "") {
  return "apiVersion: v1\nkind: Config\ncurrent-context: dev\n"
         "contexts:\n"
         "- name: dev\n  context: {cluster: c1, user: u1, namespace: team-a}\n"
         "- name: prod\n  context: {cluster: c2, user: u2}\n"
         "clusters:\n"
         "- name: c1\n  cluster:\n" +
         cluster +
         "- name: c2\n  cluster:\n    server: https://prod.example:443/\n"
         "    certificate-authority-data: " +
         std::string(kCaB64) +
         "\n"
         "users:\n"
         "- name: u1\n  user:\n" +
         user + "- name: u2\n  user:\n    token: prod-token\n" + extra;
}

TEST_F(KubeconfigTest, CurrentContextWithInlineData) {
  std::string yaml = Config("    server: https://127.0.0.1:6443\n    certificate-authority-data: " +
                                std::string(kCaB64) + "\n",
                            "    client-certificate-data: " + std::string(kCertB64) +
                                "\n    client-key-data: " + std::string(kKeyB64) + "\n");
  auto c = ParseKubeconfig(yaml, "/x/config");
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(c->server, "https://127.0.0.1:6443");
  EXPECT_EQ(c->tls.ca_pem, "CA PEM");
  EXPECT_EQ(c->tls.client_cert_pem, "CERT PEM");
  EXPECT_EQ(c->tls.client_key_pem, "KEY PEM");
  EXPECT_FALSE(c->tls.insecure_skip_verify);
  EXPECT_EQ(c->token, "");
  EXPECT_EQ(c->context, "dev");
  EXPECT_EQ(c->namespace_, "team-a");
  EXPECT_EQ(c->source, "/x/config");
}

TEST_F(KubeconfigTest, ExplicitContextAndTrailingSlash) {
  std::string yaml = Config("    server: https://a:1\n", "    token: t\n");
  auto c = ParseKubeconfig(yaml, "/x/config", "prod");
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(c->server, "https://prod.example:443");
  EXPECT_EQ(c->token, "prod-token");
  EXPECT_EQ(c->context, "prod");
  EXPECT_EQ(c->namespace_, "");
}

TEST_F(KubeconfigTest, FilesAreResolvedAgainstTheKubeconfigDirectory) {
  Write("pki/ca.crt", "CA FROM FILE");
  Write("pki/client.crt", "CERT FROM FILE");
  Write("pki/client.key", "KEY FROM FILE");
  std::string yaml = Config("    server: https://h:1\n    certificate-authority: pki/ca.crt\n",
                            "    client-certificate: pki/client.crt\n"
                            "    client-key: " +
                                (dir_ / "pki/client.key").string() + "\n");
  std::string path = Write("config", yaml);
  auto c = LoadKubeconfig(path);
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(c->tls.ca_pem, "CA FROM FILE");
  EXPECT_EQ(c->tls.client_cert_pem, "CERT FROM FILE");
  EXPECT_EQ(c->tls.client_key_pem, "KEY FROM FILE");
}

TEST_F(KubeconfigTest, TokenFileIsKeptAsAPathAndTokenWins) {
  Write("token", "file-token\n");
  auto c = ParseKubeconfig(Config("    server: https://h:1\n", "    tokenFile: token\n"),
                           (dir_ / "config").string());
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(c->token, "");
  EXPECT_EQ(fs::path(c->token_file), dir_ / "token");

  c = ParseKubeconfig(
      Config("    server: https://h:1\n", "    token: inline\n    tokenFile: token\n"),
      (dir_ / "config").string());
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(c->token, "inline");
  EXPECT_EQ(c->token_file, "");
}

TEST_F(KubeconfigTest, InsecureSkipVerifyOnlyWhenSetTrue) {
  auto c = ParseKubeconfig(
      Config("    server: https://h:1\n    insecure-skip-tls-verify: true\n", "    token: t\n"),
      "k");
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_TRUE(c->tls.insecure_skip_verify);
  c = ParseKubeconfig(
      Config("    server: https://h:1\n    insecure-skip-tls-verify: false\n", "    token: t\n"),
      "k");
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_FALSE(c->tls.insecure_skip_verify);
  EXPECT_THAT(ErrorOf(Config("    server: https://h:1\n    insecure-skip-tls-verify: yes\n",
                             "    token: t\n")),
              HasSubstr("insecure-skip-tls-verify: expected true or false, got \"yes\""));
  EXPECT_THAT(ErrorOf(Config("    server: https://h:1\n    insecure-skip-tls-verify: true\n"
                             "    certificate-authority-data: " +
                                 std::string(kCaB64) + "\n",
                             "    token: t\n")),
              HasSubstr("insecure-skip-tls-verify is set together with a certificate authority"));
}

TEST_F(KubeconfigTest, UserWithoutCredentialsIsAllowed) {
  std::string yaml =
      "current-context: a\ncontexts: [{name: a, context: {cluster: c}}]\n"
      "clusters: [{name: c, cluster: {server: 'http://localhost:8080'}}]\n";
  auto c = ParseKubeconfig(yaml, "k");
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(c->server, "http://localhost:8080");
  EXPECT_EQ(c->token, "");
  EXPECT_EQ(c->tls.client_cert_pem, "");
}

TEST_F(KubeconfigTest, ExecAndAuthProviderAreNotSupportedYet) {
  std::string exec = ErrorOf(Config(
      "    server: https://h:1\n",
      "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: kubelogin\n"));
  EXPECT_THAT(exec, HasSubstr("user \"u1\""));
  EXPECT_THAT(exec,
              HasSubstr("exec credential plugins (command \"kubelogin\") are not supported yet"));
  std::string provider =
      ErrorOf(Config("    server: https://h:1\n", "    auth-provider:\n      name: azure\n"));
  EXPECT_THAT(provider, HasSubstr("auth-provider \"azure\" is not supported yet"));
  // The unused context's user is not looked at.
  EXPECT_TRUE(ParseKubeconfig(Config("    server: https://h:1\n", "    exec: {command: x}\n"), "k",
                              "prod"));
}

TEST_F(KubeconfigTest, ErrorsNameTheFileTheEntryAndWhatWasExpected) {
  std::string source = (dir_ / "config").string();
  std::string yaml = Config("    server: https://h:1\n", "    token: t\n");
  EXPECT_THAT(ErrorOf(yaml, "staging"),
              AllOf(StartsWith("kubeconfig " + source + ": "),
                    HasSubstr("context \"staging\" not found in contexts (defined: dev, prod)")));
  EXPECT_THAT(ErrorOf("current-context: a\ncontexts: [{name: a, context: {cluster: nope, user: "
                      "u}}]\nclusters: []\nusers: [{name: u, user: {token: t}}]\n"),
              HasSubstr("context \"a\": cluster \"nope\" not found in clusters (none defined)"));
  EXPECT_THAT(ErrorOf("current-context: a\ncontexts: [{name: a, context: {cluster: c, user: "
                      "who}}]\nclusters: [{name: c, cluster: {server: 'https://h'}}]\n"),
              HasSubstr("context \"a\": user \"who\" not found in users"));
  EXPECT_THAT(ErrorOf("contexts: []\n"),
              HasSubstr("current-context: not set and no context was given"));
  EXPECT_THAT(ErrorOf(Config("    insecure-skip-tls-verify: true\n", "    token: t\n")),
              HasSubstr("cluster \"c1\": server: expected the API server's URL"));
  EXPECT_THAT(ErrorOf(Config("    server: h:6443\n", "    token: t\n")),
              HasSubstr("server: expected a URL starting with https://, got \"h:6443\""));
  EXPECT_THAT(ErrorOf(Config("    server: https://h:1\n    certificate-authority-data: '!!!'\n",
                             "    token: t\n")),
              HasSubstr("cluster \"c1\": certificate-authority-data: expected base64"));
  EXPECT_THAT(ErrorOf(Config("    server: https://h:1\n    certificate-authority: ca.crt\n"
                             "    certificate-authority-data: " +
                                 std::string(kCaB64) + "\n",
                             "    token: t\n")),
              HasSubstr("certificate-authority and certificate-authority-data are both set"));
  EXPECT_THAT(ErrorOf(Config("    server: https://h:1\n",
                             "    client-certificate-data: " + std::string(kCertB64) + "\n")),
              HasSubstr("user \"u1\": client-certificate is set without client-key"));
  EXPECT_THAT(ErrorOf(Config("    server: [https://h:1]\n", "    token: t\n")),
              HasSubstr("server: expected a string, got a list"));
  EXPECT_THAT(ErrorOf("kind: Pod\n"), HasSubstr("kind: expected \"Config\", got \"Pod\""));
  EXPECT_THAT(ErrorOf("- a\n- b\n"), HasSubstr("expected a map (a kubeconfig), got a list"));
  EXPECT_THAT(ErrorOf(""), HasSubstr("expected a kubeconfig, got an empty file"));
  EXPECT_THAT(ErrorOf("a: [b\n"), HasSubstr("invalid YAML"));
  EXPECT_THAT(ErrorOf("clusters: {a: b}\ncurrent-context: x\ncontexts: [{name: x, context: "
                      "{cluster: a}}]\n"),
              HasSubstr("clusters: expected a list, got a map"));
  EXPECT_THAT(ErrorOf(Config("    server: https://h:1\n    proxy-url: http://proxy:3128\n",
                             "    token: t\n")),
              HasSubstr("proxy-url is not supported yet"));
  EXPECT_THAT(ErrorOf(Config("    server: https://h:1\n", "    username: a\n    password: b\n")),
              HasSubstr("username is not supported yet"));
}

TEST_F(KubeconfigTest, MissingFilesAreNamed) {
  auto r =
      ParseKubeconfig(Config("    server: https://h:1\n    certificate-authority: missing/ca.crt\n",
                             "    token: t\n"),
                      (dir_ / "config").string());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), Error::Code::kNotFound);
  EXPECT_THAT(r.error().message(), HasSubstr("cluster \"c1\": certificate-authority"));
  EXPECT_THAT(r.error().message(), HasSubstr((dir_ / "missing/ca.crt").string()));

  r = ParseKubeconfig(Config("    server: https://h:1\n", "    tokenFile: /nonexistent/token\n"),
                      "k");
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message(), HasSubstr("user \"u1\": tokenFile"));

  r = LoadKubeconfig((dir_ / "nope").string());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), Error::Code::kNotFound);
  EXPECT_THAT(r.error().message(), HasSubstr("nope"));
}

TEST_F(KubeconfigTest, ADirectoryIsNotACredentialFile) {
  fs::create_directories(dir_ / "ca.crt");
  auto r = ParseKubeconfig(
      Config("    server: https://h:1\n    certificate-authority: ca.crt\n", "    token: t\n"),
      (dir_ / "config").string());
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message(), HasSubstr("expected a regular file"));
}

TEST_F(KubeconfigTest, InClusterConfig) {
  Write("sa/token", "sa-token\n");
  Write("sa/ca.crt", "SA CA");
  Write("sa/namespace", "kube-system");
  ::setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
  ::setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  auto c = InClusterConfig((dir_ / "sa").string());
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(c->server, "https://10.96.0.1:443");
  EXPECT_EQ(c->token, "");
  EXPECT_EQ(fs::path(c->token_file), dir_ / "sa/token");
  EXPECT_EQ(c->tls.ca_pem, "SA CA");
  EXPECT_EQ(c->namespace_, "kube-system");
  EXPECT_EQ(c->source, "in-cluster config");

  ::setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
  c = InClusterConfig((dir_ / "sa").string());
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(c->server, "https://[fd00::1]:443");

  auto missing = InClusterConfig((dir_ / "nope").string());
  ASSERT_FALSE(missing);
  EXPECT_THAT(missing.error().message(), HasSubstr("service-account token"));

  ::unsetenv("KUBERNETES_SERVICE_HOST");
  auto no_env = InClusterConfig((dir_ / "sa").string());
  ASSERT_FALSE(no_env);
  EXPECT_THAT(no_env.error().message(), HasSubstr("KUBERNETES_SERVICE_HOST"));
  ::unsetenv("KUBERNETES_SERVICE_PORT");
}

TEST_F(KubeconfigTest, ResolveOrderFlagThenEnvThenHome) {
  std::string flag = Write("flag", Config("    server: https://flag:1\n", "    token: t\n"));
  std::string env = Write("env", Config("    server: https://env:1\n", "    token: t\n"));
  Write("home/.kube/config", Config("    server: https://home:1\n", "    token: t\n"));
  const char* old_home = std::getenv("HOME");
  std::string saved_home = old_home ? old_home : "";
  ::setenv("HOME", (dir_ / "home").c_str(), 1);
  ::unsetenv("KUBERNETES_SERVICE_HOST");

  ::setenv("KUBECONFIG", ((dir_ / "missing").string() + ":" + env).c_str(), 1);
  auto c = ResolveClientConfig(flag, "");
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(c->server, "https://flag:1");
  c = ResolveClientConfig("", "");
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(c->server, "https://env:1");
  ::setenv("KUBECONFIG", (dir_ / "missing").c_str(), 1);
  EXPECT_FALSE(ResolveClientConfig("", ""));
  ::unsetenv("KUBECONFIG");
  c = ResolveClientConfig("", "");
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(c->server, "https://home:1");
  c = ResolveClientConfig("", "prod");
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(c->server, "https://prod.example:443");

  ::setenv("HOME", saved_home.c_str(), 1);
}

TEST(Base64Test, DecodesWithAndWithoutPadding) {
  EXPECT_EQ(DecodeBase64("aGVsbG8="), "hello");
  EXPECT_EQ(DecodeBase64("aGVsbG8"), "hello");
  EXPECT_EQ(DecodeBase64("aGVs\nbG8h"), "hello!");
  EXPECT_EQ(DecodeBase64(""), "");
  EXPECT_EQ(DecodeBase64("+/+/"), std::string("\xfb\xff\xbf"));
  EXPECT_FALSE(DecodeBase64("a"));
  EXPECT_FALSE(DecodeBase64("aGVsbG8=x"));
  EXPECT_FALSE(DecodeBase64("a==="));
  EXPECT_FALSE(DecodeBase64("aGV$"));
  EXPECT_FALSE(DecodeBase64("aGVsbG8=="));  // one '=' too many for 7 characters
}

}  // namespace
}  // namespace tidepool::kube
