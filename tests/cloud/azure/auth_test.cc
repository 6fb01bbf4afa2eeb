// Azure AD auth: client secret, workload identity, managed identity, token caching, and secrets
// kept out of errors, logs and URLs.
#include "cloud/azure/auth.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cloud/azure/settings.h"
#include "net/http.h"
#include "tests/cloud/azure/azure_fixture.h"

namespace tidepool::testing::azure {
namespace {

using cloud::azure::AuthConfig;
using cloud::azure::AuthType;
using ::testing::HasSubstr;
using ::testing::Not;

class AzureAuthTest : public AzureTestBase {
 protected:
  AuthConfig SecretConfig() {
    AuthConfig a;
    a.type = AuthType::kClientSecret;
    a.tenant_id = fake_->options().tenant;
    a.client_id = fake_->options().client_id;
    a.client_secret.env = "AZURE_CLIENT_SECRET";
    a.authority_host = fake_->endpoint();
    return a;
  }
  cloud::azure::EnvLookup Env() { return ProviderOptions().env; }

  std::string TempFile(const std::string& content) {
    std::string path =
        std::filesystem::temp_directory_path() /
        ("tidepool-azure-" + std::to_string(::getpid()) + "-" + std::to_string(files_++));
    std::ofstream(path) << content;
    paths_.push_back(path);
    return path;
  }
  void TearDown() override {
    for (const auto& p : paths_) std::remove(p.c_str());
  }

  net::HttpClient http_;
  int files_ = 0;
  std::vector<std::string> paths_;
};

TEST_F(AzureAuthTest, ClientSecretTokenIsCachedUntilFiveMinutesBeforeExpiry) {
  auto src = cloud::azure::MakeTokenSource(SecretConfig(), &http_, &clock_, Env());
  ASSERT_TRUE(src.has_value()) << src.error().message();
  auto t1 = (*src)->Token();
  ASSERT_TRUE(t1.has_value()) << t1.error().message();
  auto t2 = (*src)->Token();
  ASSERT_TRUE(t2.has_value());
  EXPECT_EQ(*t1, *t2);
  EXPECT_EQ(fake_->token_requests(), 1);

  clock_.Advance(std::chrono::minutes(54) + std::chrono::seconds(59));  // 5m01s left
  ASSERT_TRUE((*src)->Token().has_value());
  EXPECT_EQ(fake_->token_requests(), 1);

  clock_.Advance(std::chrono::seconds(2));  // 4m59s left: fetch again
  auto t3 = (*src)->Token();
  ASSERT_TRUE(t3.has_value());
  EXPECT_NE(*t3, *t1);
  EXPECT_EQ(fake_->token_requests(), 2);
  EXPECT_EQ((*src)->fetches(), 2);

  // The request was a client_credentials grant for ARM's scope, secret in the body only.
  auto reqs = fake_->requests();
  ASSERT_FALSE(reqs.empty());
  EXPECT_EQ(reqs[0].path, "/" + fake_->options().tenant + "/oauth2/v2.0/token");
  EXPECT_THAT(reqs[0].body, HasSubstr("grant_type=client_credentials"));
  EXPECT_THAT(reqs[0].body, HasSubstr("scope=https%3A%2F%2Fmanagement.azure.com%2F.default"));
}

TEST_F(AzureAuthTest, ClientSecretFromFileIsReReadAtEveryFetch) {
  std::string file = TempFile(fake_->options().client_secret + "\n");
  AuthConfig a = SecretConfig();
  a.client_secret = {.file = file};
  auto src = cloud::azure::MakeTokenSource(a, &http_, &clock_, Env());
  ASSERT_TRUE(src.has_value());
  ASSERT_TRUE((*src)->Token().has_value());
  std::ofstream(file) << "rotated-but-wrong";
  (*src)->Invalidate();
  auto t = (*src)->Token();
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error().code(), Error::Code::kPermissionDenied);
  EXPECT_THAT(t.error().message(), HasSubstr("AADSTS7000215"));
  EXPECT_THAT(t.error().message(), Not(HasSubstr("rotated-but-wrong")));
}

TEST_F(AzureAuthTest, WorkloadIdentityUsesTheFederatedTokenFileFromTheEnvironment) {
  std::string file = TempFile(fake_->options().federated_token);
  env_["AZURE_FEDERATED_TOKEN_FILE"] = file;
  env_["AZURE_TENANT_ID"] = fake_->options().tenant;
  env_["AZURE_CLIENT_ID"] = fake_->options().client_id;
  env_["AZURE_AUTHORITY_HOST"] = fake_->endpoint();
  model::ProviderConfig pc;
  pc.type = "azure-vmss";
  pc.settings = {{"subscriptionId", "s"},
                 {"resourceGroup", "rg"},
                 {"auth.type", "workloadIdentity"},
                 {"scaleSets.cpu", "vmss-cpu"}};
  auto settings = cloud::azure::ParseAzureSettings(pc, {MakePool("cpu", 3)}, Env());
  ASSERT_TRUE(settings.has_value()) << settings.error().message();
  EXPECT_EQ(settings->auth.token_file, file);
  auto src = cloud::azure::MakeTokenSource(settings->auth, &http_, &clock_, Env());
  ASSERT_TRUE(src.has_value());
  auto t = (*src)->Token();
  ASSERT_TRUE(t.has_value()) << t.error().message();
  auto reqs = fake_->requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_THAT(reqs[0].body, HasSubstr("client_assertion=" + fake_->options().federated_token));
  EXPECT_THAT(reqs[0].body, HasSubstr("client_assertion_type=urn%3Aietf"));

  // A stale projected token is refused; the error does not repeat the assertion.
  std::ofstream(file) << "stale-assertion-xyz";
  (*src)->Invalidate();
  auto bad = (*src)->Token();
  ASSERT_FALSE(bad.has_value());
  EXPECT_THAT(bad.error().message(), HasSubstr("AADSTS700213"));
  EXPECT_THAT(bad.error().message(), Not(HasSubstr("stale-assertion-xyz")));
}

TEST_F(AzureAuthTest, ManagedIdentityAsksImdsWithTheMetadataHeader) {
  AuthConfig a;
  a.type = AuthType::kManagedIdentity;
  a.imds_endpoint = fake_->imds_endpoint();
  a.client_id = "user-assigned-id";
  auto src = cloud::azure::MakeTokenSource(a, &http_, &clock_, Env());
  ASSERT_TRUE(src.has_value()) << src.error().message();
  auto t = (*src)->Token();
  ASSERT_TRUE(t.has_value()) << t.error().message();
  EXPECT_THAT(*t, HasSubstr("fake-mi-token"));
  ASSERT_TRUE((*src)->Token().has_value());
  EXPECT_EQ(fake_->token_requests(), 1);
  auto reqs = fake_->requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].headers["Metadata"], "true");
  EXPECT_THAT(reqs[0].query, HasSubstr("resource=https%3A%2F%2Fmanagement.azure.com%2F"));
  EXPECT_THAT(reqs[0].query, HasSubstr("client_id=user-assigned-id"));
  // expires_on / expires_in as strings: cached for the hour, refreshed after 55 minutes.
  clock_.Advance(std::chrono::minutes(56));
  ASSERT_TRUE((*src)->Token().has_value());
  EXPECT_EQ(fake_->token_requests(), 2);
}

TEST_F(AzureAuthTest, ExpiredTokenRejectedByArmIsReplacedOnce) {
  fake_->AddScaleSet({.name = "vmss-cpu", .capacity = 1});
  auto p = Make(VmssConfig({MakePool("cpu", 5)}, {{"scaleSets.cpu", "vmss-cpu"}}));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(RefreshOne(*p, "cpu").target, 1);
  EXPECT_EQ(fake_->token_requests(), 1);
  fake_->ExpireAllTokens();  // e.g. revoked or the clocks disagree
  EXPECT_EQ(RefreshOne(*p, "cpu").target, 1);
  EXPECT_EQ(fake_->token_requests(), 2);
}

TEST_F(AzureAuthTest, SecretsNeverAppearInErrorsLogsOrUrls) {
  const std::string secret = "wrong-secret-0123456789";
  env_["AZURE_CLIENT_SECRET"] = secret;
  std::ostringstream logs;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(logs);
  auto logger = std::make_shared<spdlog::logger>("azure-test", sink);
  logger->set_level(spdlog::level::trace);
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::trace);

  fake_->AddScaleSet({.name = "vmss-cpu", .capacity = 1});
  auto p = Make(VmssConfig({MakePool("cpu", 5)}, {{"scaleSets.cpu", "vmss-cpu"}}));
  ASSERT_NE(p, nullptr);
  auto r = p->Refresh(clock_.Now());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Error::Code::kPermissionDenied);
  EXPECT_THAT(r.error().message(), HasSubstr("invalid_client"));
  EXPECT_THAT(r.error().message(), Not(HasSubstr(secret)));
  auto inc = p->IncreaseSize("cpu", 1, clock_.Now());
  ASSERT_FALSE(inc.has_value());
  EXPECT_THAT(inc.error().message(), Not(HasSubstr(secret)));

  spdlog::set_default_logger(previous);
  EXPECT_THAT(logs.str(), Not(HasSubstr(secret)));
  for (const auto& req : fake_->requests()) {
    EXPECT_THAT(req.path + "?" + req.query, Not(HasSubstr(secret)));
  }

  // An inline secret in the config is refused without echoing it.
  auto config = VmssConfig({MakePool("cpu", 5)},
                           {{"scaleSets.cpu", "vmss-cpu"}, {"auth.clientSecret", secret}});
  auto bad = cloud::azure::NewAzureProvider(config, ProviderOptions());
  ASSERT_FALSE(bad.has_value());
  EXPECT_THAT(bad.error().message(), HasSubstr("provider.auth.clientSecret"));
  EXPECT_THAT(bad.error().message(), Not(HasSubstr(secret)));
}

TEST_F(AzureAuthTest, CredentialsGoOnlyToHttpsOrLoopback) {
  auto c1 = VmssConfig({MakePool("cpu", 5)},
                       {{"scaleSets.cpu", "x"}, {"armEndpoint", "http://management.example.com"}});
  auto r1 = cloud::azure::NewAzureProvider(c1, ProviderOptions());
  ASSERT_FALSE(r1.has_value());
  EXPECT_THAT(r1.error().message(), HasSubstr("provider.armEndpoint"));
  EXPECT_THAT(r1.error().message(), HasSubstr("plain http"));

  auto c2 = VmssConfig({MakePool("cpu", 5)},
                       {{"scaleSets.cpu", "x"}, {"authorityHost", "http://10.1.2.3"}});
  auto r2 = cloud::azure::NewAzureProvider(c2, ProviderOptions());
  ASSERT_FALSE(r2.has_value());
  EXPECT_THAT(r2.error().message(), HasSubstr("provider.authorityHost"));

  // A nextLink or operation URL on another host never receives the token.
  AuthConfig a = SecretConfig();
  auto src = cloud::azure::MakeTokenSource(a, &http_, &clock_, Env());
  ASSERT_TRUE(src.has_value());
  cloud::azure::ArmClient arm(&http_, src->get(), &clock_, nullptr,
                              {.endpoint = fake_->endpoint()});
  auto r = arm.Get("https://attacker.example.com/subscriptions/x", "2025-04-01");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Error::Code::kPermissionDenied);
  EXPECT_EQ(arm.requests_sent(), 0);
}

TEST(AzureSettingsTest, ErrorsNameTheKeyAndWhatWasExpected) {
  auto env = [](std::string_view) -> std::optional<std::string> { return std::nullopt; };
  std::vector<model::Pool> pools = {MakePool("cpu", 3)};
  model::ProviderConfig pc;
  pc.type = "azure-vmss";
  pc.settings = {{"resourceGroup", "rg"}, {"auth.type", "managedIdentity"}};
  auto r = cloud::azure::ParseAzureSettings(pc, pools, env);
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message(), HasSubstr("provider.subscriptionId: required for azure-vmss"));

  pc.settings = {{"subscriptionId", "s"},
                 {"resourceGroup", "rg"},
                 {"auth.type", "managedIdentity"},
                 {"scaleSet.cpu", "x"}};
  r = cloud::azure::ParseAzureSettings(pc, pools, env);
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message(), HasSubstr("provider.scaleSet.cpu: unknown setting"));
  EXPECT_THAT(r.error().message(), HasSubstr("scaleSets.<pool>"));

  pc.settings = {{"subscriptionId", "s"},
                 {"resourceGroup", "rg"},
                 {"auth.type", "managedIdentity"},
                 {"scaleSets.gpu", "x"}};
  r = cloud::azure::ParseAzureSettings(pc, pools, env);
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message(), HasSubstr("no pool named \"gpu\""));

  pc.settings = {
      {"subscriptionId", "s"}, {"resourceGroup", "rg"}, {"auth.type", "managedIdentity"}};
  r = cloud::azure::ParseAzureSettings(pc, pools, env);
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message(), HasSubstr("provider.scaleSets.cpu: required"));

  pc.settings["discovery.clusterName"] = "c1";
  r = cloud::azure::ParseAzureSettings(pc, pools, env);
  EXPECT_TRUE(r.has_value()) << r.error().message();

  pc.settings["auth.type"] = "password";
  r = cloud::azure::ParseAzureSettings(pc, pools, env);
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message(), HasSubstr("provider.auth.type: \"password\""));

  pc.type = "aks";
  pc.settings = {
      {"subscriptionId", "s"}, {"resourceGroup", "rg"}, {"auth.type", "managedIdentity"}};
  r = cloud::azure::ParseAzureSettings(pc, pools, env);
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message(), HasSubstr("provider.clusterName: required for aks"));

  pc.settings = {{"subscriptionId", "s"},
                 {"resourceGroup", "rg"},
                 {"auth.type", "clientSecret"},
                 {"clusterName", "c"},
                 {"auth.clientId", "id"}};
  r = cloud::azure::ParseAzureSettings(pc, pools, env);
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message(), HasSubstr("provider.auth.tenantId: required"));

  pc.settings = {{"subscriptionId", "s"},
                 {"resourceGroup", "rg"},
                 {"auth.type", "managedIdentity"},
                 {"clusterName", "c"},
                 {"stockoutHold", "soon"}};
  r = cloud::azure::ParseAzureSettings(pc, pools, env);
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message(), HasSubstr("provider.stockoutHold: \"soon\""));
}

}  // namespace
}  // namespace tidepool::testing::azure
